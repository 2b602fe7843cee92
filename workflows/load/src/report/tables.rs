//! The tables of the load report, as data: each with its heading, a line of introduction, its
//! headers and its rows of formatted cells. `report.md` prints them as Markdown and `report.html`
//! as HTML, so the page carries everything the Markdown does, in the same words and figures.

use super::compute::{LoadMetrics, REPORT_REPLICATES, Row, SaturationPoint, StepView};
use super::markdown::{
    FAILURE_CLASSES, class_name, itl_bucket_labels, load_text, rate, resumed_note, rows,
    verdict_name,
};
use crate::metrics::{Distribution, StepMetrics};
use openbench_report_kit::format::{MISSING, grouped, one, pct};

/// One table of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Its heading.
    pub title: String,
    /// A line printed under the heading, before the table.
    pub intro: Option<String>,
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows of formatted cells, one per header.
    pub rows: Vec<Vec<String>>,
    /// How many leading columns are names (left-aligned), not figures.
    pub names: usize,
    /// What is printed instead of an empty table.
    pub empty: &'static str,
    /// Lines printed after the table.
    pub after: Vec<String>,
}

impl Table {
    fn new(title: impl Into<String>, headers: &[&str], rows: Vec<Vec<String>>) -> Table {
        Table {
            title: title.into(),
            intro: None,
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows,
            names: 2,
            empty: "No steps ran.",
            after: Vec::new(),
        }
    }
}

/// Every table in report order: summary, latency, intervals, timed from the schedule, goodput,
/// saturation point, failures, inter-token latency, throughput; then, when a step held
/// conversations, their figures per turn.
pub fn tables(m: &LoadMetrics) -> Vec<Table> {
    let mut out = vec![
        summary(m),
        latency(m),
        intervals(m),
        sched(m),
        goodput(m),
        saturation(m),
        failures(m),
        itl(m),
        throughput(m),
    ];
    // Conversation steps and repeated sweeps only: other reports keep their bytes.
    out.extend(super::turns::table(m));
    out.extend(super::repeats::table(m));
    // Agent steps only, likewise.
    out.extend(super::agents::tables(m));
    out
}

/// One row per step × row (lanes, providers, pooled) of `m`.
fn per_row(m: &LoadMetrics, cells: impl Fn(&StepView, &Row) -> Vec<String>) -> Vec<Vec<String>> {
    m.steps
        .iter()
        .flat_map(|s| rows(s).map(|r| cells(s, r)).collect::<Vec<_>>())
        .collect()
}

/// A step's first cell: `0 constant 2/s` (`3 constant 2/s · repeat 2/3` in a repeated sweep).
pub fn step_cell(step: &StepView) -> String {
    match step.repeat {
        Some(r) => format!(
            "{} {} · repeat {}/{}",
            step.index,
            step.label,
            r.repeat + 1,
            r.of
        ),
        None => format!("{} {}", step.index, step.label),
    }
}

/// The summary table's headers (also the terminal's).
pub const SUMMARY_HEADERS: [&str; 12] = [
    "Step",
    "Lane",
    "Load",
    "Achieved/s",
    "Failed",
    "Failed %",
    "TTFA p50",
    "TTFA p99",
    "ITL p99",
    "E2E p99",
    "Goodput",
    "Sustained",
];

/// One summary row.
pub fn summary_cells(step: &StepView, row: &Row) -> Vec<String> {
    let m = &row.metrics;
    vec![
        step_cell(step),
        row.name.clone(),
        load_text(step, row),
        rate(Some(m.rate.achieved_per_s)),
        failed(m).to_string(),
        pct(failed_share(m)),
        one(m.ttfa_ms.p50),
        one(m.ttfa_ms.p99),
        one(m.itl_ms.p99),
        one(m.e2e_ms.p99),
        pct(Some(m.goodput.fraction)),
        yes_no(m.sustained),
    ]
}

/// Measured requests that failed, every class together (the provider's failures: harness
/// failures are excluded from `measured` and listed apart).
fn failed(m: &StepMetrics) -> usize {
    m.failures.values().sum()
}

/// Failed ÷ measured; `None` (the em dash) when nothing was measured.
fn failed_share(m: &StepMetrics) -> Option<f64> {
    (m.measured > 0).then(|| failed(m) as f64 / m.measured as f64)
}

/// `yes` or `no`.
pub fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// Answers short of a held length: `3 of 40` (`flagged` when most were), or the em dash when no
/// request held a length.
pub fn held_text(m: &StepMetrics) -> String {
    m.held_length.as_ref().map_or(MISSING.to_string(), |h| {
        let flag = if h.flagged { " (flagged)" } else { "" };
        format!("{} of {}{flag}", h.short, h.requests)
    })
}

fn summary(m: &LoadMetrics) -> Table {
    Table::new("Summary", &SUMMARY_HEADERS, per_row(m, summary_cells))
}

fn latency(m: &LoadMetrics) -> Table {
    let headers = [
        "Step",
        "Lane",
        "Completed",
        "TTFO p50",
        "TTFO p99",
        "TTFA p50",
        "TTFA p90",
        "TTFA p99",
        "E2E p50",
        "E2E p90",
        "E2E p99",
        "TPOT p50",
        "TPOT p99",
        "tokens/s p50",
    ];
    let rows = per_row(m, |s, r| {
        let x = &r.metrics;
        vec![
            step_cell(s),
            r.name.clone(),
            x.completed.to_string(),
            one(x.ttfo_ms.p50),
            one(x.ttfo_ms.p99),
            one(x.ttfa_ms.p50),
            one(x.ttfa_ms.p90),
            one(x.ttfa_ms.p99),
            one(x.e2e_ms.p50),
            one(x.e2e_ms.p90),
            one(x.e2e_ms.p99),
            one(x.tpot_ms.p50),
            one(x.tpot_ms.p99),
            one(x.tokens_per_s.p50),
        ]
    });
    Table::new("Latency from the actual send (ms)", &headers, rows)
}

/// `[low, high]` of an interval, or the em dash.
fn interval(x: Option<(f64, f64)>) -> String {
    x.map_or(MISSING.to_string(), |(l, h)| {
        format!("[{}, {}]", one(Some(l)), one(Some(h)))
    })
}

fn intervals(m: &LoadMetrics) -> Table {
    let headers = ["Step", "Lane", "TTFA p50", "TTFA p99", "E2E p50", "E2E p99"];
    let title = format!(
        "Latency intervals (95% bootstrap over requests, {REPORT_REPLICATES} replicates; none under 30 values)"
    );
    let rows = per_row(m, |s, r| {
        let i = &r.intervals;
        vec![
            step_cell(s),
            r.name.clone(),
            interval(i.ttfa_p50_ms),
            interval(i.ttfa_p99_ms),
            interval(i.e2e_p50_ms),
            interval(i.e2e_p99_ms),
        ]
    });
    Table::new(title, &headers, rows)
}

fn sched(m: &LoadMetrics) -> Table {
    let p = |d: &Option<Distribution>, at: fn(&Distribution) -> Option<f64>| {
        one(d.as_ref().and_then(at))
    };
    let rows: Vec<Vec<String>> = m
        .steps
        .iter()
        .filter(|s| s.model != "closed")
        .flat_map(|s| {
            rows(s).map(move |r| {
                let x = &r.metrics;
                vec![
                    step_cell(s),
                    r.name.clone(),
                    one(x.ttfa_ms.p50),
                    p(&x.ttfa_sched_ms, |d| d.p50),
                    one(x.ttfa_ms.p99),
                    p(&x.ttfa_sched_ms, |d| d.p99),
                    one(x.e2e_ms.p99),
                    p(&x.e2e_sched_ms, |d| d.p99),
                    p(&x.send_lag_ms, |d| d.p50),
                    p(&x.send_lag_ms, |d| d.p99),
                    one(r.send_lag_max_ms),
                ]
            })
        })
        .collect();
    let headers = [
        "Step",
        "Lane",
        "TTFA p50",
        "TTFA_sched p50",
        "TTFA p99",
        "TTFA_sched p99",
        "E2E p99",
        "E2E_sched p99",
        "Send lag p50",
        "Send lag p99",
        "Send lag max",
    ];
    Table {
        empty: "No open-loop step ran.",
        ..Table::new(
            "Timed from the scheduled send (open-loop steps)",
            &headers,
            rows,
        )
    }
}

fn goodput(m: &LoadMetrics) -> Table {
    let mut headers = vec![
        "Step",
        "Lane",
        "Target/s",
        "Achieved/s",
        "Throughput/s",
        "Rate",
        "Measured",
        "Short (held)",
        "Good",
        "Goodput/s",
        "Goodput",
        "Sustained",
    ];
    if m.scored {
        headers.push("Task success");
    }
    let rows = per_row(m, |s, r| {
        let x = &r.metrics;
        let mut cells = vec![
            step_cell(s),
            r.name.clone(),
            rate(x.rate.target_per_s),
            rate(Some(x.rate.achieved_per_s)),
            rate(x.request_throughput_per_s),
            verdict_name(x.rate.verdict).to_string(),
            x.measured.to_string(),
            held_text(x),
            x.goodput.good.to_string(),
            rate(x.goodput.per_s),
            pct(Some(x.goodput.fraction)),
            yes_no(x.sustained),
        ];
        if m.scored {
            cells.push(pct(r.task_success));
        }
        cells
    });
    Table::new("Goodput per step", &headers, rows)
}

/// A saturation point in words; "no steps" when the run had no load of that kind (closed or
/// open loop), so an absent kind is not read as one that never kept up.
pub fn point_text(m: &LoadMetrics, point: Option<&SaturationPoint>, closed: bool) -> String {
    if !m.steps.iter().any(|s| (s.model == "closed") == closed) {
        return "no steps".to_string();
    }
    point.map_or("none sustained".to_string(), |p| {
        format!(
            "step {} ({}), achieved {}/s",
            p.step,
            p.label,
            grouped(p.achieved_per_s, 2)
        )
    })
}

fn saturation(m: &LoadMetrics) -> Table {
    let rows: Vec<Vec<String>> = m
        .saturation
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                point_text(m, s.closed.as_ref(), true),
                point_text(m, s.open.as_ref(), false),
            ]
        })
        .collect();
    Table {
        intro: Some(
            "The sustained step with the highest load, per lane (and per provider pooled over its \
             regions), among closed-loop and among open-loop steps."
                .to_string(),
        ),
        names: 3,
        ..Table::new(
            "Saturation point",
            &["Lane", "Closed loop", "Open loop"],
            rows,
        )
    }
}

fn failures(m: &LoadMetrics) -> Table {
    let mut headers = vec!["Step", "Lane", "Measured", "Completed"];
    headers.extend(FAILURE_CLASSES.iter().map(|c| class_name(*c)));
    headers.extend(["Retry-After given", "Retry-After min/p50/max s"]);
    let rows = per_row(m, |s, r| {
        let x = &r.metrics;
        let mut cells = vec![
            step_cell(s),
            r.name.clone(),
            x.measured.to_string(),
            x.completed.to_string(),
        ];
        cells.extend(
            FAILURE_CLASSES
                .iter()
                .map(|c| x.failures.get(c).copied().unwrap_or(0).to_string()),
        );
        let ra = &r.retry_after;
        cells.push(format!("{}/{}", ra.with_header, ra.rate_limited));
        cells.push(if ra.with_header == 0 {
            MISSING.to_string()
        } else {
            format!("{}/{}/{}", rate(ra.min_s), rate(ra.p50_s), rate(ra.max_s))
        });
        cells
    });
    let harness: Vec<String> = m
        .steps
        .iter()
        .filter(|s| s.harness_failures > 0)
        .map(|s| format!("step {}: {}", s.index, s.harness_failures))
        .collect();
    let mut after = Vec::new();
    if !harness.is_empty() {
        after.push(format!(
            "Harness failures (not the providers'): {}.",
            harness.join(", ")
        ));
    }
    after.extend(resumed_note(m));
    Table {
        after,
        ..Table::new("Failures by step", &headers, rows)
    }
}

fn itl(m: &LoadMetrics) -> Table {
    let labels = itl_bucket_labels();
    let mut headers = vec![
        "Step",
        "Lane",
        "Tokens",
        "Mean",
        "p50",
        "p90",
        "p99",
        "TPOT p50",
        "Event gaps",
        "Event gap p50",
        "Event gap p99",
    ];
    headers.extend(labels.iter().map(String::as_str));
    let rows = per_row(m, |s, r| {
        let d = &r.metrics.itl_ms;
        let mut cells = vec![
            step_cell(s),
            r.name.clone(),
            d.count.to_string(),
            one(d.mean),
            one(d.p50),
            one(d.p90),
            one(d.p99),
            one(r.metrics.tpot_ms.p50),
            r.metrics.event_gap_ms.count.to_string(),
            one(r.metrics.event_gap_ms.p50),
            one(r.metrics.event_gap_ms.p99),
        ];
        cells.extend(r.itl_histogram.iter().map(u64::to_string));
        cells
    });
    Table {
        intro: Some(
            "ITL per token (METHODOLOGY §9): each network read's gap from the read before, shared \
             by the o200k tokens it carried; the histogram counts these values. Event gaps are \
             the raw gaps between answer-bearing events (0 ms within one read, k× the per-token \
             gap for k tokens an event), kept for comparison with peers' \"ITL\"."
                .to_string(),
        ),
        ..Table::new(
            "Inter-token latency (ms; values per bucket)",
            &headers,
            rows,
        )
    }
}

fn throughput(m: &LoadMetrics) -> Table {
    let headers = [
        "Step",
        "Lane",
        "Requests/s",
        "Drain req/s",
        "Input tok/s",
        "Output tok/s",
        "With usage",
        "Usage input tok/s",
        "Usage output tok/s",
        "Usage − o200k",
    ];
    let rows = per_row(m, |s, r| {
        let x = &r.metrics;
        vec![
            step_cell(s),
            r.name.clone(),
            rate(x.request_throughput_per_s),
            rate(x.drain_requests_per_s),
            one(x.input_tokens_per_s),
            one(x.output_tokens_per_s),
            x.usage.requests.to_string(),
            one(x.usage.input_per_s),
            one(x.usage.output_per_s),
            pct(x.usage.output_discrepancy),
        ]
    });
    Table::new("Throughput (o200k and provider usage)", &headers, rows)
}
