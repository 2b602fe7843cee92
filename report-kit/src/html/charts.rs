//! Charts any report can draw, each into an inline SVG string: an empirical CDF on a log axis,
//! a strip of dots per row with marks, horizontal rate bars against a threshold, and a bar with a
//! whisker per row on a log axis. Pixel coordinates are integers and labels use fixed formats,
//! so output is deterministic. What the rows mean (providers, families) is the caller's.

use super::plot::{
    INK, Rgb, Ticked, drawn_indices, err, house_style, log_ticks, ms_tick, row_label, row_y,
    rows_axis, svg,
};
use crate::format::pct;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One empirical CDF chart of milliseconds (log x) with a line per series; `series` holds sorted
/// positive values (see [`super::plot::sorted`]).
pub fn cdf_chart(title: &str, series: &[(Rgb, Vec<f64>)]) -> String {
    let all: Vec<f64> = series.iter().flat_map(|(_, v)| v.iter().copied()).collect();
    let (Some(min), Some(max)) = (
        all.iter().copied().min_by(f64::total_cmp),
        all.iter().copied().max_by(f64::total_cmp),
    ) else {
        return "<p class=\"empty\">No completed requests.</p>\n".to_string();
    };
    let lo = (min / 1.25).max(0.01);
    let hi = (max * 1.25).max(lo * 10.0);
    svg((600, 400), title, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin_top(12)
            .margin_right(22)
            .margin_left(8)
            .x_label_area_size(46)
            .y_label_area_size(58)
            .build_cartesian_2d(
                (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
                Ticked {
                    lo: 0.0,
                    hi: 1.0,
                    ticks: vec![0.0, 0.25, 0.5, 0.75, 0.9, 0.99],
                },
            )
            .map_err(err)?;
        house_style(&mut chart.configure_mesh(), 15)
            .x_desc(format!("{title}, ms (log scale)"))
            .y_desc("share of completed requests ≤ x")
            .x_label_formatter(&|v| ms_tick(*v))
            .y_label_formatter(&|v| format!("{:.0}%", v * 100.0))
            .draw()
            .map_err(err)?;
        for (color, values) in series {
            let n = values.len() as f64;
            let points: Vec<(f64, f64)> = drawn_indices(values.len())
                .flat_map(|i| [(values[i], i as f64 / n), (values[i], (i + 1) as f64 / n)])
                .collect();
            chart
                .draw_series(LineSeries::new(points, color.plot().stroke_width(2)))
                .map_err(err)?;
        }
        Ok(())
    })
}

/// Deterministic jitter in [−0.5, 0.5) for the k-th point (golden-ratio sequence).
fn jitter(k: usize) -> f64 {
    ((k as f64 + 1.0) * 0.618_033_988_749_895).fract() - 0.5
}

/// A vertical mark across one strip row (a median, a floor).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StripMark {
    /// Where, on the x axis.
    pub at: f64,
    /// Line colour.
    pub color: RGBColor,
    /// Line width, px.
    pub width: u32,
}

/// One row of a strip chart.
#[derive(Debug, Clone, PartialEq)]
pub struct StripRow {
    /// Row label.
    pub name: String,
    /// Dot colour.
    pub color: Rgb,
    /// Sorted positive values, one dot each (thinned past [`super::plot::MAX_SERIES_POINTS`]).
    pub values: Vec<f64>,
    /// Marks drawn over the dots, in order.
    pub marks: Vec<StripMark>,
}

/// A 1,200-px-wide strip chart on a log x axis: one row per [`StripRow`], its values as jittered
/// dots, its marks as vertical lines. `None` when no row has a value.
pub fn strip_chart(label: &str, x_desc: &str, rows: &[StripRow]) -> Option<String> {
    let all = || rows.iter().flat_map(|r| r.values.iter().copied());
    let (Some(min), Some(max)) = (all().min_by(f64::total_cmp), all().max_by(f64::total_cmp))
    else {
        return None;
    };
    // Log scale: one absurd (but correctly computed) value would squash every row to the left
    // on a linear axis.
    let lo = (min / 1.25).max(0.01);
    let hi = (max * 1.25).max(lo * 10.0);
    let n = rows.len();
    let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
    let height = 70 + 38 * n as u32;
    Some(svg((1200, height), label, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin_top(10)
            .margin_right(24)
            .x_label_area_size(46)
            .y_label_area_size(170)
            .build_cartesian_2d(
                (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
                rows_axis(n),
            )
            .map_err(err)?;
        house_style(&mut chart.configure_mesh(), 15)
            .x_desc(x_desc)
            .x_label_formatter(&|v| ms_tick(*v))
            .y_label_formatter(&|v| row_label(&names, *v))
            .draw()
            .map_err(err)?;
        for (i, row) in rows.iter().enumerate() {
            let y = row_y(i, n);
            let fill = row.color.plot().mix(0.45).filled();
            let values = &row.values;
            chart
                .draw_series(
                    drawn_indices(values.len())
                        .enumerate()
                        .map(|(k, i)| Circle::new((values[i], y + jitter(k) * 0.56), 2, fill)),
                )
                .map_err(err)?;
            for mark in &row.marks {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(mark.at, y - 0.42), (mark.at, y + 0.42)],
                        mark.color.stroke_width(mark.width),
                    )))
                    .map_err(err)?;
            }
        }
        Ok(())
    }))
}

/// One horizontal bar chart of rates in [0, 1] (a bar per row, in percent up to `x_max`) with a
/// dashed `threshold` line and each bar's value as a label.
pub fn bar_chart(
    label: &str,
    names: &[String],
    values: &[Option<f64>],
    x_max: f64,
    threshold: f64,
    color: RGBColor,
) -> String {
    let n = names.len();
    let height = 60 + 34 * n as u32;
    svg((600, height), label, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin_top(10)
            .margin_right(26)
            .x_label_area_size(42)
            .y_label_area_size(150)
            .build_cartesian_2d(0f64..x_max, rows_axis(n))
            .map_err(err)?;
        house_style(&mut chart.configure_mesh(), 15)
            .x_desc(label)
            .x_labels(6)
            .x_label_formatter(&|v| format!("{v:.0}%"))
            .y_label_formatter(&|v| row_label(names, *v))
            .draw()
            .map_err(err)?;
        for (i, v) in values.iter().enumerate() {
            let y = row_y(i, n);
            let Some(v) = v else { continue };
            let x = (v * 100.0).min(x_max);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y - 0.32), (x, y + 0.32)],
                    color.mix(0.85).filled(),
                )))
                .map_err(err)?;
            let text = pct(Some(*v));
            // Long bars carry their label inside, at the start, clear of the threshold line.
            let inside = x > x_max * 0.5;
            let ink = if inside { &WHITE } else { &INK };
            let style = (super::plot::FONT, 14)
                .into_font()
                .color(ink)
                .pos(Pos::new(HPos::Left, VPos::Center));
            let at = if inside {
                x_max * 0.02
            } else {
                x + x_max * 0.01
            };
            chart
                .draw_series(std::iter::once(Text::new(text, (at, y), style)))
                .map_err(err)?;
        }
        chart
            .draw_series(std::iter::once(DashedPathElement::new(
                vec![
                    (threshold * 100.0, -0.6),
                    (threshold * 100.0, n as f64 - 0.4),
                ],
                6,
                4,
                INK.stroke_width(1),
            )))
            .map_err(err)?;
        Ok(())
    })
}

/// One row of a [`bar_whisker_chart`]: label, colour, bar end and whisker end.
pub type BarWhiskerRow = (String, Rgb, Option<f64>, Option<f64>);

/// A small chart (log x over [`lo`, `hi`]) with per row a bar to its first value and a whisker
/// on to its second (a p50 bar, a p99 whisker); `x_desc` says so under the axis.
pub fn bar_whisker_chart(
    label: &str,
    x_desc: &str,
    rows: &[BarWhiskerRow],
    lo: f64,
    hi: f64,
) -> String {
    let n = rows.len();
    let names: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    svg((400, 56 + 30 * n as u32), label, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin_top(8)
            .margin_right(16)
            .x_label_area_size(42)
            .y_label_area_size(118)
            .build_cartesian_2d(
                (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
                rows_axis(n),
            )
            .map_err(err)?;
        house_style(&mut chart.configure_mesh(), 16)
            .x_desc(x_desc)
            .x_label_formatter(&|v| ms_tick(*v))
            .y_label_formatter(&|v| row_label(&names, *v))
            .draw()
            .map_err(err)?;
        for (i, (_, color, bar, whisker)) in rows.iter().enumerate() {
            let y = row_y(i, n);
            if let Some(bar) = bar {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(lo, y - 0.3), (*bar, y + 0.3)],
                        color.plot().mix(0.85).filled(),
                    )))
                    .map_err(err)?;
                if let Some(whisker) = whisker {
                    chart
                        .draw_series([
                            PathElement::new(vec![(*bar, y), (*whisker, y)], INK.stroke_width(2)),
                            PathElement::new(
                                vec![(*whisker, y - 0.22), (*whisker, y + 0.22)],
                                INK.stroke_width(2),
                            ),
                        ])
                        .map_err(err)?;
                }
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::plot::FAILURE;

    fn row(values: Vec<f64>, marks: Vec<StripMark>) -> StripRow {
        StripRow {
            name: "acme".into(),
            color: Rgb(1, 2, 3),
            values,
            marks,
        }
    }

    #[test]
    fn a_strip_chart_draws_a_dot_per_value_and_its_marks() {
        assert_eq!(strip_chart("l", "x", &[row(Vec::new(), Vec::new())]), None);
        let mark = |at, color, width| StripMark { at, color, width };
        let svg = strip_chart(
            "rates",
            "x",
            &[row(
                vec![10.0, 20.0, 40.0],
                vec![mark(20.0, INK, 4), mark(10.0, FAILURE, 3)],
            )],
        )
        .unwrap();
        assert_eq!(svg.matches("<circle").count(), 3);
        let p50 = svg.find("stroke=\"#1B1F24\" stroke-width=\"4\"").unwrap();
        let floor = svg.find("stroke=\"#C62828\" stroke-width=\"3\"").unwrap();
        assert!(p50 < floor, "marks are drawn in order");
    }

    #[test]
    fn a_cdf_without_values_says_so() {
        assert_eq!(
            cdf_chart("E2E", &[]),
            "<p class=\"empty\">No completed requests.</p>\n"
        );
        let svg = cdf_chart("E2E", &[(Rgb(1, 2, 3), vec![100.0, 200.0])]);
        assert!(svg.contains("E2E, ms (log scale)"));
        assert_eq!(
            svg.matches("stroke=\"#010203\" stroke-width=\"2\"").count(),
            1
        );
    }
}
