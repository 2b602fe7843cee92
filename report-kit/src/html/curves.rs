//! Curves of a quantity against load: one line per series on a linear x axis (achieved load) and
//! a log y axis (milliseconds), dashed when asked, with ringed points (a saturation point, say).
//! Deterministic like every chart here.

use super::plot::{INK, Rgb, Ticked, err, house_style, log_ticks, ms_tick, svg};
use crate::format::grouped;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// One line of a [`curve_chart`].
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// Line colour.
    pub color: Rgb,
    /// Dashed (a p99 beside a solid p50).
    pub dashed: bool,
    /// (x, y) points in drawing order; points with y ≤ 0 or non-finite are skipped.
    pub points: Vec<(f64, f64)>,
    /// Points ringed in ink over the line (a saturation point).
    pub marked: Vec<(f64, f64)>,
}

/// Five or six round ticks from 0 to at least `max` (steps of 1, 2 or 5 × 10ⁿ).
pub fn linear_ticks(max: f64) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    let count = (max / step).ceil() as usize;
    (0..=count).map(|i| i as f64 * step).collect()
}

/// A 600×400 chart of `curves`: x from 0 to the largest x (round ticks), y on a log scale over
/// every y. A chart without a drawable point is a short note instead.
pub fn curve_chart(label: &str, x_desc: &str, y_desc: &str, curves: &[Curve]) -> String {
    let ok = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite() && p.1 > 0.0;
    let points = || curves.iter().flat_map(|c| c.points.iter().filter(ok));
    let (Some(y_min), Some(y_max), Some(x_max)) = (
        points().map(|p| p.1).min_by(f64::total_cmp),
        points().map(|p| p.1).max_by(f64::total_cmp),
        points().map(|p| p.0).max_by(f64::total_cmp),
    ) else {
        return "<p class=\"empty\">No completed requests.</p>\n".to_string();
    };
    let lo = (y_min / 1.5).max(0.01);
    let hi = (y_max * 1.5).max(lo * 10.0);
    let ticks = linear_ticks(x_max);
    let x_hi = ticks.last().copied().unwrap_or(1.0);
    svg((600, 400), label, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin_top(12)
            .margin_right(22)
            .margin_left(8)
            .x_label_area_size(46)
            .y_label_area_size(62)
            .build_cartesian_2d(
                Ticked {
                    lo: 0.0,
                    hi: x_hi,
                    ticks,
                },
                (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
            )
            .map_err(err)?;
        house_style(&mut chart.configure_mesh(), 15)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|v| grouped(*v, if x_hi < 5.0 { 1 } else { 0 }))
            .y_label_formatter(&|v| ms_tick(*v))
            .draw()
            .map_err(err)?;
        for curve in curves {
            let line: Vec<(f64, f64)> = curve.points.iter().filter(ok).copied().collect();
            let style = curve.color.plot().stroke_width(2);
            if curve.dashed {
                chart
                    .draw_series(std::iter::once(DashedPathElement::new(
                        line.clone(),
                        7,
                        5,
                        style,
                    )))
                    .map_err(err)?;
            } else {
                chart
                    .draw_series(LineSeries::new(line.clone(), style))
                    .map_err(err)?;
            }
            let fill = curve.color.plot().filled();
            chart
                .draw_series(line.iter().map(|p| Circle::new(*p, 3, fill)))
                .map_err(err)?;
            chart
                .draw_series(
                    curve
                        .marked
                        .iter()
                        .filter(|p| ok(p))
                        .map(|p| Circle::new(*p, 8, INK.stroke_width(2))),
                )
                .map_err(err)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_maximum() {
        assert_eq!(linear_ticks(10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(linear_ticks(7.0), vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(
            linear_ticks(0.0),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
    }

    #[test]
    fn a_curve_draws_its_points_and_rings_its_marks() {
        let curve = Curve {
            color: Rgb(1, 2, 3),
            dashed: false,
            points: vec![(1.0, 100.0), (2.0, 150.0), (4.0, 900.0)],
            marked: vec![(2.0, 150.0)],
        };
        let svg = curve_chart("TTFA", "achieved requests/s", "ms", &[curve]);
        assert_eq!(svg.matches("<circle").count(), 4);
        assert!(svg.contains("stroke=\"#1B1F24\" stroke-width=\"2\""));
        assert!(svg.contains("achieved requests/s"));
        assert_eq!(
            curve_chart("TTFA", "x", "ms", &[]),
            "<p class=\"empty\">No completed requests.</p>\n"
        );
    }
}
