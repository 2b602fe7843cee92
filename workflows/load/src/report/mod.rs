//! The load run's reports: from the steps and their request samples to `report.md`,
//! `report.html` and `load-metrics.json`, and the comparison of two load runs.
//!
//! The workflow's glue (reading a run directory: lock, spec, records, events) builds a
//! [`LoadResults`]; everything here is a function of it, so a report is recomputed byte for byte
//! from the raw records. Read top-down:
//!
//! - [`compute`]: per step, rows per lane, per provider over its regions and pooled (the
//!   `metrics` module's figures plus send-lag maximum, ITL histogram, Retry-After, intervals,
//!   task success), and saturation points — what `load-metrics.json` holds;
//! - [`markdown`] and [`html`]: `report.md` (and the terminal's table) and `report.html`;
//! - [`compare`], [`compare_md`] and [`compare_html`]: two runs matched step by step, changes
//!   with bootstrap intervals over requests, `compare.md`, `compare.html` and `compare.json`;
//! - [`repeats`] and [`compare_repeats`]: a repeated sweep's figures per repeat and across
//!   repeats (Student t intervals), and the comparison of two repeated runs on them;
//! - [`retry_after_s`]: the wait a 429 asked for, from a record's headers.
//!
//! Definitions: docs/load.md, "Reports".

use crate::arrivals::Window;
use crate::metrics::{RequestSample, Slo};
use crate::spec::StepModel;
use openbench_common::rundir::{layout, write_atomic};
use openbench_common::workflow::{CompareSettings, ReportOutcome, WorkflowError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub mod agents;
#[cfg(test)]
mod browser_tests;
pub mod compare;
pub mod compare_html;
pub mod compare_md;
pub mod compare_repeats;
#[cfg(test)]
mod compare_tests;
pub mod compute;
#[cfg(test)]
mod fixture;
pub mod html;
pub mod markdown;
pub mod repeats;
mod retry_after;
pub mod tables;
#[cfg(test)]
mod tests;
pub mod turns;
pub mod validity;

pub use retry_after::retry_after_s;

/// Everything a load report is computed from.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadResults {
    /// The run id.
    pub run_id: String,
    /// The steps that ran, in order (a saturation search's steps as they were chosen).
    pub steps: Vec<StepResults>,
    /// Settings of the rules (SLO, sustain fraction, goodput threshold, bootstrap seed).
    pub settings: ReportSettings,
    /// True when answers were scored (the `tasks` workload): goodput also needs a right answer.
    pub scored: bool,
    /// Lines the report states in its header (e.g. providers whose output length could not be
    /// held with `ignore_eos`, harness failures set apart), in order.
    pub notes: Vec<String>,
    /// What the run measured of its own runtimes and links (the manifest's); `None` for a run
    /// made before validity was measured, which then reports no validity section.
    pub health: Option<validity::RunHealth>,
    /// Probe replica (`eu#1`) → harness records of the requests it was to send (a replica that
    /// died mid-run); empty when none.
    pub replica_harness_failures: BTreeMap<String, u64>,
}

/// The rules' settings, from the spec's `load:` section.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportSettings {
    /// Goodput's service-level objectives.
    pub slo: Slo,
    /// Smallest achieved ÷ target rate that counts as keeping up.
    pub sustain_fraction: f64,
    /// Smallest goodput fraction of a sustained step.
    pub goodput_threshold: f64,
    /// Seed of the bootstrap intervals.
    pub seed: u64,
}

/// One step as it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct StepResults {
    /// 0-based step index (also the schedule's phase index of the full run).
    pub index: usize,
    /// The step's load per provider, as written in the spec (split across regions per lane).
    pub model: StepModel,
    /// The measured window (for a closed loop with a count window: computed from the sends).
    pub window: Window,
    /// Every lane's share of the load, in base order.
    pub lanes: Vec<LaneLoad>,
    /// Every request of the step (all phases; harness failures excluded and counted in
    /// `harness_failures`).
    pub samples: Vec<RequestSample>,
    /// Requests that ended in a harness failure (set apart, never counted as the provider's).
    pub harness_failures: u64,
    /// `Retry-After` of rate-limited samples: index in `samples` → seconds
    /// ([`retry_after_s`] of the record's `rate_limit_headers`).
    pub retry_after_s: BTreeMap<usize, f64>,
    /// The sittings that sent the step's requests, ascending (records from before sittings
    /// were stamped carry none). More than one: the step was interrupted and resumed, and its
    /// offsets come from two timelines, each from its own sitting's start.
    pub sittings: Vec<u32>,
    /// A conversation step's place of every sample in its conversation (`turns[i]` is
    /// `samples[i]`'s); empty for any other step.
    pub turns: Vec<turns::SampleTurn>,
    /// An agent step's runs and each sample's place in its run (docs/agents.md); `None` for
    /// any other step.
    pub agent: Option<agents::AgentResults>,
    /// Which repeat of which written step this is (`load.repeats`); `None` for a run made once.
    pub repeat: Option<crate::spec::RepeatOf>,
}

/// One lane's share of a step's load.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneLoad {
    /// Lane label (`provider` or `provider@region`).
    pub lane: String,
    /// Provider key.
    pub provider: String,
    /// Region name.
    pub region: String,
    /// Open loop: this lane's target rate per second.
    pub target_rate_per_s: Option<f64>,
    /// Closed loop: this lane's users.
    pub concurrency: Option<u32>,
}

/// Name of the metrics file at the run directory's top level.
pub const LOAD_METRICS_JSON: &str = "load-metrics.json";

/// Writes the run's load reports into `run_dir` (`report.md`, `report.html`,
/// `load-metrics.json`, each replaced atomically) and returns the summary table and paths.
pub fn write_reports(
    run_dir: &Path,
    results: &LoadResults,
) -> Result<ReportOutcome, WorkflowError> {
    let metrics = compute::compute(results);
    let files = [
        (layout::REPORT_MD, markdown::render(&metrics)),
        (layout::REPORT_HTML, html::render(&metrics)),
        (LOAD_METRICS_JSON, metrics_json(&metrics)?),
    ];
    let mut written = Vec::new();
    for (name, text) in files {
        let path = run_dir.join(name);
        write_atomic(&path, text.as_bytes()).map_err(|e| WorkflowError(Box::new(e)))?;
        written.push(path);
    }
    Ok(ReportOutcome {
        summary_table: markdown::summary_text(&metrics),
        written,
    })
}

/// `load-metrics.json`'s text: pretty JSON and a final newline.
pub fn metrics_json(metrics: &compute::LoadMetrics) -> Result<String, WorkflowError> {
    let mut text = serde_json::to_string_pretty(metrics)
        .map_err(|e| WorkflowError(format!("{LOAD_METRICS_JSON}: {e}").into()))?;
    text.push('\n');
    Ok(text)
}

/// Name of the comparison's markdown.
pub const COMPARE_MD: &str = "compare.md";
/// Name of the comparison's figures.
pub const COMPARE_JSON: &str = "compare.json";
/// Name of the comparison's page.
pub const COMPARE_HTML: &str = "compare.html";

/// Compares run B against run A, writing `compare.md`, `compare.html` and `compare.json` into
/// `out_dir` (created if needed); returns their paths.
pub fn compare_runs(
    a: &LoadResults,
    b: &LoadResults,
    out_dir: &Path,
    settings: CompareSettings,
) -> Result<Vec<PathBuf>, WorkflowError> {
    let comparison = compare::comparison(a, b, settings.replicates, settings.seed);
    let mut json = serde_json::to_string_pretty(&comparison)
        .map_err(|e| WorkflowError(format!("{COMPARE_JSON}: {e}").into()))?;
    json.push('\n');
    let files = [
        (COMPARE_MD, compare_md::render(&comparison)),
        (COMPARE_HTML, compare_html::render(&comparison)),
        (COMPARE_JSON, json),
    ];
    let mut written = Vec::new();
    for (name, text) in files {
        let path = out_dir.join(name);
        write_atomic(&path, text.as_bytes()).map_err(|e| WorkflowError(Box::new(e)))?;
        written.push(path);
    }
    Ok(written)
}
