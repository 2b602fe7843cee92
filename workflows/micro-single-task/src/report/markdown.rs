//! `report.md` and the terminal summary table, rendered from the metrics alone.

use super::format::{MISSING, one, pct, usd};
use crate::metrics::{ProviderMetrics, RunMetrics};
use crate::paired::PairedComparisons;
use crate::scoring::gold::CONTRACT_FIELDS;
use openbench_common::rundir::RunLock;
use openbench_common::untrusted_text::terminal;
use std::fmt::Write;

/// One file listed under "Artifact status".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactStatus {
    /// Layout name.
    pub name: String,
    /// sha256 of its bytes, `None` when absent.
    pub sha256: Option<String>,
    /// Size in bytes.
    pub bytes: Option<u64>,
}

/// Everything the markdown needs.
pub struct ReportContext<'a> {
    /// The run lock.
    pub lock: &'a RunLock,
    /// Metrics.
    pub metrics: &'a RunMetrics,
    /// Paired comparisons.
    pub paired: &'a PairedComparisons,
    /// (start, end) of the run and where it came from.
    pub period: Option<(String, String, &'static str)>,
    /// Files and their hashes.
    pub artifacts: &'a [ArtifactStatus],
    /// Records superseded (resume replaced a harness failure) and whether a half line was ignored.
    pub superseded: u64,
    /// A half-written last line was ignored.
    pub ignored_partial_line: bool,
    /// The 1-based line number of that half-written line.
    pub torn_line: Option<u64>,
    /// Out-of-round results, the probe link and outages.
    pub faults: super::faults_section::FaultsView,
    /// Records counted only because the user accepted them (`report --accept-…`), one sentence
    /// each; shown at the top of the report.
    pub accepted: &'a [String],
}

/// Column headers of the summary table (the seed's layout).
pub const SUMMARY_HEADERS: [&str; 8] = [
    "Provider",
    "E2E p50 (ms)",
    "E2E p99 (ms)",
    "TTFA p50 (ms)",
    "Tokens/s p50",
    "Tokens/s p95 floor",
    "Task success",
    "Operational failures",
];

/// The summary table's cells, providers alphabetical by display name.
pub fn summary_rows(metrics: &RunMetrics) -> Vec<[String; 8]> {
    summary_rows_in(metrics, 1.0)
}

/// The summary table's cells with times divided by `time_scale` and speeds multiplied by it: a
/// time-scaled simulated run shown in simulated time, comparable with the simulator's profiles.
pub fn summary_rows_in(metrics: &RunMetrics, time_scale: f64) -> Vec<[String; 8]> {
    let ms = |v: Option<f64>| one(v.map(|v| v / time_scale));
    let rate = |v: Option<f64>| one(v.map(|v| v * time_scale));
    metrics
        .providers
        .iter()
        .map(|p| {
            let s = &p.pooled;
            [
                p.display_name.clone(),
                ms(s.e2e_latency_p50),
                ms(s.e2e_latency_p99),
                ms(s.ttfa_p50),
                rate(s.output_tokens_per_second_p50),
                rate(s.output_tokens_per_second_p95),
                pct(s.task_success_rate),
                pct(s.failure_rate),
            ]
        })
        .collect()
}

/// The summary table as aligned plain text, for the terminal. A simulated run (`time_scale`
/// given) gets two tables: as measured, then in simulated time.
pub fn summary_text(metrics: &RunMetrics, time_scale: Option<f64>) -> String {
    match time_scale {
        None => aligned(&summary_rows(metrics)),
        Some(scale) => format!(
            "As measured on the simulator (time scale {scale}):\n{}\n\
             In simulated time (ms ÷ {scale}, tokens/s × {scale}), comparable with the profiles:\n{}",
            aligned(&summary_rows(metrics)),
            aligned(&summary_rows_in(metrics, scale))
        ),
    }
}

fn aligned(rows: &[[String; 8]]) -> String {
    openbench_report_kit::table::aligned(&SUMMARY_HEADERS, rows)
}

/// Appends a markdown table (the report kit's).
pub use openbench_report_kit::table::markdown as table;

/// Renders `report.md`.
pub fn render(ctx: &ReportContext<'_>) -> String {
    let m = ctx.metrics;
    let lock = ctx.lock;
    let mut out = String::new();
    let _ = writeln!(out, "# {} — run {}\n", lock.model_label, lock.run_id);
    if let Some(validity) = &m.validity {
        let banner = openbench_common::validity::render::banner(validity);
        let _ = writeln!(out, "> {}\n", openbench_report_kit::format::cell(&banner));
    }
    for note in ctx.accepted {
        let _ = writeln!(out, "> **Accepted records.** {note}\n");
    }
    if let Some(scale) = lock.simulator_time_scale {
        let _ = writeln!(
            out,
            "> **Simulated run.** Every figure below was measured against the embedded provider \
             simulator running at time scale {scale}: latencies and speeds describe the \
             time-scaled simulator, not any real provider.\n"
        );
    }
    let _ = writeln!(
        out,
        "Workflow `{}`, {} rounds, {} lanes, families: {}. Records: `{}`.\n",
        m.workflow,
        m.rounds,
        m.providers.len(),
        m.families.join(", "),
        m.records_file
    );
    summary_section(&mut out, m);
    if let Some(validity) = &m.validity {
        out.push_str(&openbench_common::validity::render::markdown(validity));
    }
    if let Some(scale) = lock.simulator_time_scale {
        let _ = writeln!(
            out,
            "### Summary in simulated time\n\nThe same figures with milliseconds divided by the \
             time scale ({scale}) and tokens/s multiplied by it, comparable with the simulator's \
             profiles (which model the reference snapshot). A few milliseconds of fixed \
             per-request overhead on this machine are magnified by the same factor.\n"
        );
        let rows: Vec<Vec<String>> = summary_rows_in(m, scale)
            .into_iter()
            .map(Vec::from)
            .collect();
        table(&mut out, &SUMMARY_HEADERS, &rows);
    }
    ranking_section(&mut out, m);
    super::repeats_section::markdown(&mut out, m.repeats.as_ref());
    family_sections(&mut out, m);
    contract_section(&mut out, m);
    super::paired_section::render(&mut out, ctx.paired, m);
    operations_section(&mut out, m);
    super::faults_section::render(&mut out, &ctx.faults);
    provenance_section(&mut out, ctx);
    artifacts_section(&mut out, ctx);
    out
}

fn summary_section(out: &mut String, m: &RunMetrics) {
    out.push_str("## Summary\n\n");
    let rows: Vec<Vec<String>> = summary_rows(m).into_iter().map(Vec::from).collect();
    table(out, &SUMMARY_HEADERS, &rows);
    out.push_str(
        "Providers are alphabetical; no single metric determines an overall winner. Lower \
         latency is better. Higher generation speed and task success are better. TTFA measures \
         the wait for the first visible answer token. The tokens/s p95 floor is the speed at \
         least 95% of eligible responses achieved (nearest rank at p = 0.05), not an upper-tail \
         speed. Latency and speed require valid timing samples; failed requests are excluded \
         from latency calculations but remain in the task-success denominator. Percentiles \
         (nearest rank) describe the observed distribution, not confidence intervals.\n\n",
    );
    let incompatible: Vec<_> = m
        .providers
        .iter()
        .filter(|p| !p.compatibility.configuration_compatible)
        .map(|p| terminal(&p.display_name))
        .collect();
    if !incompatible.is_empty() {
        let _ = writeln!(
            out,
            "Configuration-incompatible (the response's model differed from the requested id; \
             kept in the tables, left out of ranking and paired comparisons): {}.\n",
            incompatible.join(", ")
        );
    }
}

fn ranking_section(out: &mut String, m: &RunMetrics) {
    out.push_str("## Ranking by pooled E2E p99\n\n");
    let _ = writeln!(
        out,
        "Eligible: task success ≥ {}, operational failure rate ≤ {}, configuration-compatible, \
         every planned request recorded. This orders one metric; it does not name a winner.\n",
        pct(Some(m.thresholds.min_task_success_rate)),
        pct(Some(m.thresholds.max_failure_rate))
    );
    if m.ranking.is_empty() {
        out.push_str("No provider is eligible.\n\n");
    } else {
        let rows: Vec<Vec<String>> = m
            .ranking
            .iter()
            .map(|r| {
                vec![
                    r.rank.to_string(),
                    r.display_name.clone(),
                    one(Some(r.e2e_latency_p99)),
                ]
            })
            .collect();
        table(out, &["Rank", "Provider", "E2E p99 (ms)"], &rows);
    }
    let ineligible: Vec<&ProviderMetrics> = m.providers.iter().filter(|p| !p.eligible).collect();
    if !ineligible.is_empty() {
        out.push_str("Not ranked:\n\n");
        for p in ineligible {
            let _ = writeln!(
                out,
                "- {}: {}",
                terminal(&p.display_name),
                p.ineligibility_reasons.join("; ")
            );
        }
        out.push('\n');
    }
}

fn family_sections(out: &mut String, m: &RunMetrics) {
    out.push_str("## Per task family\n\n");
    for (i, family) in m.families.iter().enumerate() {
        let _ = writeln!(out, "### {family}\n");
        let rows: Vec<Vec<String>> = m
            .providers
            .iter()
            .filter_map(|p| p.families.get(i).map(|s| (p, s)))
            .map(|(p, s)| {
                vec![
                    p.display_name.clone(),
                    s.submitted_count.to_string(),
                    one(s.ttfo_p50),
                    one(s.ttfa_p50),
                    one(s.e2e_latency_p50),
                    one(s.e2e_latency_p99),
                    one(s.output_tokens_per_second_p50),
                    pct(s.task_success_rate),
                    s.incorrect_result_count.to_string(),
                    s.invalid_result_count.to_string(),
                    pct(s.failure_rate),
                ]
            })
            .collect();
        table(
            out,
            &[
                "Provider",
                "Submitted",
                "TTFO p50 (ms)",
                "TTFA p50 (ms)",
                "E2E p50 (ms)",
                "E2E p99 (ms)",
                "Tokens/s p50",
                "Task success",
                "Incorrect",
                "Invalid",
                "Operational failures",
            ],
            &rows,
        );
    }
}

fn contract_section(out: &mut String, m: &RunMetrics) {
    let Some(index) = m
        .families
        .iter()
        .position(|f| f == "contract-terms-extraction")
    else {
        return;
    };
    out.push_str("## Contract field diagnostics\n\n");
    out.push_str(
        "Share of submitted contract requests whose field was type-valid and equal to the gold \
         (diagnostics only: task success gives no partial credit).\n\n",
    );
    let mut headers = vec!["Field"];
    headers.extend(m.providers.iter().map(|p| p.display_name.as_str()));
    let rows: Vec<Vec<String>> = CONTRACT_FIELDS
        .iter()
        .map(|field| {
            let mut row = vec![format!("`{field}`")];
            row.extend(m.providers.iter().map(|p| {
                pct(p
                    .families
                    .get(index)
                    .and_then(|s| s.field_accuracy.get(*field).copied()))
            }));
            row
        })
        .collect();
    table(out, &headers, &rows);
}

fn operations_section(out: &mut String, m: &RunMetrics) {
    out.push_str("## Operations, usage and cost\n\n");
    // A stream over a limit has its own column only in runs that had one: older runs counted
    // such streams as transport errors, and their reports stay as they were.
    let limits_column = m
        .providers
        .iter()
        .any(|p| p.pooled.failure_breakdown.stream_limit > 0);
    let rows: Vec<Vec<String>> = m
        .providers
        .iter()
        .map(|p| {
            let s = &p.pooled;
            let f = &s.failure_breakdown;
            let mut row = vec![
                p.display_name.clone(),
                s.submitted_count.to_string(),
                p.planned_requests
                    .map_or(MISSING.to_string(), |n| n.to_string()),
                f.timeout.to_string(),
                f.http_429.to_string(),
                f.other_http_4xx.to_string(),
                f.http_5xx.to_string(),
                f.transport.to_string(),
                f.stream_error.to_string(),
                p.harness_failures.to_string(),
                pct(s.reasoning_emission_rate),
                pct(s.usage.usage_coverage),
                usd(s.usage.cost_usd),
            ];
            if limits_column {
                row.insert(9, f.stream_limit.to_string());
            }
            row
        })
        .collect();
    let mut headers = vec![
        "Provider",
        "Submitted",
        "Planned",
        "Timeout",
        "HTTP 429",
        "Other 4xx",
        "5xx",
        "Transport",
        "Stream error",
        "Harness",
        "Reasoning emitted",
        "Usage coverage",
        "Cost",
    ];
    if limits_column {
        headers.insert(9, "Stream limit");
    }
    table(out, &headers, &rows);
    out.push_str(
        "Harness failures are our own machinery's and never count against a provider; a \
         request left with only a harness failure is missing, so its lane is incomplete. Cost \
         uses the lock's list prices and provider-reported usage, over the responses that \
         reported it (usage coverage).\n\n",
    );
}

fn provenance_section(out: &mut String, ctx: &ReportContext<'_>) {
    let lock = ctx.lock;
    out.push_str("## Provenance\n\n");
    let mut items = vec![
        ("Run", lock.run_id.clone()),
        (
            "Benchmark",
            format!("{} ({})", lock.benchmark_slug, lock.schedule_version),
        ),
        ("Program version", lock.program_version.clone()),
        (
            "Spec",
            format!("{} sha256 {}", lock.spec_path, lock.spec_sha256),
        ),
        ("Dataset release", lock.dataset_release_hash.clone()),
        ("Adapters sha256", lock.adapters_sha256.clone()),
        (
            "Tokenizer",
            format!(
                "{} (ranks sha256 {})",
                lock.tokenizer, lock.tokenizer_ranks_sha256
            ),
        ),
        ("Code sha256", lock.code_sha256.clone()),
        ("Regions", lock.regions.join(", ")),
        ("Request deadline", format!("{} ms", lock.timeout_ms)),
    ];
    if let Some((start, end, source)) = &ctx.period {
        items.push(("Period", format!("{start} → {end} (from {source})")));
    }
    if let Some(id) = &lock.approval_id {
        items.push(("Approval id", id.clone()));
    }
    match lock.simulator_time_scale {
        Some(scale) => items.push((
            "Simulator",
            format!("time scale {scale}: figures are measured on the time-scaled simulator"),
        )),
        None => items.push(("Simulator", "not used".to_string())),
    }
    for (k, v) in items {
        let _ = writeln!(out, "- {k}: {v}");
    }
    if ctx.superseded > 0 || ctx.ignored_partial_line {
        let _ = writeln!(
            out,
            "- Records: {} superseded by a later record of the same request{}",
            ctx.superseded,
            match (ctx.ignored_partial_line, ctx.torn_line) {
                (true, Some(line)) => format!("; the half-written last line {line} was ignored"),
                (true, None) => "; a half-written last line was ignored".to_string(),
                _ => String::new(),
            }
        );
    }
    out.push('\n');
}

fn artifacts_section(out: &mut String, ctx: &ReportContext<'_>) {
    out.push_str("## Artifact status\n\n");
    let rows: Vec<Vec<String>> = ctx
        .artifacts
        .iter()
        .map(|a| {
            vec![
                format!("`{}`", a.name),
                a.bytes
                    .map_or("missing".to_string(), |b| format!("{b} bytes")),
                a.sha256.clone().unwrap_or_else(|| MISSING.to_string()),
            ]
        })
        .collect();
    table(out, &["Artifact", "Status", "sha256"], &rows);
}
