//! `report.html`: a self-contained page (the report kit's shell and charts) with latency against
//! achieved load per lane (TTFA and ITL, p50 solid and p99 dashed, the saturation point ringed),
//! the ITL distribution per step, goodput per step, and failures by step.

use super::compute::{LoadMetrics, Row, StepView};
use super::markdown::{
    FAILURE_CLASSES, class_name, itl_bucket_labels, load_text, rate, rows, slo_text,
};
use crate::metrics::Distribution;
use openbench_report_kit::format::pct;
use openbench_report_kit::html::charts::{bar_chart, bar_whisker_chart};
use openbench_report_kit::html::curves::{Curve, curve_chart};
use openbench_report_kit::html::plot::{Rgb, SUCCESS, color};
use openbench_report_kit::html::{escape, legend, page_end, page_start};
use std::fmt::Write;

/// Renders `report.html`.
pub fn render(m: &LoadMetrics) -> String {
    let mut out = String::new();
    let subtitle = format!(
        "{} step(s); SLO {}; sustained = achieved ≥ {} of target, goodput ≥ {} and held-length answers not mostly short",
        m.steps.len(),
        slo_text(m).unwrap_or_else(|| "none".to_string()),
        pct(Some(m.settings.sustain_fraction)),
        pct(Some(m.settings.goodput_threshold))
    );
    page_start(
        &mut out,
        &format!("Load report: {}", m.run_id),
        &subtitle,
        "",
    );
    if !m.notes.is_empty() {
        out.push_str("<section><h2>Notes</h2><ul>");
        for note in &m.notes {
            let _ = write!(out, "<li>{}</li>", escape(note));
        }
        out.push_str("</ul></section>\n");
    }
    curves_section(&mut out, m);
    itl_section(&mut out, m);
    goodput_section(&mut out, m);
    failures_section(&mut out, m);
    page_end(&mut out);
    out
}

/// Lane names in the order they first appear (each step lists its lanes in base order).
fn lane_names(m: &LoadMetrics) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for step in &m.steps {
        for row in &step.lanes {
            if !names.contains(&row.name) {
                names.push(row.name.clone());
            }
        }
    }
    names
}

/// (x, y) points of a curve.
type Points = Vec<(f64, f64)>;

/// A lane's (achieved rate, value) points over its closed-loop (or open-loop) steps, ordered by achieved rate then step, and the points of
/// its saturation steps.
fn lane_points(
    m: &LoadMetrics,
    lane: &str,
    closed: bool,
    value: impl Fn(&Row) -> Option<f64>,
) -> (Points, Points) {
    let saturation = m.saturation.iter().find(|s| s.name == lane);
    let is_point = |step: &StepView| {
        saturation.is_some_and(|s| {
            [&s.closed, &s.open]
                .iter()
                .any(|p| p.as_ref().is_some_and(|p| p.step == step.index))
        })
    };
    let mut points: Vec<(f64, usize, f64, bool)> = m
        .steps
        .iter()
        .filter(|s| (s.model == "closed") == closed)
        .filter_map(|s| {
            let row = s.lanes.iter().find(|r| r.name == lane)?;
            Some((
                row.metrics.rate.achieved_per_s,
                s.index,
                value(row)?,
                is_point(s),
            ))
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let marked = points.iter().filter(|p| p.3).map(|p| (p.0, p.2)).collect();
    (points.iter().map(|p| (p.0, p.2)).collect(), marked)
}

fn curves_for(
    m: &LoadMetrics,
    names: &[String],
    dist: impl Fn(&Row) -> &Distribution,
) -> Vec<Curve> {
    let mut curves = Vec::new();
    let kinds = names
        .iter()
        .enumerate()
        .flat_map(|l| [(l, false), (l, true)]);
    for ((i, lane), closed) in kinds {
        let (p50, marked) = lane_points(m, lane, closed, |r| dist(r).p50);
        let (p99, _) = lane_points(m, lane, closed, |r| dist(r).p99);
        curves.push(Curve {
            color: color(i),
            dashed: false,
            points: p50,
            marked,
        });
        curves.push(Curve {
            color: color(i),
            dashed: true,
            points: p99,
            marked: Vec::new(),
        });
    }
    curves
}

fn curves_section(out: &mut String, m: &LoadMetrics) {
    let names = lane_names(m);
    out.push_str("<section><h2>Latency against achieved load</h2>\n");
    out.push_str(
        "<p class=\"note\">One point per step: x is the lane's achieved rate (measured requests \
         sent in the window ÷ its length), y the step's p50 (solid) and p99 (dashed), log scale. \
         Open-loop and closed-loop steps are separate lines. A ringed point is a saturation \
         point: the lane's sustained step with the highest load.</p>\n",
    );
    out.push_str(&legend(
        names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), color(i))),
    ));
    out.push_str("<div class=\"grid two\">\n");
    for (title, curves) in [
        ("TTFA", curves_for(m, &names, |r| &r.metrics.ttfa_ms)),
        ("ITL", curves_for(m, &names, |r| &r.metrics.itl_ms)),
    ] {
        let _ = writeln!(
            out,
            "<figure><figcaption>{title} p50 and p99 against achieved load</figcaption>{}</figure>",
            curve_chart(
                &format!("{title} against achieved load"),
                "achieved requests/s",
                &format!("{title}, ms (log scale)"),
                &curves
            )
        );
    }
    out.push_str("</div></section>\n");
}

fn step_title(step: &StepView) -> String {
    escape(&format!("Step {}: {}", step.index, step.label))
}

fn itl_section(out: &mut String, m: &LoadMetrics) {
    out.push_str("<section><h2>Inter-token latency by step</h2>\n");
    out.push_str(
        "<p class=\"note\">Every gap between consecutive answer-bearing chunks of the step's \
         completed measured requests: bar to p50, whisker to p99 (ms, log scale); below, the gaps \
         per bucket.</p>\n",
    );
    if m.steps.is_empty() {
        out.push_str("<p class=\"empty\">No steps ran.</p>\n");
    }
    let names = lane_names(m);
    out.push_str("<div class=\"grid three\">\n");
    for step in &m.steps {
        let chart_rows: Vec<(String, Rgb, Option<f64>, Option<f64>)> = step
            .lanes
            .iter()
            .map(|r| {
                let i = names.iter().position(|n| *n == r.name).unwrap_or(0);
                (
                    r.name.clone(),
                    color(i),
                    r.metrics.itl_ms.p50,
                    r.metrics.itl_ms.p99,
                )
            })
            .collect();
        let values = chart_rows.iter().flat_map(|r| [r.2, r.3]).flatten();
        let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        let chart = if hi > 0.0 {
            let lo = (lo / 2.0).max(0.01);
            bar_whisker_chart(
                &format!("ITL of step {}", step.index),
                "ITL ms: bar p50, whisker p99",
                &chart_rows,
                lo,
                (hi * 2.0).max(lo * 10.0),
            )
        } else {
            "<p class=\"empty\">No inter-token gaps.</p>\n".to_string()
        };
        let _ = writeln!(
            out,
            "<figure><figcaption>{}</figcaption>{chart}</figure>",
            step_title(step)
        );
    }
    out.push_str("</div>\n<div class=\"scroll\"><table class=\"compact\"><thead><tr><th>Step</th><th>Lane</th><th>Gaps</th>");
    for label in itl_bucket_labels() {
        let _ = write!(out, "<th>{} ms</th>", escape(&label));
    }
    out.push_str("</tr></thead><tbody>\n");
    for step in &m.steps {
        for row in rows(step) {
            let _ = write!(
                out,
                "<tr><th>{}</th><th>{}</th><td>{}</td>",
                step_title(step),
                escape(&row.name),
                row.metrics.itl_ms.count
            );
            for count in &row.itl_histogram {
                let _ = write!(out, "<td>{count}</td>");
            }
            out.push_str("</tr>\n");
        }
    }
    out.push_str("</tbody></table></div>\n</section>\n");
}

fn goodput_section(out: &mut String, m: &LoadMetrics) {
    out.push_str("<section><h2>Goodput per step</h2>\n");
    out.push_str(
        "<p class=\"note\">Share of measured requests that completed within every SLO bound \
         (failures count against it); the dashed line is the goodput threshold of a sustained \
         step.</p>\n<div class=\"grid two\">\n",
    );
    for step in &m.steps {
        let rows: Vec<&Row> = rows(step).collect();
        let names: Vec<String> = rows
            .iter()
            .map(|r| format!("{} ({})", r.name, load_text(step, r)))
            .collect();
        let values: Vec<Option<f64>> = rows
            .iter()
            .map(|r| Some(r.metrics.goodput.fraction))
            .collect();
        let _ = writeln!(
            out,
            "<figure><figcaption>{}</figcaption>{}</figure>",
            step_title(step),
            bar_chart(
                &format!("goodput of step {}, % of measured", step.index),
                &names,
                &values,
                100.0,
                m.settings.goodput_threshold,
                SUCCESS,
            )
        );
    }
    out.push_str("</div></section>\n");
}

fn failures_section(out: &mut String, m: &LoadMetrics) {
    out.push_str("<section><h2>Failures by step</h2>\n");
    out.push_str(
        "<div class=\"scroll\"><table class=\"compact\"><thead><tr><th>Step</th><th>Lane</th><th>Measured</th>\
         <th>Achieved/s</th>",
    );
    for class in FAILURE_CLASSES {
        let _ = write!(out, "<th>{}</th>", class_name(class));
    }
    out.push_str("<th>Retry-After p50 s</th><th>Goodput</th></tr></thead><tbody>\n");
    for step in &m.steps {
        for row in rows(step) {
            let x = &row.metrics;
            let _ = write!(
                out,
                "<tr><th>{}</th><th>{}</th><td>{}</td><td>{}</td>",
                step_title(step),
                escape(&row.name),
                x.measured,
                rate(Some(x.rate.achieved_per_s))
            );
            for class in FAILURE_CLASSES {
                let _ = write!(
                    out,
                    "<td>{}</td>",
                    x.failures.get(&class).copied().unwrap_or(0)
                );
            }
            let _ = writeln!(
                out,
                "<td>{}</td><td>{}</td></tr>",
                rate(row.retry_after.p50_s),
                pct(Some(x.goodput.fraction))
            );
        }
    }
    out.push_str("</tbody></table></div>\n");
    if let Some(note) = super::markdown::resumed_note(m) {
        let _ = writeln!(out, "<p>{}</p>", escape(&note));
    }
    out.push_str("</section>\n");
}
