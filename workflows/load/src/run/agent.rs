//! A step's agent runs (`agent:` on a step; docs/agents.md).
//!
//! In a closed step a user (a slot) runs one agent task after another until the step's time or
//! count runs out: run r of a slot asks the agent family's item for the step's prompt number of
//! sequence r (so users and runs ask different items), offering both tools. In an open step
//! release k (slot k) starts one run, asking the item of the step's prompt number k, and the slot
//! stops when that run ends. Each later step
//! re-sends every earlier message, then the model's last turn (its text and tool calls) and one
//! tool message per call with the harness's result ([`tool_result`]). A run ends at its final
//! answer (a completed step with no tool call), after `max_steps` model calls, or at a step that
//! did not complete or left a malformed or truncated tool call: no further request is built on
//! it, and the user opens the next run at once. Everything is a pure function of the position
//! and the slot's history, so a resume rebuilds the same runs, ids and messages.

use super::workload::StepSource;
use crate::agent_family::{SYSTEM, item, tool_result, tools};
use crate::spec::{Agent, LengthDist};
use openbench_common::agent::AGENT_GROUP;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::request::{ChatMessage, Role};
use openbench_common::rng::Stream;
use openbench_common::schedule::{LoadPosition, Next, RequestContent, RequestSource, Turn};
use openbench_common::tool::ToolCall;
use std::collections::HashMap;

/// Marks a later step's item key (`agent-0003/step-2`).
pub const STEP_MARK: &str = "/step-";

/// A step's request source when its users run agents.
#[derive(Debug, Clone)]
pub struct AgentSource {
    /// The step's own source: it numbers the runs (their items) and plans the ramp.
    base: StepSource,
    /// The spec's agent settings.
    agent: Agent,
    /// The section's seed.
    seed: u64,
    /// The step's index (keys the draws).
    step: usize,
    /// An open loop: each release (slot) is one run, which stops when it ends.
    open: bool,
}

/// Where a slot stands in its runs after its history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    /// The run the next request belongs to (0-based, per slot).
    pub run: u64,
    /// Its step (0: the next request opens it).
    pub step: u64,
}

/// Why a run ended at one of its records, or that it goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepEnd {
    /// Tool calls came back: the run goes on.
    Continues,
    /// A completed step without a tool call: the final answer.
    Answered,
    /// Tool calls came back at the step limit.
    StepLimit,
    /// The step did not complete, or its tool call was malformed or truncated.
    Failed,
}

/// What a record of an agent step did to its run.
pub fn step_end(record: &TerminalRecord, step: u64, max_steps: u32) -> StepEnd {
    if record.outcome != Outcome::Completed || record.tool_call_error.is_some() {
        StepEnd::Failed
    } else if record.tool_calls.is_empty() {
        StepEnd::Answered
    } else if step + 1 >= u64::from(max_steps) {
        StepEnd::StepLimit
    } else {
        StepEnd::Continues
    }
}

/// The calls of a record with an id each: the provider's, or `call_{step}_{i}` when it sent none
/// (every dialect needs one to pair the result with its call).
pub fn calls_with_ids(record: &TerminalRecord, step: u64) -> Vec<ToolCall> {
    record
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| ToolCall {
            id: if c.id.is_empty() {
                format!("call_{step}_{i}")
            } else {
                c.id.clone()
            },
            ..c.clone()
        })
        .collect()
}

impl AgentSource {
    /// Agent runs over `base`'s numbering.
    pub fn new(base: StepSource, agent: Agent, seed: u64, step: usize) -> AgentSource {
        AgentSource {
            base,
            agent,
            seed,
            step,
            open: false,
        }
    }

    /// The same runs in an open loop: release k (slot k) starts one, asking the item of the
    /// step's prompt number k, and the slot stops when it ends (no next run).
    pub fn open(mut self) -> AgentSource {
        self.open = true;
        self
    }

    /// Think time before the request at `at` (a later step), ms: drawn from the stream (seed,
    /// `agent-think`, step, lane, slot, sequence); 0 without `think_ms`.
    pub fn think_ms(&self, at: &LoadPosition) -> f64 {
        self.agent
            .think_ms
            .as_ref()
            .map_or(0.0, |d| f64::from(self.draw(d, at)))
    }

    fn draw(&self, dist: &LengthDist, at: &LoadPosition) -> u32 {
        let keys = [
            "agent-think".to_string(),
            self.step.to_string(),
            at.lane.clone(),
            at.slot.to_string(),
            at.sequence.to_string(),
        ];
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        dist.draw(&mut Stream::derive(self.seed, &keys))
    }

    /// Where the slot stands after `history`.
    pub fn standing(&self, history: &[Turn]) -> Standing {
        let mut now = Standing { run: 0, step: 0 };
        for turn in history {
            now = match step_end(&turn.record, now.step, self.agent.max_steps) {
                StepEnd::Continues => Standing {
                    step: now.step + 1,
                    ..now
                },
                _ => Standing {
                    run: now.run + 1,
                    step: 0,
                },
            };
        }
        now
    }

    /// The item index run `run` of the slot at `at` asks (an open loop's slot holds run 0 only,
    /// the release's).
    pub fn item_index(&self, at: &LoadPosition, run: u64) -> u64 {
        let opening = if self.open {
            super::slot_replay::release_opening(at)
        } else {
            LoadPosition {
                sequence: run,
                ..at.clone()
            }
        };
        self.base.prompt_index(&opening)
    }

    /// The opening request of item `index`.
    pub fn opening(index: u64) -> RequestContent {
        let it = item(index);
        RequestContent {
            group: AGENT_GROUP.into(),
            item_key: it.key,
            messages: vec![
                ChatMessage::text(Role::System, SYSTEM.into()),
                ChatMessage::text(Role::User, it.question),
            ],
            output: None,
            tools: tools(),
        }
    }
}

/// What one record of an agent step was, rebuilt by [`AgentSource::replay`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stepped {
    /// The slot's run (0-based) it belongs to.
    pub run: u64,
    /// Its step within the run.
    pub step: u64,
    /// The item index the run asks.
    pub item: u64,
    /// What it did to its run.
    pub end: StepEnd,
}

impl AgentSource {
    /// What every record of phase `phase` was, by request id: each slot's steps replayed in
    /// sequence order as a resume rebuilds them (`lane_index` gives a lane label's place).
    pub fn replay(
        &self,
        phase: u32,
        lane_index: impl Fn(&str) -> Option<usize>,
        records: &[&TerminalRecord],
    ) -> HashMap<String, Stepped> {
        let mut out = HashMap::new();
        for slot in super::slot_replay::slots_in_order(phase, lane_index, records) {
            let mut now = Standing { run: 0, step: 0 };
            for (at, r) in slot {
                let end = step_end(r, now.step, self.agent.max_steps);
                out.insert(
                    r.request_id.clone(),
                    Stepped {
                        run: now.run,
                        step: now.step,
                        item: self.item_index(&at, now.run),
                        end,
                    },
                );
                now = match end {
                    StepEnd::Continues => Standing {
                        step: now.step + 1,
                        ..now
                    },
                    _ => Standing {
                        run: now.run + 1,
                        step: 0,
                    },
                };
            }
        }
        out
    }
}

impl RequestSource for AgentSource {
    fn request(&self, at: &LoadPosition) -> RequestContent {
        AgentSource::opening(self.item_index(at, at.sequence))
    }

    fn next(&self, at: &LoadPosition, history: &[Turn]) -> Next {
        let now = self.standing(history);
        let last = history.last().filter(|_| now.step > 0);
        let Some(last) = last else {
            // An open loop's release ran its run: the slot stops.
            if self.open && now.run > 0 {
                return Next::Stop;
            }
            // A new run: the item of its number, after the ramp for the user's first one (an
            // open loop's first step goes at its release).
            let think_ms = if at.sequence == 0 && !self.open {
                self.base.wait_ms(at)
            } else {
                0.0
            };
            return Next::Send {
                content: AgentSource::opening(self.item_index(at, now.run)),
                think_ms,
            };
        };
        let mut content = last.request.clone();
        let key = match content.item_key.find(STEP_MARK) {
            Some(cut) => &content.item_key[..cut],
            None => &content.item_key[..],
        };
        content.item_key = format!("{key}{STEP_MARK}{}", now.step);
        let calls = calls_with_ids(&last.record, now.step - 1);
        let results: Vec<ChatMessage> = calls
            .iter()
            .map(|c| ChatMessage::tool_result(c.id.clone(), tool_result(&c.name, &c.arguments)))
            .collect();
        content.messages.push(ChatMessage::assistant_calls(
            last.record.answer_text.clone(),
            calls,
        ));
        content.messages.extend(results);
        Next::Send {
            content,
            think_ms: self.think_ms(at),
        }
    }

    fn reads_history(&self) -> bool {
        true
    }
}

#[cfg(test)]
#[path = "agent_tests.rs"]
mod tests;
