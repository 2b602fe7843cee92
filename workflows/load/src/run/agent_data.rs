//! An agent step's records read back for the report (docs/agents.md): each record's run and
//! step replayed as a resume rebuilds them ([`AgentSource::replay`]), each run scored exactly on
//! its final answer and on its tool calls against the item it asked.

use super::agent::{AgentSource, StepEnd, Stepped};
use super::plan::source_of;
use super::run_data::RunContext;
use crate::agent_family::{item, score_answer, score_calls};
use crate::metrics::{RequestSample, RequestTimings};
use crate::report::agents::{AgentResults, AgentRun, AgentSampleStep};
use crate::spec::Step;
use openbench_common::record::TerminalRecord;
use std::collections::BTreeMap;

/// The runs of `step` when it runs agents (`kept[i]` left `samples[i]`); `None` for any other
/// step. Each sample's `correct` becomes its run's answer verdict on the run's final answer and
/// `None` on its other steps, and its input tokens the prompt tokens its usage reports (the
/// messages grow with every call, so the step's own prompt is not what was sent).
pub fn agent_results(
    ctx: &RunContext,
    step: &Step,
    kept: &[&TerminalRecord],
    samples: &mut [RequestSample],
) -> Option<AgentResults> {
    let agent = ctx.section.agent(step.written())?;
    let base = source_of(step, &ctx.section, &ctx.layout, &ctx.workload);
    let mut source = AgentSource::new(base, agent.clone(), ctx.section.seed, step.index);
    if step.model.is_open() {
        source = source.open();
    }
    let lanes = &ctx.layout.lanes;
    let stepped = source.replay(
        step.index as u32,
        |label| lanes.iter().position(|l| l.label == label),
        kept,
    );
    let mut steps = Vec::with_capacity(kept.len());
    // Runs keyed by (lane, slot, run), their sample indices in sequence order.
    let mut runs: BTreeMap<(&str, u32, u64), Vec<usize>> = BTreeMap::new();
    for (i, r) in kept.iter().enumerate() {
        let Some(at) = stepped.get(&r.request_id) else {
            steps.push(AgentSampleStep {
                step: 0,
                first_output_ms: None,
                end_ms: None,
                called: false,
            });
            continue;
        };
        let called = !r.tool_calls.is_empty();
        let timings = samples.get(i).map(RequestTimings::of);
        steps.push(AgentSampleStep {
            step: at.step,
            first_output_ms: r.ttfa_ms.or(r.ttf_tool_call_ms),
            end_ms: if called {
                r.tool_call_e2e_ms
            } else {
                timings.and_then(|t| t.e2e_ms)
            },
            called,
        });
        runs.entry((r.lane.as_str(), r.slot.unwrap_or(0), at.run))
            .or_default()
            .push(i);
    }
    let mut out = Vec::new();
    for ((lane, _, _), mut mine) in runs {
        mine.sort_by_key(|&i| kept[i].sequence);
        let (Some(&first), Some(&last)) = (mine.first(), mine.last()) else {
            continue;
        };
        let Some(Stepped { item: index, .. }) = stepped.get(&kept[first].request_id) else {
            continue;
        };
        let it = item(*index);
        let end = stepped
            .get(&kept[last].request_id)
            .map_or(StepEnd::Continues, |s| s.end);
        let answer_right = end == StepEnd::Answered && score_answer(&it, &kept[last].answer_text);
        let calls: Vec<_> = mine.iter().flat_map(|&i| &kept[i].tool_calls).collect();
        let tokens: Vec<u64> = mine
            .iter()
            .filter_map(|&i| kept[i].usage.as_ref())
            .map(|u| u.prompt_tokens.unwrap_or(0) + u.completion_tokens.unwrap_or(0))
            .collect();
        for &i in &mine {
            if let Some(s) = samples.get_mut(i) {
                s.correct = (i == last && end == StepEnd::Answered).then_some(answer_right);
                s.input_tokens = kept[i]
                    .usage
                    .as_ref()
                    .and_then(|u| u.prompt_tokens)
                    .unwrap_or(0);
            }
        }
        out.push(AgentRun {
            lane: lane.to_string(),
            samples: mine,
            end,
            answer_right,
            calls_right: score_calls(&it, &calls),
            tokens: (!tokens.is_empty()).then(|| tokens.iter().sum()),
        });
    }
    Some(AgentResults { steps, runs: out })
}
