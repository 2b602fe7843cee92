//! The page's charts, drawn with `plotters` into SVG strings and inlined: latency CDFs (log x),
//! the tokens/s strip, task success beside operational failures, and per-family latency bars.
//! Pixel coordinates are integers and labels use fixed formats, so output is deterministic.

use super::plot::{
    FAILURE, FONT, INK, MAX_SERIES_POINTS, Rgb, SUCCESS, Ticked, drawn_indices, err, house_style,
    log_ticks, ms_tick, row_label, row_y, rows_axis, short, sorted, svg,
};
use super::{HtmlReportInput, ProviderReport, escape};
use crate::report::format::{one, pct};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write;
/// One empirical CDF chart (log x) with a line per provider.
fn cdf_chart(title: &str, series: &[(Rgb, Vec<f64>)]) -> String {
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

/// Section: TTFA and E2E CDFs side by side.
pub(super) fn latency_section(
    out: &mut String,
    providers: &[&ProviderReport],
    palette: &[Rgb],
    legend: &str,
) {
    out.push_str("<section id=\"latency\">\n<h2>Latency distribution</h2>\n");
    out.push_str(
        "<p class=\"note\">Empirical CDFs of completed requests: the curve's height at x is the \
         share of requests that finished within x ms. Further left is faster; a long right tail \
         is the p99 story. Failed requests are not in these populations.</p>\n",
    );
    out.push_str(legend);
    out.push_str("<div class=\"grid two\">\n");
    for (title, pick) in [
        (
            "TTFA",
            (|s: &super::Sample| s.ttfa_ms) as fn(&super::Sample) -> Option<f64>,
        ),
        ("E2E", |s: &super::Sample| s.e2e_ms),
    ] {
        let series: Vec<(Rgb, Vec<f64>)> = providers
            .iter()
            .zip(palette)
            .map(|(p, c)| (*c, sorted(p.samples.iter().filter_map(pick))))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        let _ = write!(
            out,
            "<figure><figcaption>{} latency CDF</figcaption>\n{}</figure>\n",
            title,
            cdf_chart(title, &series)
        );
    }
    out.push_str("</div>\n</section>\n");
}

/// Deterministic jitter in [−0.5, 0.5) for the k-th point (golden-ratio sequence).
fn jitter(k: usize) -> f64 {
    ((k as f64 + 1.0) * 0.618_033_988_749_895).fract() - 0.5
}

/// Section: tokens/s strip per provider, p50 and p95 floor marked.
pub(super) fn tokens_section(out: &mut String, providers: &[&ProviderReport], palette: &[Rgb]) {
    out.push_str("<section id=\"tokens\">\n<h2>Visible-answer tokens/s</h2>\n");
    out.push_str(
        "<p class=\"note\">One dot per eligible completed response. \
         <span class=\"mark p50\"></span> p50 (median) &nbsp; \
         <span class=\"mark floor\"></span> p95 floor: at least 95% of responses were at least \
         this fast. Further right is faster; the axis is logarithmic.</p>\n",
    );
    let rows: Vec<(String, Rgb, Vec<f64>, &ProviderReport)> = providers
        .iter()
        .zip(palette)
        .map(|(p, c)| {
            let v = sorted(p.samples.iter().filter_map(|s| s.tokens_per_second));
            (short(&p.display_name, 20), *c, v, *p)
        })
        .collect();
    let all = || rows.iter().flat_map(|r| r.2.iter().copied());
    let (Some(min), Some(max)) = (all().min_by(f64::total_cmp), all().max_by(f64::total_cmp))
    else {
        out.push_str("<p class=\"empty\">No tokens/s population.</p>\n</section>\n");
        return;
    };
    // Log scale: a response whose answer arrived in two reads microseconds apart has an absurd
    // (but correctly computed) rate; on a linear axis it would squash every provider to the left.
    let lo = (min / 1.25).max(0.01);
    let hi = (max * 1.25).max(lo * 10.0);
    let n = rows.len();
    let names: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    let height = 70 + 38 * n as u32;
    let chart = svg((1200, height), "tokens per second by provider", |root| {
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
            .x_desc("visible-answer tokens/s (log scale)")
            .x_label_formatter(&|v| ms_tick(*v))
            .y_label_formatter(&|v| row_label(&names, *v))
            .draw()
            .map_err(err)?;
        for (i, (_, color, values, p)) in rows.iter().enumerate() {
            let y = row_y(i, n);
            let fill = color.plot().mix(0.45).filled();
            chart
                .draw_series(
                    drawn_indices(values.len())
                        .enumerate()
                        .map(|(k, i)| Circle::new((values[i], y + jitter(k) * 0.56), 2, fill)),
                )
                .map_err(err)?;
            if let Some(p50) = p.pooled.tps_p50 {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(p50, y - 0.42), (p50, y + 0.42)],
                        INK.stroke_width(4),
                    )))
                    .map_err(err)?;
            }
            if let Some(floor) = p.pooled.tps_p95_floor {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(floor, y - 0.42), (floor, y + 0.42)],
                        FAILURE.stroke_width(3),
                    )))
                    .map_err(err)?;
            }
        }
        Ok(())
    });
    out.push_str(&chart);
    if rows.iter().any(|r| r.2.len() > MAX_SERIES_POINTS) {
        let _ = writeln!(
            out,
            "<p class=\"note\">A provider with more than {MAX_SERIES_POINTS} responses is drawn \
             as {MAX_SERIES_POINTS} evenly spaced order statistics of its rates (first and last \
             included); the CDFs above are thinned the same way.</p>"
        );
    }
    out.push_str("</section>\n");
}

/// One horizontal bar chart (a bar per provider) with a dashed threshold and value labels.
fn bar_chart(
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
            let style = (FONT, 14)
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

/// Section: task success beside operational failures.
pub(super) fn outcomes_section(
    out: &mut String,
    input: &HtmlReportInput,
    providers: &[&ProviderReport],
    _palette: &[Rgb],
) {
    out.push_str("<section id=\"outcomes\">\n<h2>Task success and operational failures</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">Task success = exactly correct answers / submitted requests. \
         Operational failures = timeouts, HTTP, transport and stream errors / submitted. Dashed \
         lines: the ranking thresholds ({} success, {} failures).</p>",
        pct(Some(input.min_task_success_rate)),
        pct(Some(input.max_failure_rate))
    );
    let names: Vec<String> = providers
        .iter()
        .map(|p| short(&p.display_name, 18))
        .collect();
    let success: Vec<Option<f64>> = providers
        .iter()
        .map(|p| p.pooled.task_success_rate)
        .collect();
    let failures: Vec<Option<f64>> = providers.iter().map(|p| p.pooled.failure_rate).collect();
    let worst = failures.iter().flatten().copied().fold(0.0f64, f64::max);
    let f_max = (worst * 100.0 * 1.3)
        .max(input.max_failure_rate * 100.0 * 2.0)
        .max(2.0);
    let _ = write!(
        out,
        "<div class=\"grid two\">\n<figure><figcaption>Task success</figcaption>\n{}</figure>\n\
         <figure><figcaption>Operational failures</figcaption>\n{}</figure>\n</div>\n",
        bar_chart(
            "task success, % of submitted",
            &names,
            &success,
            100.0,
            input.min_task_success_rate,
            SUCCESS
        ),
        bar_chart(
            "operational failures, % of submitted",
            &names,
            &failures,
            f_max,
            input.max_failure_rate,
            FAILURE
        )
    );
    out.push_str("</section>\n");
}

/// One family's chart: per provider a bar to E2E p50 and a whisker to p99 (log x).
fn family_chart(
    family: &str,
    rows: &[(String, Rgb, Option<f64>, Option<f64>)],
    lo: f64,
    hi: f64,
) -> String {
    let n = rows.len();
    let names: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    svg((400, 56 + 30 * n as u32), family, |root| {
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
            .x_desc("E2E ms: bar p50, whisker p99")
            .x_label_formatter(&|v| ms_tick(*v))
            .y_label_formatter(&|v| row_label(&names, *v))
            .draw()
            .map_err(err)?;
        for (i, (_, color, p50, p99)) in rows.iter().enumerate() {
            let y = row_y(i, n);
            if let Some(p50) = p50 {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(lo, y - 0.3), (*p50, y + 0.3)],
                        color.plot().mix(0.85).filled(),
                    )))
                    .map_err(err)?;
                if let Some(p99) = p99 {
                    chart
                        .draw_series([
                            PathElement::new(vec![(*p50, y), (*p99, y)], INK.stroke_width(2)),
                            PathElement::new(
                                vec![(*p99, y - 0.22), (*p99, y + 0.22)],
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

/// Section: one panel per family (chart plus a small table).
pub(super) fn family_section(
    out: &mut String,
    input: &HtmlReportInput,
    providers: &[&ProviderReport],
    palette: &[Rgb],
) {
    out.push_str("<section id=\"families\">\n<h2>Per task family</h2>\n");
    out.push_str(
        "<p class=\"note\">Per family: E2E latency p50 (bar) and p99 (whisker) on a log scale, \
         and task success. Same colours as above.</p>\n<div class=\"grid three\">\n",
    );
    let all: Vec<f64> = providers
        .iter()
        .flat_map(|p| p.families.iter())
        .flat_map(|f| [f.figures.e2e_p50, f.figures.e2e_p99])
        .flatten()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let lo = all.iter().copied().min_by(f64::total_cmp).map(|v| v / 1.5);
    let hi = all.iter().copied().max_by(f64::total_cmp).map(|v| v * 1.3);
    for family in &input.families {
        let _ = writeln!(out, "<div class=\"panel\"><h3>{}</h3>", escape(family));
        let figures = |p: &ProviderReport| {
            p.families
                .iter()
                .find(|f| &f.family == family)
                .map(|f| f.figures.clone())
                .unwrap_or_default()
        };
        if let (Some(lo), Some(hi)) = (lo, hi) {
            let rows: Vec<(String, Rgb, Option<f64>, Option<f64>)> = providers
                .iter()
                .zip(palette)
                .map(|(p, c)| {
                    let f = figures(p);
                    (short(&p.display_name, 13), *c, f.e2e_p50, f.e2e_p99)
                })
                .collect();
            out.push_str(&family_chart(family, &rows, lo, hi.max(lo * 10.0)));
        }
        out.push_str(
            "<table class=\"compact\"><thead><tr><th>Provider</th><th>E2E p50</th>\
             <th>E2E p99</th><th>Success</th></tr></thead><tbody>\n",
        );
        for p in providers {
            let f = figures(p);
            let _ = writeln!(
                out,
                "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&p.display_name),
                one(f.e2e_p50),
                one(f.e2e_p99),
                pct(f.task_success_rate)
            );
        }
        out.push_str("</tbody></table></div>\n");
    }
    out.push_str("</div>\n</section>\n");
}
