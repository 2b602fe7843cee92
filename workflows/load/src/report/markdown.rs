//! `report.md` and the terminal's summary table, from [`LoadMetrics`]. Every figure is printed by
//! the report kit's formatters, so the same metrics give the same bytes.

use super::compute::{ITL_EDGES_MS, LoadMetrics, Row, SaturationPoint, StepView};
use crate::metrics::{Distribution, FailureClass, RateVerdict, StepMetrics};
use openbench_report_kit::format::{MISSING, grouped, one, pct};
use openbench_report_kit::table::{aligned, markdown_names};

/// A table whose first two columns (step and lane) are names.
fn table(out: &mut String, headers: &[&str], rows: &[Vec<String>]) {
    markdown_names(out, headers, rows, 2);
}
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

const SUMMARY_HEADERS: [&str; 12] = [
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

fn summary_cells(step: &StepView, row: &Row) -> Vec<String> {
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

fn yes_no(b: bool) -> String {
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

/// A saturation point in words; "no steps" when the run had no load of that kind (closed or
/// open loop), so an absent kind is not read as one that never kept up.
fn point_text(m: &LoadMetrics, point: Option<&SaturationPoint>, closed: bool) -> String {
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

/// Renders `report.md`.
pub fn render(metrics: &LoadMetrics) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Load report: {}\n", metrics.run_id);
    header(&mut out, metrics);
    section(
        &mut out,
        "Summary",
        SUMMARY_HEADERS.as_slice(),
        metrics,
        summary_cells,
    );
    latency_section(&mut out, metrics);
    intervals_section(&mut out, metrics);
    sched_section(&mut out, metrics);
    goodput_section(&mut out, metrics);
    saturation_section(&mut out, metrics);
    failures_section(&mut out, metrics);
    itl_section(&mut out, metrics);
    tokens_section(&mut out, metrics);
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

/// A step's first cell: `0 constant 2/s`.
fn step_cell(step: &StepView) -> String {
    format!("{} {}", step.index, step.label)
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
        "- Sustained: achieved ≥ {} of the target rate (open loop), goodput ≥ {} of measured requests, and no more than half of the answers under a held length short of it.",
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

/// One `## title` table with a line per step × row.
fn section(
    out: &mut String,
    title: &str,
    headers: &[&str],
    m: &LoadMetrics,
    cells: impl Fn(&StepView, &Row) -> Vec<String>,
) {
    let _ = writeln!(out, "## {title}\n");
    let rows: Vec<Vec<String>> = m
        .steps
        .iter()
        .flat_map(|s| rows(s).map(|r| cells(s, r)).collect::<Vec<_>>())
        .collect();
    if rows.is_empty() {
        out.push_str("No steps ran.\n\n");
    } else {
        table(out, headers, &rows);
    }
}

fn latency_section(out: &mut String, m: &LoadMetrics) {
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
    section(
        out,
        "Latency from the actual send (ms)",
        &headers,
        m,
        |s, r| {
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
        },
    );
}

/// `[low, high]` of an interval, or the em dash.
fn interval(x: Option<(f64, f64)>) -> String {
    x.map_or(MISSING.to_string(), |(l, h)| {
        format!("[{}, {}]", one(Some(l)), one(Some(h)))
    })
}

fn intervals_section(out: &mut String, m: &LoadMetrics) {
    let headers = ["Step", "Lane", "TTFA p50", "TTFA p99", "E2E p50", "E2E p99"];
    let title = format!(
        "Latency intervals (95% bootstrap over requests, {} replicates; none under 30 values)",
        super::compute::REPORT_REPLICATES
    );
    section(out, &title, &headers, m, |s, r| {
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
}

fn sched_section(out: &mut String, m: &LoadMetrics) {
    let open: Vec<&StepView> = m.steps.iter().filter(|s| s.model != "closed").collect();
    out.push_str("## Timed from the scheduled send (open-loop steps)\n\n");
    if open.is_empty() {
        out.push_str("No open-loop step ran.\n\n");
        return;
    }
    let p = |d: &Option<Distribution>, at: fn(&Distribution) -> Option<f64>| {
        one(d.as_ref().and_then(at))
    };
    let rows: Vec<Vec<String>> = open
        .iter()
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
    table(
        out,
        &[
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
        ],
        &rows,
    );
}

fn goodput_section(out: &mut String, m: &LoadMetrics) {
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
    section(out, "Goodput per step", &headers, m, |s, r| {
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
}

fn saturation_section(out: &mut String, m: &LoadMetrics) {
    out.push_str("## Saturation point\n\n");
    out.push_str(
        "The sustained step with the highest load, per lane (and per provider pooled over its \
         regions), among closed-loop and among open-loop steps.\n\n",
    );
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
    markdown_names(out, &["Lane", "Closed loop", "Open loop"], &rows, 3);
}

fn failures_section(out: &mut String, m: &LoadMetrics) {
    let mut headers = vec!["Step", "Lane", "Measured", "Completed"];
    headers.extend(FAILURE_CLASSES.iter().map(|c| class_name(*c)));
    headers.extend(["Retry-After given", "Retry-After min/p50/max s"]);
    section(out, "Failures by step", &headers, m, |s, r| {
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
    if !harness.is_empty() {
        let _ = writeln!(
            out,
            "Harness failures (not the providers'): {}.\n",
            harness.join(", ")
        );
    }
    if let Some(note) = resumed_note(m) {
        let _ = writeln!(out, "{note}\n");
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

fn itl_section(out: &mut String, m: &LoadMetrics) {
    let labels = itl_bucket_labels();
    let mut headers = vec![
        "Step", "Lane", "Gaps", "Mean", "p50", "p90", "p99", "TPOT p50",
    ];
    headers.extend(labels.iter().map(String::as_str));
    section(
        out,
        "Inter-token latency (ms; gaps per bucket)",
        &headers,
        m,
        |s, r| {
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
            ];
            cells.extend(r.itl_histogram.iter().map(u64::to_string));
            cells
        },
    );
}

fn tokens_section(out: &mut String, m: &LoadMetrics) {
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
    section(
        out,
        "Throughput (o200k and provider usage)",
        &headers,
        m,
        |s, r| {
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
        },
    );
}
