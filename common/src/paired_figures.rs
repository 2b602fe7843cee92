//! What a paired-rounds run hands the results store: its lanes, one row per request as its report
//! scored it, the report's figures per lane and item group, and its paired comparisons. The
//! workflow fills these from its own report computation
//! ([`crate::workflow::Workflow::paired_figures`]), so the store keeps them without depending on
//! the workflow or scoring anything itself (docs/results-store.md), as a load run hands it
//! [`crate::load_figures::LoadFigures`].
//!
//! Enum values travel as the labels the run directory's files spell them (their serde names:
//! `completed`, `valid_result`, `http_429`), so a stored label reads like the artifact's.

use crate::record::{ErrorType, Outcome, Usage};
use std::path::PathBuf;

/// Everything the store keeps of one paired-rounds run.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedFigures {
    /// The records file whose bytes (with the lock's and the status) key the stored content.
    pub records_file: PathBuf,
    /// The run's lanes in the report's order: (lane label, provider key, region).
    pub lanes: Vec<(String, String, String)>,
    /// Rounds the report counted.
    pub rounds: u64,
    /// One row per final record, in report order (round, lane, request id).
    pub requests: Vec<PairedRequestRow>,
    /// Every numeric figure of every summary row (pooled and per group), named by its path in
    /// `metrics.json` (`e2e_latency_p50`, `usage.cost_usd`, `failure_breakdown.http_429`, …).
    pub metrics: Vec<PairedMetricRow>,
    /// Rounds with a winner (the denominator of every win share).
    pub rounds_with_winner: u64,
    /// Each lane's wins (`artifacts/paired-comparisons.json`'s `wins`).
    pub wins: Vec<PairedWinRow>,
    /// Each pair's E2E differences (`artifacts/paired-comparisons.json`'s `pairs`).
    pub pairs: Vec<PairedPairRow>,
    /// The run's validity section (docs/validity.md); `None` for a run made before it.
    pub validity: Option<crate::validity::assess::ValiditySection>,
    /// A repeated run's headline figures per repeat and across repeats (micro-single-task's
    /// `plans.repeats`), per lane and figure; empty for a run made once.
    pub repeats: Vec<PairedRepeatRow>,
}

/// One headline figure of one lane over a repeated paired run's repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedRepeatRow {
    /// Lane label.
    pub lane: String,
    /// The figure's `metrics.json` name (`task_success_rate`, `ttfa_p50`, …).
    pub figure: String,
    /// Each repeat's value, in repeat order.
    pub per_repeat: Vec<Option<f64>>,
    /// Across the repeats that had a value: (repeats, mean, 95% t interval low, high).
    pub across: Option<(u64, f64, f64, f64)>,
}

/// One scored request of a paired run.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedRequestRow {
    /// Request id.
    pub request_id: String,
    /// Round index.
    pub round_index: u64,
    /// Index into [`PairedFigures::lanes`].
    pub lane_index: u32,
    /// The item's opaque key.
    pub item_id: String,
    /// The item's group (micro-single-task: its task family).
    pub group: String,
    /// The probe's wall clock at its send (RFC 3339); empty without a record.
    pub started_at: String,
    /// The probe that sent it (`region@host-hash`).
    pub probe_id: Option<String>,
    /// How it ended.
    pub outcome: Outcome,
    /// The scoring class's label (`valid_result`, `incorrect_result`, …).
    pub class: String,
    /// The scoring or failure error's label.
    pub error_type: Option<String>,
    /// The record's own failure reason.
    pub failure_error_type: Option<ErrorType>,
    /// HTTP status of a failure, when a response came.
    pub http_status: Option<u16>,
    /// Exactly right.
    pub correct: bool,
    /// Schema-valid answer.
    pub schema_valid: bool,
    /// Bit i set when field i of the item's schema is correct.
    pub field_bits: u16,
    /// Time to first output, ms.
    pub ttfo_ms: Option<f64>,
    /// Time to first answer token (or tool-call token), ms.
    pub ttfa_ms: Option<f64>,
    /// End to end, ms.
    pub e2e_ms: Option<f64>,
    /// Visible-answer tokens/s.
    pub tokens_per_second: Option<f64>,
    /// o200k tokens of the answer, from the record.
    pub answer_tokens: Option<u64>,
    /// Reasoning tokens before the first answer token.
    pub reasoning_tokens_before_answer: Option<u64>,
    /// Non-empty reasoning text was emitted.
    pub reasoning_emitted: bool,
    /// `finish_reason: length`.
    pub truncated_by_length: bool,
    /// A completed response (its model echo was checked).
    pub completed: bool,
    /// For a completed response, what was echoed when it was not the requested model.
    pub model_mismatch: Option<String>,
    /// Measured after its round's other lanes (a re-run).
    pub out_of_round: bool,
    /// Provider-reported usage.
    pub usage: Option<Usage>,
}

/// One figure of one summary row.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedMetricRow {
    /// Lane label.
    pub lane: String,
    /// The row's item group, or `pooled`.
    pub group: String,
    /// The figure's path in `metrics.json`.
    pub name: String,
    /// Its value (a boolean as 0 or 1); `None` for a null.
    pub value: Option<f64>,
}

/// One lane's paired wins.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedWinRow {
    /// Lane label.
    pub lane: String,
    /// Rounds won (ties split).
    pub wins: f64,
    /// Rounds in which the lane had an E2E.
    pub rounds_with_e2e: u64,
    /// Wins ÷ rounds with a winner.
    pub win_share: Option<f64>,
}

/// One pair of lanes' E2E differences over their shared rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedPairRow {
    /// Lane A.
    pub a: String,
    /// Lane B.
    pub b: String,
    /// Rounds where both had an E2E.
    pub count: u64,
    /// That count ÷ the rounds.
    pub coverage: Option<f64>,
    /// E2E of A − E2E of B, p50, p95 and p99 (ms).
    pub e2e_diff_ms: [Option<f64>; 3],
}
