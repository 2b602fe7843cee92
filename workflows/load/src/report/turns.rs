//! Figures per turn index of a conversation step: how latency, speed and success move as a
//! conversation's context grows (turn k re-sends turns 0..k and their answers), pooled over the
//! step's lanes, measured requests only.

use super::StepResults;
use super::compute::LoadMetrics;
use super::tables::{Table, step_cell};
use crate::metrics::step::is_measured;
use crate::metrics::{RequestSample, RequestTimings};
use openbench_common::record::Outcome;
use openbench_common::stats::nearest_rank;
use openbench_report_kit::format::{one as ms, pct};
use serde::Serialize;

/// One sample's place in its conversation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleTurn {
    /// 0-based turn index within its conversation.
    pub turn: u64,
    /// Prompt tokens the provider said it served from its cache, when its usage reports them.
    pub cached_tokens: Option<u64>,
}

/// The figures of one turn index of a conversation step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnRow {
    /// 0-based turn index.
    pub turn: u64,
    /// Measured requests at this turn (harness failures set apart).
    pub requests: usize,
    /// Of which completed.
    pub completed: usize,
    /// TTFA p50 of the completed, ms.
    pub ttfa_p50_ms: Option<f64>,
    /// E2E p50 of the completed, ms.
    pub e2e_p50_ms: Option<f64>,
    /// Visible-answer tokens/s p50 of the completed.
    pub tokens_per_s_p50: Option<f64>,
    /// Mean context length: o200k tokens of every message sent.
    pub context_tokens_mean: Option<f64>,
    /// Mean cached prompt tokens over the requests whose usage reports them; `None` when none
    /// did.
    pub cached_tokens_mean: Option<f64>,
    /// Exactly right answers ÷ scored requests, where the turn is scored (a scored run's turn
    /// 0, and follow-ups with a gold: a meeting note's).
    pub task_success: Option<f64>,
}

/// The rows of `step`, by turn index (none unless it is a conversation step).
pub fn turn_rows(step: &StepResults, scored: bool) -> Vec<TurnRow> {
    let mut by_turn: Vec<Vec<(&RequestSample, SampleTurn)>> = Vec::new();
    for (sample, turn) in step.samples.iter().zip(&step.turns) {
        if !is_measured(sample, &step.window) || sample.outcome == Outcome::HarnessError {
            continue;
        }
        let k = usize::try_from(turn.turn).unwrap_or(usize::MAX);
        if k >= by_turn.len() {
            by_turn.resize_with(k.saturating_add(1), Vec::new);
        }
        by_turn[k].push((sample, *turn));
    }
    by_turn
        .iter()
        .enumerate()
        .filter(|(_, at)| !at.is_empty())
        .map(|(k, at)| row(k as u64, at, scored))
        .collect()
}

fn row(turn: u64, at: &[(&RequestSample, SampleTurn)], scored: bool) -> TurnRow {
    let completed: Vec<RequestTimings> = at
        .iter()
        .filter(|(s, _)| s.outcome == Outcome::Completed)
        .map(|(s, _)| RequestTimings::of(s))
        .collect();
    let p50 = |values: Vec<f64>| nearest_rank(&values, 0.5);
    let mean = |values: Vec<f64>| {
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let right = at.iter().filter(|(s, _)| s.correct == Some(true)).count();
    let scored_here = at.iter().filter(|(s, _)| s.correct.is_some()).count();
    TurnRow {
        turn,
        requests: at.len(),
        completed: completed.len(),
        ttfa_p50_ms: p50(completed.iter().filter_map(|t| t.ttfa_ms).collect()),
        e2e_p50_ms: p50(completed.iter().filter_map(|t| t.e2e_ms).collect()),
        tokens_per_s_p50: p50(completed.iter().filter_map(|t| t.tokens_per_s).collect()),
        context_tokens_mean: mean(at.iter().map(|(s, _)| s.input_tokens as f64).collect()),
        cached_tokens_mean: mean(
            at.iter()
                .filter_map(|(_, t)| t.cached_tokens.map(|c| c as f64))
                .collect(),
        ),
        task_success: (scored && scored_here > 0).then(|| right as f64 / scored_here as f64),
    }
}

/// The report's table of every conversation step's turns; `None` when no step holds
/// conversations (so other reports keep their bytes).
pub fn table(m: &LoadMetrics) -> Option<Table> {
    let rows: Vec<Vec<String>> = m
        .steps
        .iter()
        .flat_map(|s| {
            s.turns.iter().map(move |t| {
                vec![
                    step_cell(s),
                    t.turn.to_string(),
                    t.requests.to_string(),
                    t.completed.to_string(),
                    ms(t.ttfa_p50_ms),
                    ms(t.e2e_p50_ms),
                    ms(t.tokens_per_s_p50),
                    ms(t.context_tokens_mean),
                    ms(t.cached_tokens_mean),
                    pct(t.task_success),
                ]
            })
        })
        .collect();
    (!rows.is_empty()).then(|| Table {
        title: "Conversations per turn".into(),
        intro: Some(
            "Turn k re-sends turns 0..k and their answers; pooled over lanes, measured requests. \
             Context: mean o200k tokens sent; cached: mean cached prompt tokens where usage \
             reports them."
                .into(),
        ),
        headers: [
            "Step",
            "Turn",
            "Requests",
            "Completed",
            "TTFA p50",
            "E2E p50",
            "Tokens/s p50",
            "Context tokens",
            "Cached tokens",
            "Task success",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        names: 1,
        empty: "",
        after: Vec::new(),
    })
}
