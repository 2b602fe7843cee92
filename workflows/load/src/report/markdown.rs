//! `report.md` and the terminal's summary table, from [`LoadMetrics`]. Every figure is printed by
//! the report kit's formatters, so the same metrics give the same bytes.

use super::compute::{ITL_EDGES_MS, LoadMetrics, Row, StepView};
use super::tables::{SUMMARY_HEADERS, Table, point_text, summary_cells, tables};
use crate::metrics::{FailureClass, RateVerdict};
use openbench_report_kit::format::{MISSING, grouped, pct};
use openbench_report_kit::table::{aligned, markdown_names};

use std::fmt::Write;

/// Every failure class, in table order.
pub const FAILURE_CLASSES: [FailureClass; 7] = [
    FailureClass::RateLimited,
    FailureClass::Http4xx,
    FailureClass::Http5xx,
    FailureClass::Timeout,
    FailureClass::TransportError,
    FailureClass::StreamLimitExceeded,
    FailureClass::StreamError,
];

/// A failure class's name as in `load-metrics.json`.
pub fn class_name(class: FailureClass) -> &'static str {
    match class {
        FailureClass::RateLimited => "rate_limited",
        FailureClass::Http4xx => "http_4xx",
        FailureClass::Http5xx => "http_5xx",
        FailureClass::Timeout => "timeout",
        FailureClass::TransportError => "transport_error",
        FailureClass::StreamLimitExceeded => "stream_limit_exceeded",
        FailureClass::StreamError => "stream_error",
    }
}

/// A rate verdict's name as in `load-metrics.json`.
pub fn verdict_name(verdict: RateVerdict) -> &'static str {
    match verdict {
        RateVerdict::NoTarget => "no_target",
        RateVerdict::OnTarget => "on_target",
        RateVerdict::ClientBehind => "client_behind",
        RateVerdict::ServerBehind => "server_behind",
    }
}

/// A rate per second with two decimals, or the em dash.
pub fn rate(x: Option<f64>) -> String {
    x.map_or(MISSING.to_string(), |v| grouped(v, 2))
}

/// A row's load as read in tables: `4 users` or `2.5/s`.
pub fn load_text(step: &StepView, row: &Row) -> String {
    if step.model == "closed" {
        format!("{} users", row.load)
    } else {
        format!("{}/s", row.load)
    }
}

/// A step's rows in table order: lanes, providers pooled over their regions, then all pooled.
pub fn rows(step: &StepView) -> impl Iterator<Item = &Row> {
    step.lanes
        .iter()
        .chain(&step.providers)
        .chain(std::iter::once(&step.pooled))
}

/// The summary table as aligned plain text (one line per step × row), then the saturation points.
pub fn summary_text(metrics: &LoadMetrics) -> String {
    let rows: Vec<Vec<String>> = metrics
        .steps
        .iter()
        .flat_map(|s| rows(s).map(move |r| summary_cells(s, r)))
        .collect();
    let mut out = aligned(&SUMMARY_HEADERS, &rows);
    for s in &metrics.saturation {
        let _ = writeln!(
            out,
            "saturation point of {}: closed loop {}; open loop {}",
            s.name,
            point_text(metrics, s.closed.as_ref(), true),
            point_text(metrics, s.open.as_ref(), false)
        );
    }
    out
}

/// Renders `report.md`.
pub fn render(metrics: &LoadMetrics) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Load report: {}\n", metrics.run_id);
    if let Some(validity) = &metrics.validity {
        let banner = openbench_common::validity::render::banner(validity);
        let _ = writeln!(out, "{}\n", openbench_report_kit::format::cell(&banner));
    }
    header(&mut out, metrics);
    for table in tables(metrics) {
        print_table(&mut out, &table);
    }
    if let Some(validity) = &metrics.validity {
        out.push_str(&openbench_common::validity::render::markdown(validity));
    }
    out.push_str(
        "Definitions: docs/load.md, \"Reports\". Percentiles are nearest rank; latencies in ms.\n",
    );
    out
}

/// The SLO as written (`ttfa_ms ≤ 500, tpot_ms ≤ 50`); `None` without bounds.
pub fn slo_text(m: &LoadMetrics) -> Option<String> {
    let bounds: Vec<String> = m
        .settings
        .slo
        .iter()
        .map(|(k, v)| format!("{k} ≤ {v}"))
        .collect();
    (!bounds.is_empty()).then(|| bounds.join(", "))
}

fn header(out: &mut String, m: &LoadMetrics) {
    let slo = slo_text(m).unwrap_or_else(|| "none (every completed request is good)".to_string());
    let _ = writeln!(
        out,
        "- SLO: {slo}{}.",
        if m.scored {
            "; a good request also needs an exactly right answer"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "- Sustained: the rate kept (open loop: achieved and throughput ≥ {} of the target), goodput ≥ {} of measured requests, and no more than half of the answers under a held length short of it.",
        pct(Some(m.settings.sustain_fraction)),
        pct(Some(m.settings.goodput_threshold))
    );
    let harness: u64 = m.steps.iter().map(|s| s.harness_failures).sum();
    let _ = writeln!(
        out,
        "- Steps: {}; harness failures set apart: {harness}.",
        m.steps.len()
    );
    for note in &m.notes {
        let _ = writeln!(out, "- Note: {note}");
    }
    out.push('\n');
}

/// One table as `## title`, its introduction, the table (or its empty text) and the lines
/// after it.
fn print_table(out: &mut String, t: &Table) {
    let _ = writeln!(out, "## {}\n", t.title);
    if let Some(intro) = &t.intro {
        let _ = writeln!(out, "{intro}\n");
    }
    if t.rows.is_empty() {
        let _ = writeln!(out, "{}\n", t.empty);
    } else {
        let headers: Vec<&str> = t.headers.iter().map(String::as_str).collect();
        markdown_names(out, &headers, &t.rows, t.names);
    }
    for line in &t.after {
        let _ = writeln!(out, "{line}\n");
    }
}

/// The steps that were interrupted and resumed mid-way (records from more than one sitting),
/// named with their sittings, and what that does to their figures; `None` when there are none.
/// Both reports print it under "Failures by step".
pub fn resumed_note(m: &LoadMetrics) -> Option<String> {
    let resumed: Vec<String> = m
        .steps
        .iter()
        .filter(|s| s.sittings.len() > 1)
        .map(|s| {
            let sittings: Vec<String> = s.sittings.iter().map(u32::to_string).collect();
            format!("step {} (sittings {})", s.index, sittings.join(", "))
        })
        .collect();
    (!resumed.is_empty()).then(|| {
        format!(
            "Interrupted and resumed mid-step: {}. Each sitting's requests are timed from that \
             sitting's own start of the step and read as one window, so the step's rates and \
             load mix two runs of it; run it again for figures of one.",
            resumed.join(", ")
        )
    })
}

/// The ITL histogram's bucket labels: `<1`, `1–2`, …, `≥1000` (ms).
pub fn itl_bucket_labels() -> Vec<String> {
    let mut labels = vec![format!("<{}", ITL_EDGES_MS[0])];
    labels.extend(
        ITL_EDGES_MS
            .windows(2)
            .map(|w| format!("{}–{}", w[0], w[1])),
    );
    labels.push(format!("≥{}", ITL_EDGES_MS[ITL_EDGES_MS.len() - 1]));
    labels
}
