//! `report.html`: a self-contained page (the report kit's shell and charts) that carries every
//! table of `report.md` ([`super::tables`], the same cells), with charts beside them: requests/s
//! and output tokens/s against the offered load, TTFA, ITL and E2E p50 and p99 against the
//! offered load (saturation points ringed), the ITL of each step, goodput per step and, for an
//! agent step, each lane's time to first output per agent step index.
//!
//! The x axis of every curve is the offered load (an open loop's target rate, a closed loop's
//! users), which the spec sets and no two steps of a sweep share, so a line never turns back on
//! itself; the achieved rate is in the tables. Where two steps of one lane do share a load, the
//! page says the line joins them vertically.

use super::agents::AgentStepRow;
use super::compute::{LoadMetrics, Row, StepView};
use super::markdown::{load_text, rows, slo_text};
use super::tables::{Table, tables};
use crate::metrics::Distribution;
use openbench_report_kit::format::{one, pct};
use openbench_report_kit::html::charts::{bar_chart, bar_whisker_chart};
use openbench_report_kit::html::curves::{Curve, curve_chart};
use openbench_report_kit::html::plot::{Rgb, SUCCESS, color};
use openbench_report_kit::html::{escape, legend, page_end, page_start};
use std::fmt::Write;

/// Wide tables wrap their headers and tighten their cells, so none is clipped at 1,280 px.
const EXTRA_CSS: &str = "table.wide { width: 100%; }\n\
table.wide th, table.wide td { padding: 3px 5px; font-size: 12.5px; }\n\
table.wide thead th { white-space: normal; text-align: right; }\n\
table.wide thead th.name, table.wide tbody th { text-align: left; white-space: normal; }\n";

/// Renders `report.html`.
pub fn render(m: &LoadMetrics) -> String {
    let mut out = String::new();
    let subtitle = format!(
        "{} step(s); SLO {}; sustained = rate kept (achieved and throughput ≥ {} of target), goodput ≥ {} and held-length answers not mostly short",
        m.steps.len(),
        slo_text(m).unwrap_or_else(|| "none".to_string()),
        pct(Some(m.settings.sustain_fraction)),
        pct(Some(m.settings.goodput_threshold))
    );
    page_start(
        &mut out,
        &format!("Load report: {}", m.run_id),
        &subtitle,
        EXTRA_CSS,
    );
    if let Some(validity) = &m.validity {
        let _ = writeln!(
            out,
            "<section>{}</section>",
            openbench_common::validity::render::html(validity, escape)
        );
    }
    if !m.notes.is_empty() {
        out.push_str("<section><h2>Notes</h2><ul>");
        for note in &m.notes {
            let _ = write!(out, "<li>{}</li>", escape(note));
        }
        out.push_str("</ul></section>\n");
    }
    for table in tables(m) {
        let charts = match table.title.as_str() {
            "Goodput per step" => goodput_charts(m),
            t if t.starts_with("Inter-token latency") => itl_charts(m),
            "Agent steps" => agent_charts(m),
            _ => String::new(),
        };
        table_section(&mut out, &table, &charts);
        if table.title == "Summary" {
            against_load_sections(&mut out, m);
        }
    }
    out.push_str(
        "<p class=\"note\">Definitions: docs/load.md, \"Reports\". Percentiles are nearest rank; \
         latencies in ms.</p>\n",
    );
    page_end(&mut out);
    out
}

/// One table of the report as a section: heading, introduction, `charts`, the table (or its
/// empty text) and the lines after it.
fn table_section(out: &mut String, t: &Table, charts: &str) {
    let _ = writeln!(out, "<section><h2>{}</h2>", escape(&t.title));
    if let Some(intro) = &t.intro {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(intro));
    }
    out.push_str(charts);
    if t.rows.is_empty() {
        let _ = writeln!(out, "<p class=\"empty\">{}</p>", escape(t.empty));
    } else {
        out.push_str("<div class=\"scroll\"><table class=\"compact wide\"><thead><tr>");
        for (i, h) in t.headers.iter().enumerate() {
            let class = if i < t.names { " class=\"name\"" } else { "" };
            let _ = write!(out, "<th{class}>{}</th>", escape(h));
        }
        out.push_str("</tr></thead><tbody>\n");
        for row in &t.rows {
            out.push_str("<tr>");
            for (i, cell) in row.iter().enumerate() {
                let tag = if i < t.names { "th" } else { "td" };
                let _ = write!(out, "<{tag}>{}</{tag}>", escape(cell));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table></div>\n");
    }
    for line in &t.after {
        let _ = writeln!(out, "<p>{}</p>", escape(line));
    }
    out.push_str("</section>\n");
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

/// A lane's (offered load, value) points over its closed-loop (or open-loop) steps, ordered by
/// load then step, and the points of its saturation steps.
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
            Some((row.load, s.index, value(row)?, is_point(s)))
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let marked = points.iter().filter(|p| p.3).map(|p| (p.0, p.2)).collect();
    (points.iter().map(|p| (p.0, p.2)).collect(), marked)
}

/// A row's value on a curve (`None`: no point for that step).
type RowValue<'a> = &'a dyn Fn(&Row) -> Option<f64>;

/// Per lane, a solid line of `solid` and, when given, a dashed line of `dashed`.
fn curves_for(
    m: &LoadMetrics,
    names: &[String],
    closed: bool,
    solid: RowValue<'_>,
    dashed: Option<RowValue<'_>>,
) -> Vec<Curve> {
    let mut curves = Vec::new();
    for (i, lane) in names.iter().enumerate() {
        let (points, marked) = lane_points(m, lane, closed, solid);
        curves.push(Curve {
            color: color(i),
            dashed: false,
            points,
            marked,
        });
        if let Some(dashed) = dashed {
            curves.push(Curve {
                color: color(i),
                dashed: true,
                points: lane_points(m, lane, closed, dashed).0,
                marked: Vec::new(),
            });
        }
    }
    curves
}

/// Lanes with two steps of one kind at the same offered load (their line is vertical there).
fn shared_loads(m: &LoadMetrics, names: &[String], closed: bool) -> Vec<String> {
    names
        .iter()
        .filter_map(|lane| {
            let (points, _) = lane_points(m, lane, closed, |_| Some(1.0));
            let repeated = points.windows(2).any(|w| w[0].0 == w[1].0);
            repeated.then(|| lane.clone())
        })
        .collect()
}

/// A figure drawn against the offered load.
#[derive(Debug, Clone, Copy)]
enum Figure {
    /// Request throughput (solid) and goodput per second (dashed).
    Requests,
    /// Output token throughput.
    OutputTokens,
    /// TTFA p50 and p99.
    Ttfa,
    /// ITL p50 and p99.
    Itl,
    /// E2E p50 and p99.
    E2e,
}

impl Figure {
    /// Its name and its y axis.
    fn label(self) -> (&'static str, &'static str) {
        match self {
            Figure::Requests => ("Requests/s", "requests/s (log scale)"),
            Figure::OutputTokens => ("Output tokens/s", "tokens/s (log scale)"),
            Figure::Ttfa => ("TTFA", "TTFA, ms (log scale)"),
            Figure::Itl => ("ITL", "ITL, ms (log scale)"),
            Figure::E2e => ("E2E", "E2E, ms (log scale)"),
        }
    }

    /// Its curves per lane over the steps of one kind.
    fn curves(self, m: &LoadMetrics, names: &[String], closed: bool) -> Vec<Curve> {
        let percentiles = |d: fn(&Row) -> &Distribution| {
            curves_for(m, names, closed, &|r| d(r).p50, Some(&|r| d(r).p99))
        };
        match self {
            Figure::Requests => curves_for(
                m,
                names,
                closed,
                &|r| r.metrics.request_throughput_per_s,
                Some(&|r| r.metrics.goodput.per_s),
            ),
            Figure::OutputTokens => {
                curves_for(m, names, closed, &|r| r.metrics.output_tokens_per_s, None)
            }
            Figure::Ttfa => percentiles(|r| &r.metrics.ttfa_ms),
            Figure::Itl => percentiles(|r| &r.metrics.itl_ms),
            Figure::E2e => percentiles(|r| &r.metrics.e2e_ms),
        }
    }
}

/// The charts against offered load, one group per kind of load that ran: throughput first, then
/// latency.
fn against_load_sections(out: &mut String, m: &LoadMetrics) {
    let names = lane_names(m);
    let kinds: Vec<(bool, &str)> = [(false, "target requests/s"), (true, "users")]
        .into_iter()
        .filter(|(closed, _)| m.steps.iter().any(|s| (s.model == "closed") == *closed))
        .collect();
    let groups: [(&str, &str, &[Figure]); 2] = [
        (
            "Throughput against offered load",
            "Requests/s (solid; goodput/s dashed) and output tokens/s (o200k) of the requests that \
             completed inside each step's measured window, ÷ its length.",
            &[Figure::Requests, Figure::OutputTokens],
        ),
        (
            "Latency against offered load",
            "Each step's p50 (solid) and p99 (dashed), ms on a log scale. A ringed point is a \
             saturation point: the lane's sustained step with the highest load.",
            &[Figure::Ttfa, Figure::Itl, Figure::E2e],
        ),
    ];
    for (title, note, figures) in groups {
        let _ = writeln!(out, "<section><h2>{title}</h2>");
        let _ = writeln!(
            out,
            "<p class=\"note\">{note} The x axis is the offered load: an open loop's target \
             rate, a closed loop's users.</p>"
        );
        out.push_str(&legend(
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.as_str(), color(i))),
        ));
        if kinds.is_empty() {
            out.push_str("<p class=\"empty\">No steps ran.</p>\n");
        }
        for (closed, x_desc) in &kinds {
            let kind = if *closed { "Closed loop" } else { "Open loop" };
            let shared = shared_loads(m, &names, *closed);
            if !shared.is_empty() {
                let _ = writeln!(
                    out,
                    "<p class=\"note\">{kind}: {} ran two steps at one load; the line joins them \
                     vertically there.</p>",
                    escape(&shared.join(", "))
                );
            }
            out.push_str("<div class=\"grid two\">\n");
            for figure in figures {
                let (what, y_desc) = figure.label();
                let caption = format!("{kind}: {what} against {x_desc}");
                let chart =
                    curve_chart(&caption, x_desc, y_desc, &figure.curves(m, &names, *closed));
                let _ = writeln!(
                    out,
                    "<figure><figcaption>{caption}</figcaption>{chart}</figure>"
                );
            }
            out.push_str("</div>\n");
        }
        out.push_str("</section>\n");
    }
}

fn step_title(step: &StepView) -> String {
    let repeat = step
        .repeat
        .map(|r| format!(" · repeat {}/{}", r.repeat + 1, r.of))
        .unwrap_or_default();
    escape(&format!("Step {}: {}{repeat}", step.index, step.label))
}

/// Per step, the ITL p50 bar and p99 whisker of each lane.
fn itl_charts(m: &LoadMetrics) -> String {
    let mut out = String::from(
        "<p class=\"note\">Per-token ITL of the step's completed measured requests: bar to \
         p50, whisker to p99 (ms, log scale).</p>\n<div class=\"grid three\">\n",
    );
    let names = lane_names(m);
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
    out.push_str("</div>\n");
    out
}

/// Per step, the goodput bar of each row against the threshold.
fn goodput_charts(m: &LoadMetrics) -> String {
    let mut out = String::from(
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
    out.push_str("</div>\n");
    out
}

/// One quantile of an agent step row (its p50 or p99 first output).
type Quantile = fn(&AgentStepRow) -> Option<f64>;

/// Per agent step, each lane's time to first output (answer text or tool-call token) against the
/// agent step index: p50 solid, p99 dashed, the numbers of the "Agent steps" table's lane rows.
/// Each figure also carries them in `data-points` (`lane|index|p50|p99;…`, printed as the table
/// prints them), so what is drawn can be checked against the table.
fn agent_charts(m: &LoadMetrics) -> String {
    let names = lane_names(m);
    let mut out = String::from(
        "<p class=\"note\">Time to first output (answer text or tool-call token) of each model \
         call by its index in the run: p50 solid, p99 dashed (ms, log scale).</p>\n",
    );
    out.push_str(&legend(
        names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), color(i))),
    ));
    out.push_str("<div class=\"grid two\">\n");
    for step in &m.steps {
        let Some(agent) = &step.agent else {
            continue;
        };
        let mut curves = Vec::new();
        let mut points = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let mine: Vec<&AgentStepRow> = agent.steps.iter().filter(|r| r.name == *name).collect();
            let quantiles: [(bool, Quantile); 2] =
                [(false, |r| r.ttfo_p50_ms), (true, |r| r.ttfo_p99_ms)];
            for (dashed, value) in quantiles {
                curves.push(Curve {
                    color: color(i),
                    dashed,
                    points: mine
                        .iter()
                        .filter_map(|r| Some((r.step as f64, value(r)?)))
                        .collect(),
                    marked: Vec::new(),
                });
            }
            points.extend(mine.iter().map(|r| {
                format!(
                    "{name}|{}|{}|{}",
                    r.step,
                    one(r.ttfo_p50_ms),
                    one(r.ttfo_p99_ms)
                )
            }));
        }
        let chart = curve_chart(
            &format!("first output per agent step index, step {}", step.index),
            "agent step index (model call of the run)",
            "first output ms",
            &curves,
        );
        let _ = writeln!(
            out,
            "<figure class=\"agent-steps\" data-points=\"{}\"><figcaption>{}</figcaption>{chart}</figure>",
            escape(&points.join(";")),
            step_title(step)
        );
    }
    out.push_str("</div>\n");
    out
}
