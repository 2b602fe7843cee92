//! One request as any load-shaped report reads it: its sample (the record's times, outcome and
//! tokens, and the answer-bearing events from the events file), its timings (TTFO, TTFA, E2E,
//! TPOT, ITL, send lag), whether it meets an SLO, and the nearest-rank summary of a population.
//!
//! The load workflow's report and `watch`'s live load row both read requests here, so the two
//! see the same definitions (METHODOLOGY §9, docs/load.md).
//!
//! - [`RequestSample`] and [`sample_of`]: what the metrics need from one executed request.
//! - [`events`]: answer-bearing events per request, read one events line at a time.
//! - [`timings`]: one request's timings and its SLO check.

pub mod events;
pub mod timings;

pub use timings::{RequestTimings, Slo, SloMetric, is_good};

use openbench_common::record::{ErrorType, Outcome, TerminalRecord};
use openbench_common::stats::nearest_rank;
use serde::Serialize;

/// What the metrics need from one executed request. Send times are milliseconds from the
/// step's start; every other time is milliseconds from the actual send (the record's clock zero).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSample {
    /// Lane label (`provider` or `provider@region`).
    pub lane: String,
    /// When the arrival process scheduled it (open loop only).
    pub scheduled_ms: Option<f64>,
    /// When it was actually handed to the HTTP client.
    pub sent_ms: f64,
    /// Time to first output (reasoning or answer), when there was output.
    pub ttfo_ms: Option<f64>,
    /// Arrival offsets of every answer-bearing event, ascending (METHODOLOGY §3 events with
    /// non-empty visible answer text).
    pub answer_events_ms: Vec<f64>,
    /// The same chunks as read groups (METHODOLOGY §9): the answer-bearing events of one network
    /// read share one timestamp and form one group, with the o200k tokens of their text. Empty
    /// when the events were not read (the runner's replay), which gives no per-token ITL.
    pub read_groups: Vec<ReadGroup>,
    /// When the request ended, whatever its outcome (stream end, failure, deadline), ms after
    /// its send (`sent_ms`).
    pub finished_ms: f64,
    /// o200k tokens of the prompt as sent.
    pub input_tokens: u64,
    /// o200k tokens of the whole reconstructed answer.
    pub answer_tokens: u64,
    /// Provider-reported prompt tokens, when returned.
    pub usage_prompt_tokens: Option<u64>,
    /// Provider-reported completion tokens, when returned (reasoning included, as providers
    /// count them).
    pub usage_completion_tokens: Option<u64>,
    /// How it ended.
    pub outcome: Outcome,
    /// The finer reason of a failure.
    pub error_type: Option<ErrorType>,
    /// With task scoring on: whether the answer was exactly right; `None` when scoring is off.
    pub correct: Option<bool>,
    /// The output length the request held (`max_tokens` sent with `ignore_eos`); `None` when the
    /// length was a ceiling only.
    pub held_tokens: Option<u64>,
    /// The server said it stopped at the length (`finish_reason: length`).
    pub stopped_at_length: bool,
    /// The probe replica that sent it (`eu#1`, the probe key), in a region with replicas; its
    /// send lag is judged per replica (docs/load.md, "Probe replicas").
    pub replica: Option<String>,
}

impl RequestSample {
    /// True when the request completed under a held output length with a shorter answer
    /// (METHODOLOGY §9, "Held length"): a server that ignored `ignore_eos`. Length is the
    /// provider's usage completion count when it reported one (the tokenizer `max_tokens`
    /// counts in). Without usage, an answer the server ended with `finish_reason: length` ran
    /// to the length (its tokenizer's, which o200k may count far lower: 64 Gemma tokens of
    /// JSON were 13 o200k tokens); any other end is judged by its o200k count.
    pub fn fell_short(&self) -> bool {
        let Some(asked) = self.held_tokens else {
            return false;
        };
        let tokens = match self.usage_completion_tokens {
            Some(usage) => usage,
            None if self.stopped_at_length => return false,
            None => self.answer_tokens,
        };
        self.outcome == Outcome::Completed && tokens < asked
    }
}

/// Answer-bearing events of one network read (METHODOLOGY §9, "Read group").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadGroup {
    /// The read's time, ms from the send (every event of the group has it).
    pub at_ms: f64,
    /// o200k tokens of the group's visible text (at least 1).
    pub tokens: u64,
}

/// Per-token inter-token latency (METHODOLOGY §9): for each read group `j ≥ 2`, its gap from the
/// group before shared by its `m_j` tokens, `m_j` values of `(T_j − T_(j−1)) / m_j`. Groups at
/// 100, 130, 190 ms carrying 1, 1, 3 tokens give 30, 20, 20, 20 ms.
pub fn itl_per_token(groups: &[ReadGroup]) -> Vec<f64> {
    groups
        .windows(2)
        .flat_map(|w| {
            let m = w[1].tokens.max(1);
            let share = (w[1].at_ms - w[0].at_ms) / m as f64;
            std::iter::repeat_n(share, m as usize)
        })
        .collect()
}

/// A nearest-rank summary of one population (METHODOLOGY §6). Percentile fields are `None` for
/// an empty population.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Distribution {
    /// Population size.
    pub count: usize,
    /// Arithmetic mean.
    pub mean: Option<f64>,
    /// 1st percentile (the tokens/s p99 floor).
    pub p01: Option<f64>,
    /// 5th percentile (the tokens/s p95 floor).
    pub p05: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 95th percentile.
    pub p95: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

impl Distribution {
    /// Summarises `values` (NaN never enters: every value is a difference of finite times).
    pub fn of(values: &[f64]) -> Distribution {
        let at = |p| nearest_rank(values, p);
        Distribution {
            count: values.len(),
            mean: (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64),
            p01: at(0.01),
            p05: at(0.05),
            p50: at(0.50),
            p90: at(0.90),
            p95: at(0.95),
            p99: at(0.99),
        }
    }
}

/// One record as the metrics see it. `chunks` are its answer-bearing event offsets from the
/// events file; without them (the runner's replay, which reads no events) the first and last
/// stand in, which gives the same TTFA, E2E and TPOT (and so the same goodput and verdicts).
pub fn sample_of(
    record: &TerminalRecord,
    chunks: Option<Vec<f64>>,
    input_tokens: u64,
    correct: Option<bool>,
) -> RequestSample {
    let answer_events_ms = chunks.unwrap_or_else(|| {
        let mut ends: Vec<f64> = [record.ttfa_ms, record.e2e_ms]
            .into_iter()
            .flatten()
            .collect();
        ends.dedup();
        ends
    });
    let finished_ms = record
        .stream_end_ms
        .or(record.e2e_ms)
        .or(record.headers_ms)
        .unwrap_or(0.0);
    RequestSample {
        lane: record.lane.clone(),
        scheduled_ms: record.scheduled_offset_ms,
        sent_ms: record.sent_offset_ms.unwrap_or(0.0),
        ttfo_ms: record.ttfo_ms,
        answer_events_ms,
        read_groups: Vec::new(),
        finished_ms,
        input_tokens,
        answer_tokens: record.answer_tokens.unwrap_or(0),
        usage_prompt_tokens: record.usage.as_ref().and_then(|u| u.prompt_tokens),
        usage_completion_tokens: record.usage.as_ref().and_then(|u| u.completion_tokens),
        outcome: record.outcome,
        error_type: record.error_type,
        correct,
        held_tokens: None,
        stopped_at_length: record.finish_reason.as_deref() == Some("length"),
        replica: record.replica.map(|k| {
            format!(
                "{}{}{k}",
                record.region,
                openbench_common::spec::REPLICA_SEPARATOR
            )
        }),
    }
}
