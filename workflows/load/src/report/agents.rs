//! Figures of an agent step (docs/agents.md): per step index (how each model call of a run
//! fares as its context grows with calls and results), by lane and pooled, and per agent run, by
//! lane and pooled (time to final answer, model calls, tokens, exact success on the final answer
//! and on the tool calls). Measured requests only; a run counts when its first request is
//! measured and it ended (at its answer, its step limit or a failed step) before the step did.

use super::StepResults;
use super::compute::LoadMetrics;
use super::tables::{Table, step_cell};
use crate::metrics::step::is_measured;
use crate::run::agent::StepEnd;
use openbench_common::record::Outcome;
use openbench_common::stats::nearest_rank;
use openbench_report_kit::format::{one, pct};
use serde::Serialize;

/// One sample's place in its agent run and what its model call did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgentSampleStep {
    /// 0-based step index within its run.
    pub step: u64,
    /// Time to the first output (answer text or tool-call token), ms.
    pub first_output_ms: Option<f64>,
    /// Time to the last output (the last answer event, or the call's last token), ms; completed
    /// calls only.
    pub end_ms: Option<f64>,
    /// The call made a tool call.
    pub called: bool,
}

/// One agent run as its records left it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRun {
    /// Lane label.
    pub lane: String,
    /// Its requests, as indices into the step's samples, in order.
    pub samples: Vec<usize>,
    /// How it ended (its last record's [`StepEnd`]; `Continues`: the step ended first).
    pub end: StepEnd,
    /// The final answer is exactly the gold.
    pub answer_right: bool,
    /// Its tool calls are exactly the expected ones.
    pub calls_right: bool,
    /// Prompt plus completion tokens of its requests, as their usage reports them (`None` when
    /// none did).
    pub tokens: Option<u64>,
}

/// An agent step's runs and each sample's step, as read from its records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentResults {
    /// `steps[i]` is sample i's place.
    pub steps: Vec<AgentSampleStep>,
    /// Every run, slot by slot.
    pub runs: Vec<AgentRun>,
}

/// The figures of one step index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentStepRow {
    /// Lane label or `pooled`.
    pub name: String,
    /// 0-based step index.
    pub step: u64,
    /// Measured requests at this step (harness failures set apart).
    pub requests: usize,
    /// Of which completed.
    pub completed: usize,
    /// Of the completed, those that made a tool call.
    pub tool_calls: usize,
    /// Time to first output p50 of the completed, ms (answer text or tool-call token).
    pub ttfo_p50_ms: Option<f64>,
    /// Its p99, ms.
    pub ttfo_p99_ms: Option<f64>,
    /// E2E p50 of the completed, ms (last answer event or last tool-call token).
    pub e2e_p50_ms: Option<f64>,
    /// Mean prompt tokens the usage reports.
    pub prompt_tokens_mean: Option<f64>,
    /// Mean completion tokens the usage reports.
    pub completion_tokens_mean: Option<f64>,
}

/// The figures of one lane's (or all lanes') runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentRunRow {
    /// Lane label or `pooled`.
    pub name: String,
    /// Measured runs that ended.
    pub runs: usize,
    /// Of which ended with a final answer.
    pub answered: usize,
    /// Of which hit the step limit.
    pub step_limit: usize,
    /// Of which ended at a failed step (or a malformed or truncated call).
    pub failed: usize,
    /// Measured runs the step ended before they did (not in the figures).
    pub unfinished: usize,
    /// Mean model calls per run.
    pub model_calls_mean: Option<f64>,
    /// Time to final answer p50 over the answered runs: the run's first send to its last
    /// request's end, think time included, ms.
    pub time_to_answer_p50_ms: Option<f64>,
    /// Its p95.
    pub time_to_answer_p95_ms: Option<f64>,
    /// Mean prompt plus completion tokens per run (runs whose usage reports them).
    pub tokens_per_run_mean: Option<f64>,
    /// Runs whose final answer is exactly right ÷ runs.
    pub answer_success: Option<f64>,
    /// Runs whose tool calls are exactly the expected ones ÷ runs.
    pub tool_call_success: Option<f64>,
}

/// An agent step's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentView {
    /// Per lane, then pooled, each per step index.
    pub steps: Vec<AgentStepRow>,
    /// Per lane, then pooled.
    pub runs: Vec<AgentRunRow>,
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The figures of `step` (none unless it is an agent step).
pub fn view(step: &StepResults) -> Option<AgentView> {
    let agent = step.agent.as_ref()?;
    let measured = |i: usize| {
        step.samples
            .get(i)
            .is_some_and(|s| is_measured(s, &step.window) && s.outcome != Outcome::HarnessError)
    };
    // Each lane's measured samples by step index, then every lane's.
    let rows_of = |name: &str, keep: &dyn Fn(usize) -> bool| {
        let mut by_step: Vec<Vec<usize>> = Vec::new();
        for (i, at) in agent.steps.iter().enumerate() {
            if !measured(i) || !keep(i) {
                continue;
            }
            let k = usize::try_from(at.step).unwrap_or(usize::MAX);
            if k >= by_step.len() {
                by_step.resize_with(k.saturating_add(1), Vec::new);
            }
            by_step[k].push(i);
        }
        by_step
            .iter()
            .enumerate()
            .filter(|(_, at)| !at.is_empty())
            .map(|(k, at)| step_row(name, k as u64, at, step, agent))
            .collect::<Vec<_>>()
    };
    let mut steps: Vec<AgentStepRow> = step
        .lanes
        .iter()
        .flat_map(|lane| {
            rows_of(&lane.lane, &|i| {
                step.samples.get(i).is_some_and(|s| s.lane == lane.lane)
            })
        })
        .collect();
    steps.extend(rows_of("pooled", &|_| true));
    let counted: Vec<&AgentRun> = agent
        .runs
        .iter()
        .filter(|r| r.samples.first().is_some_and(|&i| measured(i)))
        .collect();
    let mut runs: Vec<AgentRunRow> = step
        .lanes
        .iter()
        .map(|lane| {
            let mine: Vec<&AgentRun> = counted
                .iter()
                .copied()
                .filter(|r| r.lane == lane.lane)
                .collect();
            run_row(&lane.lane, &mine, step)
        })
        .collect();
    runs.push(run_row("pooled", &counted, step));
    Some(AgentView { steps, runs })
}

fn step_row(
    name: &str,
    k: u64,
    at: &[usize],
    step: &StepResults,
    agent: &AgentResults,
) -> AgentStepRow {
    let completed: Vec<usize> = at
        .iter()
        .copied()
        .filter(|&i| step.samples[i].outcome == Outcome::Completed)
        .collect();
    let rank = |f: &dyn Fn(&AgentSampleStep) -> Option<f64>, q: f64| {
        let values: Vec<f64> = completed
            .iter()
            .filter_map(|&i| f(&agent.steps[i]))
            .collect();
        nearest_rank(&values, q)
    };
    let usage = |f: &dyn Fn(usize) -> Option<u64>| {
        mean(
            &at.iter()
                .filter_map(|&i| f(i))
                .map(|v| v as f64)
                .collect::<Vec<_>>(),
        )
    };
    AgentStepRow {
        name: name.to_string(),
        step: k,
        requests: at.len(),
        completed: completed.len(),
        tool_calls: completed.iter().filter(|&&i| agent.steps[i].called).count(),
        ttfo_p50_ms: rank(&|s| s.first_output_ms, 0.5),
        ttfo_p99_ms: rank(&|s| s.first_output_ms, 0.99),
        e2e_p50_ms: rank(&|s| s.end_ms, 0.5),
        prompt_tokens_mean: usage(&|i| step.samples[i].usage_prompt_tokens),
        completion_tokens_mean: usage(&|i| step.samples[i].usage_completion_tokens),
    }
}

fn run_row(name: &str, runs: &[&AgentRun], step: &StepResults) -> AgentRunRow {
    let ended: Vec<&AgentRun> = runs
        .iter()
        .copied()
        .filter(|r| r.end != StepEnd::Continues)
        .collect();
    let count = |end: StepEnd| ended.iter().filter(|r| r.end == end).count();
    let n = ended.len();
    let share = |k: usize| (n > 0).then(|| k as f64 / n as f64);
    let times: Vec<f64> = ended
        .iter()
        .filter(|r| r.end == StepEnd::Answered)
        .filter_map(|r| {
            let first = step.samples.get(*r.samples.first()?)?;
            let last = step.samples.get(*r.samples.last()?)?;
            // A sample's end is ms after its own send; sends are ms from the step's start.
            Some(last.sent_ms + last.finished_ms - first.sent_ms)
        })
        .collect();
    let calls: Vec<f64> = ended.iter().map(|r| r.samples.len() as f64).collect();
    let tokens: Vec<f64> = ended
        .iter()
        .filter_map(|r| r.tokens.map(|t| t as f64))
        .collect();
    AgentRunRow {
        name: name.to_string(),
        runs: n,
        answered: count(StepEnd::Answered),
        step_limit: count(StepEnd::StepLimit),
        failed: count(StepEnd::Failed),
        unfinished: runs.len() - n,
        model_calls_mean: mean(&calls),
        time_to_answer_p50_ms: nearest_rank(&times, 0.5),
        time_to_answer_p95_ms: nearest_rank(&times, 0.95),
        tokens_per_run_mean: mean(&tokens),
        answer_success: share(ended.iter().filter(|r| r.answer_right).count()),
        tool_call_success: share(ended.iter().filter(|r| r.calls_right).count()),
    }
}

/// The report's two agent tables; none when no step runs agents (so other reports keep their
/// bytes).
pub fn tables(m: &LoadMetrics) -> Vec<Table> {
    let views: Vec<_> = m
        .steps
        .iter()
        .filter_map(|s| s.agent.as_ref().map(|a| (s, a)))
        .collect();
    if views.is_empty() {
        return Vec::new();
    }
    let steps = views
        .iter()
        .flat_map(|(s, a)| {
            a.steps.iter().map(move |r| {
                vec![
                    step_cell(s),
                    r.name.clone(),
                    r.step.to_string(),
                    r.requests.to_string(),
                    r.completed.to_string(),
                    r.tool_calls.to_string(),
                    one(r.ttfo_p50_ms),
                    one(r.ttfo_p99_ms),
                    one(r.e2e_p50_ms),
                    one(r.prompt_tokens_mean),
                    one(r.completion_tokens_mean),
                ]
            })
        })
        .collect();
    let runs = views
        .iter()
        .flat_map(|(s, a)| {
            a.runs.iter().map(move |r| {
                vec![
                    step_cell(s),
                    r.name.clone(),
                    r.runs.to_string(),
                    r.answered.to_string(),
                    r.step_limit.to_string(),
                    r.failed.to_string(),
                    r.unfinished.to_string(),
                    one(r.model_calls_mean),
                    one(r.time_to_answer_p50_ms),
                    one(r.time_to_answer_p95_ms),
                    one(r.tokens_per_run_mean),
                    pct(r.answer_success),
                    pct(r.tool_call_success),
                ]
            })
        })
        .collect();
    let headers = |h: &[&str]| h.iter().map(|s| s.to_string()).collect();
    vec![
        Table {
            title: "Agent steps".into(),
            intro: Some(
                "Model call k of a run re-sends calls 0..k, their tool calls and the harness's \
                 results; per lane, then pooled, measured requests. First output: answer text or \
                 tool-call token; tokens: usage means."
                    .into(),
            ),
            headers: headers(&[
                "Step",
                "Lane",
                "Agent step",
                "Requests",
                "Completed",
                "Tool calls",
                "First output p50",
                "First output p99",
                "E2E p50",
                "Prompt tokens",
                "Completion tokens",
            ]),
            rows: steps,
            names: 2,
            empty: "",
            after: Vec::new(),
        },
        Table {
            title: "Agent runs".into(),
            intro: Some(
                "A run ends at its final answer, its step limit or a failed step. Time to answer: \
                 first send to the final answer's end, think time included (answered runs). \
                 Success: exact final answer; exact tool calls (names and arguments)."
                    .into(),
            ),
            headers: headers(&[
                "Step",
                "Lane",
                "Runs",
                "Answered",
                "Step limit",
                "Failed",
                "Unfinished",
                "Model calls",
                "Time to answer p50",
                "Time to answer p95",
                "Tokens/run",
                "Answer success",
                "Tool-call success",
            ]),
            rows: runs,
            names: 2,
            empty: "",
            after: Vec::new(),
        },
    ]
}
