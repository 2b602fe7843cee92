//! The run directory layout and the run lock, shared by the writer (coordinator) and the readers
//! (watch, report). Names follow the reference runner's so tools can read either.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The lock file: hashes of every input, written by `init`, checked by every resume.
pub const RUN_LOCK: &str = "run-lock.json";
/// Immutable selection artifact.
pub const SELECTION: &str = "artifacts/selection.json";
/// Immutable full-run plan (rounds, lanes, launch order, ids).
pub const FULL_PLAN: &str = "artifacts/full-plan.json";
/// Run manifest: status, period, counts, artifact hashes.
pub const RUN_MANIFEST: &str = "artifacts/run-manifest.json";
/// Terminal records of a full run, one JSON line each, fsynced on arrival.
pub const FULL_RESULTS: &str = "raw/results.jsonl";
/// Parsed stream events, one JSON line each.
pub const STREAM_EVENTS: &str = "raw/stream-events.jsonl";
/// Reconstructed answers, one JSON line each.
pub const RECONSTRUCTED: &str = "raw/reconstructed-responses.jsonl";
/// Checkpoints folder.
pub const CHECKPOINTS: &str = "checkpoints";
/// Per-round barrier records (release time, launch skew, overhead), one JSON line each.
pub const ROUNDS: &str = "raw/rounds.jsonl";
/// Derived metrics.
pub const METRICS: &str = "artifacts/metrics.json";
/// Derived evaluations.
pub const EVALUATIONS: &str = "artifacts/evaluations.jsonl";
/// Derived failures.
pub const FAILURES: &str = "artifacts/failures.jsonl";
/// Derived paired comparisons.
pub const PAIRED: &str = "artifacts/paired-comparisons.json";
/// Markdown report.
pub const REPORT_MD: &str = "report.md";
/// HTML report.
pub const REPORT_HTML: &str = "report.html";

/// Smoke plan for one attempt (1-based).
pub fn smoke_plan(attempt: u32) -> String {
    format!("artifacts/smoke-plan-attempt-{attempt}.json")
}

/// Smoke terminal records for one attempt (1-based).
pub fn smoke_results(attempt: u32) -> String {
    format!("raw/results-attempt-{attempt}.jsonl")
}

/// Joins a layout name onto a run directory.
pub fn path(run_dir: &Path, name: &str) -> PathBuf {
    run_dir.join(name)
}

/// A provider as recorded in the lock (no credentials, ever).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockedProvider {
    /// Provider key.
    pub key: String,
    /// Display name for reports.
    pub display_name: String,
    /// Requested model id.
    pub model: String,
    /// USD per million input tokens, when the spec gives prices.
    #[serde(default)]
    pub input_price_per_mtok: Option<f64>,
    /// USD per million output tokens, when the spec gives prices.
    #[serde(default)]
    pub output_price_per_mtok: Option<f64>,
}

/// The run lock (`run-lock.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunLock {
    /// Layout version of this file.
    pub lock_version: u32,
    /// Run id (the run directory's name).
    pub run_id: String,
    /// Workflow name.
    pub workflow: String,
    /// Benchmark slug.
    pub benchmark_slug: String,
    /// Schedule version.
    pub schedule_version: String,
    /// Model label for reports.
    pub model_label: String,
    /// Task families in round order.
    pub families: Vec<String>,
    /// Spec path as given.
    pub spec_path: String,
    /// sha256 of the spec file bytes.
    pub spec_sha256: String,
    /// Dataset folder (absolute).
    pub dataset_dir: String,
    /// Manifest file name inside the dataset folder.
    pub dataset_manifest: String,
    /// Dataset release hash.
    pub dataset_release_hash: String,
    /// sha256 of the canonical JSON of the providers' adapter data.
    pub adapters_sha256: String,
    /// Tokenizer name.
    pub tokenizer: String,
    /// sha256 of the tokenizer ranks.
    pub tokenizer_ranks_sha256: String,
    /// Digest of the sources built into the binary.
    pub code_sha256: String,
    /// Program version.
    pub program_version: String,
    /// Providers in rotation base order.
    pub providers: Vec<LockedProvider>,
    /// Region labels.
    pub regions: Vec<String>,
    /// Simulator time scale when the run targets the embedded simulator.
    #[serde(default)]
    pub simulator_time_scale: Option<f64>,
    /// Request deadline, ms.
    pub timeout_ms: u64,
    /// Approval id of a full run.
    #[serde(default)]
    pub approval_id: Option<String>,
    /// When the lock was written, RFC 3339 UTC.
    pub created_at: String,
    /// Anything else worth pinning, by name.
    #[serde(default)]
    pub extra: BTreeMap<String, String>,
}
