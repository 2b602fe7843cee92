//! Figures per turn index of a conversation step: how latency, speed and success move as a
//! conversation's context grows (turn k re-sends turns 0..k and their answers), per lane and
//! pooled over the step's lanes, measured requests only, each p50 with its bootstrap interval.

use super::StepResults;
use super::compute::{LoadMetrics, REPORT_REPLICATES};
use super::tables::{Table, interval as bracket, step_cell};
use crate::metrics::step::is_measured;
use crate::metrics::{RequestSample, RequestTimings};
use openbench_common::record::Outcome;
use openbench_common::stats::nearest_rank;
use openbench_report_kit::bootstrap::sample_percentile_interval;
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

/// The figures of one turn index of a conversation step on one lane (or pooled over its lanes).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnRow {
    /// The lane's label, or `pooled` (every lane's requests, when the step has more than one).
    pub lane: String,
    /// 0-based turn index.
    pub turn: u64,
    /// Measured requests at this turn (harness failures set apart).
    pub requests: usize,
    /// Of which completed.
    pub completed: usize,
    /// TTFA p50 of the completed, ms.
    pub ttfa_p50_ms: Option<f64>,
    /// Its 95% bootstrap interval over the turn's requests ([`sample_percentile_interval`];
    /// `None` under 30 values).
    pub ttfa_p50_interval_ms: Option<(f64, f64)>,
    /// E2E p50 of the completed, ms.
    pub e2e_p50_ms: Option<f64>,
    /// Its 95% bootstrap interval.
    pub e2e_p50_interval_ms: Option<(f64, f64)>,
    /// Visible-answer tokens/s p50 of the completed.
    pub tokens_per_s_p50: Option<f64>,
    /// Its 95% bootstrap interval.
    pub tokens_per_s_p50_interval: Option<(f64, f64)>,
    /// Mean context length: o200k tokens of every message sent.
    pub context_tokens_mean: Option<f64>,
    /// Mean cached prompt tokens over the requests whose usage reports them; `None` when none
    /// did.
    pub cached_tokens_mean: Option<f64>,
    /// Exactly right answers ÷ scored requests, where the turn is scored (a scored run's turn
    /// 0, and follow-ups with a gold).
    pub task_success: Option<f64>,
}

/// One lane's measured samples by turn index.
type ByTurn<'a> = Vec<Vec<(&'a RequestSample, SampleTurn)>>;

/// The pooled rows' lane name.
pub const POOLED: &str = "pooled";

/// The rows of `step` (none unless it is a conversation step): per lane in the step's lane
/// order, then pooled over its lanes when it has more than one, each by turn index; intervals
/// drawn from `seed` and `STEP/LANE/turn-K/FIGURE`.
pub fn turn_rows(step: &StepResults, scored: bool, seed: u64) -> Vec<TurnRow> {
    let mut groups: Vec<(&str, ByTurn<'_>)> = step
        .lanes
        .iter()
        .map(|l| (l.lane.as_str(), Vec::new()))
        .collect();
    if groups.len() > 1 {
        groups.push((POOLED, Vec::new()));
    }
    for (sample, turn) in step.samples.iter().zip(&step.turns) {
        if !is_measured(sample, &step.window) || sample.outcome == Outcome::HarnessError {
            continue;
        }
        let k = usize::try_from(turn.turn).unwrap_or(usize::MAX);
        for (lane, by_turn) in groups.iter_mut() {
            if *lane != sample.lane && *lane != POOLED {
                continue;
            }
            if k >= by_turn.len() {
                by_turn.resize_with(k.saturating_add(1), Vec::new);
            }
            by_turn[k].push((sample, *turn));
        }
    }
    let mut rows = Vec::new();
    for (lane, by_turn) in &groups {
        for (k, at) in by_turn.iter().enumerate().filter(|(_, at)| !at.is_empty()) {
            let interval = |values: &[f64], figure: &str| {
                let label = format!("{}/{lane}/turn-{k}/{figure}", step.index);
                sample_percentile_interval(values, 0.5, REPORT_REPLICATES, seed, &label)
            };
            rows.push(row(lane, k as u64, at, scored, interval));
        }
    }
    rows
}

fn row(
    lane: &str,
    turn: u64,
    at: &[(&RequestSample, SampleTurn)],
    scored: bool,
    interval: impl Fn(&[f64], &str) -> Option<(f64, f64)>,
) -> TurnRow {
    let completed: Vec<RequestTimings> = at
        .iter()
        .filter(|(s, _)| s.outcome == Outcome::Completed)
        .map(|(s, _)| RequestTimings::of(s))
        .collect();
    let mean = |values: Vec<f64>| {
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let ttfa: Vec<f64> = completed.iter().filter_map(|t| t.ttfa_ms).collect();
    let e2e: Vec<f64> = completed.iter().filter_map(|t| t.e2e_ms).collect();
    let speed: Vec<f64> = completed.iter().filter_map(|t| t.tokens_per_s).collect();
    let right = at.iter().filter(|(s, _)| s.correct == Some(true)).count();
    let scored_here = at.iter().filter(|(s, _)| s.correct.is_some()).count();
    TurnRow {
        lane: lane.to_string(),
        turn,
        requests: at.len(),
        completed: completed.len(),
        ttfa_p50_ms: nearest_rank(&ttfa, 0.5),
        ttfa_p50_interval_ms: interval(&ttfa, "ttfa_p50"),
        e2e_p50_ms: nearest_rank(&e2e, 0.5),
        e2e_p50_interval_ms: interval(&e2e, "e2e_p50"),
        tokens_per_s_p50: nearest_rank(&speed, 0.5),
        tokens_per_s_p50_interval: interval(&speed, "tokens_per_s_p50"),
        context_tokens_mean: mean(at.iter().map(|(s, _)| s.input_tokens as f64).collect()),
        cached_tokens_mean: mean(
            at.iter()
                .filter_map(|(_, t)| t.cached_tokens.map(|c| c as f64))
                .collect(),
        ),
        task_success: (scored && scored_here > 0).then(|| right as f64 / scored_here as f64),
    }
}

/// A p50 with its interval: `48.2 [45.1, 50.3]`, or the value alone without one.
fn with_interval(value: Option<f64>, interval: Option<(f64, f64)>) -> String {
    match interval {
        Some(_) => format!("{} {}", ms(value), bracket(interval)),
        None => ms(value),
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
                    t.lane.clone(),
                    t.turn.to_string(),
                    t.requests.to_string(),
                    t.completed.to_string(),
                    with_interval(t.ttfa_p50_ms, t.ttfa_p50_interval_ms),
                    with_interval(t.e2e_p50_ms, t.e2e_p50_interval_ms),
                    with_interval(t.tokens_per_s_p50, t.tokens_per_s_p50_interval),
                    ms(t.context_tokens_mean),
                    ms(t.cached_tokens_mean),
                    pct(t.task_success),
                ]
            })
        })
        .collect();
    (!rows.is_empty()).then(|| Table {
        title: "Conversations per turn".into(),
        intro: Some(format!(
            "Turn k re-sends turns 0..k and their answers; per lane (and pooled over a step's \
                 lanes), measured requests. [low, high]: 95% bootstrap interval of the p50 over \
                 the turn's requests ({REPORT_REPLICATES} replicates; none under 30 values). \
                 Context: mean o200k tokens sent; cached: mean cached prompt tokens where usage \
                 reports them."
        )),
        headers: [
            "Step",
            "Lane",
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
        names: 2,
        empty: "",
        after: Vec::new(),
    })
}

#[cfg(test)]
#[path = "turns_tests.rs"]
mod tests;
