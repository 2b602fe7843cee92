//! What a load run hands the results store: per step and row (lane, provider over its regions,
//! or all lanes pooled) the figures of the load report, the saturation points, and one row per
//! request. The load workflow fills these from its own report computation
//! ([`crate::workflow::Workflow::load_figures`]), so the store keeps them without depending on
//! the workflow or computing anything itself (docs/results-store.md, "Load runs").

use crate::record::{ErrorType, Outcome};
use std::path::PathBuf;

/// Everything the store keeps of one load run.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadFigures {
    /// The records file whose bytes (with the lock's and the status) key the stored content.
    pub records_file: PathBuf,
    /// The run's lanes in base order: (lane label, provider key, region).
    pub lanes: Vec<(String, String, String)>,
    /// One row per step and row of the report, in step then row order.
    pub steps: Vec<LoadStepRow>,
    /// The saturation points, per lane (and provider with several lanes) and kind of load.
    pub saturation: Vec<LoadSaturationRow>,
    /// One row per request of the steps the report counts (harness failures included).
    pub requests: Vec<LoadRequestRow>,
    /// The run's validity section (docs/validity.md); `None` for a run made before it.
    pub validity: Option<crate::validity::assess::ValiditySection>,
    /// A repeated sweep's figures per repeat and across repeats (`load.repeats`), per written
    /// step, row and figure; empty for a run made once.
    pub repeats: Vec<LoadRepeatRow>,
}

/// One figure of one row of a written step over a repeated sweep's repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadRepeatRow {
    /// The step's position in `load.steps`.
    pub step: u64,
    /// Lane label, provider key, or `pooled`.
    pub row: String,
    /// The figure's name (`ttfa_p50_ms`, `success`, …).
    pub figure: String,
    /// Per repeat, in order: the run's step (phase) index and the repeat's value.
    pub per_repeat: Vec<(u64, Option<f64>)>,
    /// Across the repeats that had a value: (repeats, mean, 95% t interval low, high).
    pub across: Option<(u64, f64, f64, f64)>,
}

/// Failed measured requests by class (the load report's failure table).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadFailures {
    /// HTTP 429.
    pub rate_limited: u64,
    /// Any other 4xx.
    pub http_4xx: u64,
    /// HTTP 5xx.
    pub http_5xx: u64,
    /// Deadline passed.
    pub timeout: u64,
    /// Connect, reset, invalid or truncated stream.
    pub transport_error: u64,
    /// Over a stream limit.
    pub stream_limit_exceeded: u64,
    /// An error inside a 2xx stream.
    pub stream_error: u64,
}

/// One step's figures for one row, as the load report computes them.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadStepRow {
    /// 0-based step index (the full run's phase).
    pub step: u64,
    /// The step's label (`closed c=4`, `constant 2.5/s`).
    pub label: String,
    /// `closed`, `constant` or `poisson`.
    pub model: String,
    /// Lane label, provider key, or `pooled`.
    pub row: String,
    /// `lane`, `provider` or `pooled`.
    pub row_kind: String,
    /// Target rate per second (open loop) or users (closed loop).
    pub load: f64,
    /// Measured requests sent in the window ÷ window.
    pub achieved_per_s: f64,
    /// Measured requests (harness failures excluded).
    pub measured: u64,
    /// Of those, completed.
    pub completed: u64,
    /// Completions inside the window ÷ window (METHODOLOGY §9).
    pub request_throughput_per_s: Option<f64>,
    /// o200k answer tokens of those completions ÷ window.
    pub output_tokens_per_s: Option<f64>,
    /// TTFA p50, p90, p99 (ms).
    pub ttfa_ms: [Option<f64>; 3],
    /// ITL p50, p90, p99 (ms).
    pub itl_ms: [Option<f64>; 3],
    /// E2E p50, p90, p99 (ms).
    pub e2e_ms: [Option<f64>; 3],
    /// TPOT p50 (ms).
    pub tpot_p50_ms: Option<f64>,
    /// Visible-answer tokens/s, p50.
    pub tokens_per_s_p50: Option<f64>,
    /// Good requests ÷ measured.
    pub goodput_fraction: f64,
    /// Good requests ÷ window.
    pub goodput_per_s: Option<f64>,
    /// Failures by class.
    pub failures: LoadFailures,
    /// Measured requests lost to our own machinery.
    pub harness_failures: u64,
    /// The one sustained rule's verdict.
    pub sustained: bool,
    /// Completed measured requests asked to hold a length (`None`: none were).
    pub held_requests: Option<u64>,
    /// Of those, the answers shorter than asked.
    pub held_short: Option<u64>,
}

/// A row's saturation point for one kind of load (`None` fields: no step of that kind was
/// sustained).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSaturationRow {
    /// Lane label or provider key.
    pub row: String,
    /// `closed` (users) or `open` (target rate).
    pub kind: String,
    /// The step's index.
    pub step: Option<u64>,
    /// The step's label.
    pub label: Option<String>,
    /// Its load.
    pub load: Option<f64>,
    /// The achieved rate there, per second.
    pub achieved_per_s: Option<f64>,
}

/// One request of a load run.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadRequestRow {
    /// Request id.
    pub request_id: String,
    /// The step (and full-run phase) it belongs to.
    pub step: u64,
    /// Lane label.
    pub lane: String,
    /// The probe's wall clock at its send (RFC 3339).
    pub started_at: String,
    /// Scheduled send, ms from the step's start (open loop).
    pub scheduled_ms: Option<f64>,
    /// Actual send, ms from the step's start.
    pub sent_ms: Option<f64>,
    /// Time to first output (ms from the send).
    pub ttfo_ms: Option<f64>,
    /// Time to first answer token.
    pub ttfa_ms: Option<f64>,
    /// End to end.
    pub e2e_ms: Option<f64>,
    /// How it ended.
    pub outcome: Outcome,
    /// The finer reason of a failure.
    pub error_type: Option<ErrorType>,
    /// HTTP status, when a response came.
    pub http_status: Option<u16>,
    /// Scheduled (or, closed loop, sent) inside the step's measured window.
    pub measured: bool,
    /// o200k tokens of the prompt as sent.
    pub input_tokens: u64,
    /// o200k tokens of the answer.
    pub answer_tokens: Option<u64>,
    /// Provider-reported prompt tokens.
    pub usage_prompt_tokens: Option<u64>,
    /// Provider-reported completion tokens.
    pub usage_completion_tokens: Option<u64>,
    /// Exactly right (the `tasks` workload only).
    pub correct: Option<bool>,
    /// Output length held with `ignore_eos`.
    pub held_tokens: Option<u64>,
}
