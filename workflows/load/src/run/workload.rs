//! Each request's content: the workload's prompt for the request's place in its step.
//!
//! A request's index within its step is the provider's view of it, the same whatever the
//! regions: in an open loop, release k (region k mod K sends it as its (k div K)-th); in a closed
//! loop, user g's j-th request is j·N + g. Its prompt is the workload's prompt number
//! `step × 10¹² + index`, so every step and every lane asks the same prompts in the same order.

use crate::spec::{LengthDist, LoadSection, WorkloadSpec};
use crate::trace::Trace;
use crate::workload::jsonl::FilePrompt;
use crate::workload::synthetic::Synthetic;
use crate::workload::trace_prompt::trace_text;
use crate::workload::{Prompt, output_tokens};
use openbench_common::request::{ChatMessage, OutputLength, Role};
use openbench_common::schedule::{LoadPosition, Next, RequestContent, RequestSource, Turn};
use openbench_common::tokenizer::count_tokens;
use openbench_common::workflow::WorkItem;
use std::sync::Arc;

/// Prompts per step before the next step's numbering starts.
const STEP_STRIDE: u64 = 1_000_000_000_000;

/// Where a run's prompts come from.
#[derive(Debug, Clone)]
pub enum Workload {
    /// Generated prompts of exact lengths.
    Synthetic(Synthetic),
    /// Prompts read from a file, cycled.
    File {
        /// The file's prompts, in line order.
        prompts: Vec<FilePrompt>,
        /// Output length distribution (the contract's ceiling without one).
        output: Option<LengthDist>,
        /// The spec's seed.
        seed: u64,
        /// The contract's completion ceiling.
        ceiling: u32,
    },
    /// The micro-single-task items, cycled in (family, id) order.
    Tasks {
        /// The items.
        items: Vec<WorkItem>,
        /// The contract's completion ceiling.
        ceiling: u32,
    },
}

/// One request's prompt and what it is, for records and reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    /// Item group (`synthetic`, `file`, or the task family).
    pub group: String,
    /// Item key (the task's id, `line-N`, or `synthetic-N`).
    pub key: String,
    /// The prompt.
    pub prompt: Prompt,
}

impl Workload {
    /// The workload of `section`, given the file's prompts (`jsonl`) or the release's items
    /// (`tasks`), with the contract's `ceiling`.
    pub fn new(
        section: &LoadSection,
        file: Vec<FilePrompt>,
        items: Vec<WorkItem>,
        ceiling: u32,
    ) -> Workload {
        match &section.workload {
            WorkloadSpec::Synthetic {
                input_tokens,
                output_tokens,
                shared_prefix,
            } => Workload::Synthetic(Synthetic {
                input_tokens: input_tokens.clone(),
                output_tokens: output_tokens.clone(),
                shared_prefix: *shared_prefix,
                seed: section.seed,
            }),
            WorkloadSpec::Jsonl { output_tokens, .. } => Workload::File {
                prompts: file,
                output: output_tokens.clone(),
                seed: section.seed,
                ceiling,
            },
            WorkloadSpec::Tasks => {
                let mut items = items;
                items.sort_by(|a, b| (&a.group, &a.item_id).cmp(&(&b.group, &b.item_id)));
                Workload::Tasks { items, ceiling }
            }
        }
    }

    /// Prompt number `index` of the run.
    pub fn build(&self, index: u64) -> Built {
        match self {
            Workload::Synthetic(synthetic) => {
                let prompt = synthetic.prompt(index).unwrap_or_else(|e| Prompt {
                    // A tokenizer that no longer counts the word list as built: sent anyway,
                    // with the count it really has (plan() checks prompt 0 and refuses this).
                    system: None,
                    user: e.to_string(),
                    input_tokens: count_tokens(&e.to_string()) as u64,
                    max_output_tokens: 1,
                });
                Built {
                    group: "synthetic".into(),
                    key: format!("synthetic-{index}"),
                    prompt,
                }
            }
            Workload::File {
                prompts,
                output,
                seed,
                ceiling,
            } => {
                let n = prompts.len().max(1) as u64;
                let at = (index % n) as usize;
                let max = output_tokens(output.as_ref(), *seed, index, *ceiling);
                let prompt = prompts.get(at).map(|p| p.to_prompt(max));
                Built {
                    group: "file".into(),
                    key: format!("line-{}", prompts.get(at).map_or(0, |p| p.line)),
                    prompt: prompt.unwrap_or_else(|| empty(max)),
                }
            }
            Workload::Tasks { items, ceiling } => {
                let n = items.len().max(1) as u64;
                match items.get((index % n) as usize) {
                    Some(item) => Built {
                        group: item.group.clone(),
                        key: item.item_id.clone(),
                        prompt: Prompt {
                            system: Some(item.system.clone()),
                            user: item.user.clone(),
                            input_tokens: count_tokens(&item.system) as u64
                                + count_tokens(&item.user) as u64,
                            max_output_tokens: *ceiling,
                        },
                    },
                    None => Built {
                        group: "tasks".into(),
                        key: String::new(),
                        prompt: empty(*ceiling),
                    },
                }
            }
        }
    }
}

/// Request `index` of a trace step: the file's request of that index, group `trace`, key
/// `line-N` (with `/conversation-ID` when the file names one).
fn trace_built(trace: &Trace, seed: u64, index: u64) -> Built {
    let Some(entry) = usize::try_from(index)
        .ok()
        .and_then(|i| trace.entries.get(i))
    else {
        return Built {
            group: "trace".into(),
            key: String::new(),
            prompt: empty(1),
        };
    };
    let user = trace_text(entry, seed);
    let key = match &entry.conversation {
        Some(c) => format!("line-{}/conversation-{c}", entry.line),
        None => format!("line-{}", entry.line),
    };
    Built {
        group: "trace".into(),
        key,
        prompt: Prompt {
            system: None,
            input_tokens: count_tokens(&user),
            user,
            max_output_tokens: entry.output_tokens,
        },
    }
}

fn empty(max_output_tokens: u32) -> Prompt {
    Prompt {
        system: None,
        user: String::new(),
        input_tokens: 0,
        max_output_tokens,
    }
}

/// How a step numbers its requests.
#[derive(Debug, Clone)]
enum Numbering {
    /// Open loop over K regions: index = sequence · K + region.
    Open { regions: u64 },
    /// Closed loop of N users per provider: index = sequence · N + (users of the regions
    /// before this lane's) + slot.
    Closed { users: u64, before: Vec<u32> },
}

/// The request source of one step.
#[derive(Debug, Clone)]
pub struct StepSource {
    step: u64,
    numbering: Numbering,
    workload: Arc<Workload>,
    /// Region index of each lane (base order).
    region_of: Vec<usize>,
    /// Whether each lane's provider is sent `ignore_eos` (base order).
    ignore_eos: Vec<bool>,
    /// A `trace` step's file and the spec's seed: request k is the file's k-th request.
    trace: Option<(Arc<Trace>, u64)>,
    /// A closed step's ramp (`ramp_up_s`), ms: its users start one after another over it.
    ramp_ms: Option<f64>,
}

impl StepSource {
    /// An open-loop step over `regions` regions.
    pub fn open(step: usize, regions: usize, workload: Arc<Workload>) -> StepSource {
        StepSource {
            step: step as u64,
            numbering: Numbering::Open {
                regions: regions.max(1) as u64,
            },
            workload,
            region_of: Vec::new(),
            ignore_eos: Vec::new(),
            trace: None,
            ramp_ms: None,
        }
    }

    /// A closed-loop step of `users` per provider; `before[r]`: users of regions before r.
    pub fn closed(
        step: usize,
        users: u32,
        before: Vec<u32>,
        workload: Arc<Workload>,
    ) -> StepSource {
        StepSource {
            step: step as u64,
            numbering: Numbering::Closed {
                users: u64::from(users.max(1)),
                before,
            },
            workload,
            region_of: Vec::new(),
            ignore_eos: Vec::new(),
            trace: None,
            ramp_ms: None,
        }
    }

    /// The same source, told each lane's region and whether its provider gets `ignore_eos`.
    pub fn with_lanes(mut self, region_of: Vec<usize>, ignore_eos: Vec<bool>) -> StepSource {
        self.region_of = region_of;
        self.ignore_eos = ignore_eos;
        self
    }

    /// The same source, building each request from the trace's request of the same index
    /// (its lengths, its blocks), the prompts seeded by `seed` ([`trace_text`]).
    pub fn with_trace(mut self, trace: Option<Arc<Trace>>, seed: u64) -> StepSource {
        self.trace = trace.map(|t| (t, seed));
        self
    }

    /// The same source, its users starting one after another over `ramp_up_s` seconds (a
    /// closed step's ramp; `None`: all at once).
    pub fn with_ramp(mut self, ramp_up_s: Option<f64>) -> StepSource {
        self.ramp_ms = ramp_up_s.map(|s| s * 1000.0);
        self
    }

    /// When the request at `at` may be sent, ms after the step's start (its slot's first
    /// request) or after its slot's previous request (any other): user g of a closed step's N
    /// (numbered over the provider's regions, as the prompts are) starts g × ramp ÷ N in; every
    /// other request goes at once.
    pub fn wait_ms(&self, at: &LoadPosition) -> f64 {
        match (&self.numbering, self.ramp_ms) {
            (Numbering::Closed { users, before }, Some(ramp_ms)) if at.sequence == 0 => {
                let r = self.region_of.get(at.lane_index).copied().unwrap_or(0);
                let g = u64::from(before.get(r).copied().unwrap_or(0)) + u64::from(at.slot);
                g as f64 * ramp_ms / *users as f64
            }
            _ => 0.0,
        }
    }

    /// The prompt number of the request at `at`.
    pub fn prompt_index(&self, at: &LoadPosition) -> u64 {
        let r = self.region_of.get(at.lane_index).copied().unwrap_or(0);
        let index = match &self.numbering {
            Numbering::Open { regions } => at.sequence * regions + r as u64,
            Numbering::Closed { users, before } => {
                let g = u64::from(before.get(r).copied().unwrap_or(0)) + u64::from(at.slot);
                at.sequence * users + g
            }
        };
        self.step * STEP_STRIDE + index
    }

    /// The built prompt of the request at `at`.
    pub fn built(&self, at: &LoadPosition) -> Built {
        let index = self.prompt_index(at);
        match &self.trace {
            Some((trace, seed)) => trace_built(trace, *seed, index % STEP_STRIDE),
            None => self.workload.build(index),
        }
    }

    /// True when requests carry their own output length (every workload but `tasks`, and
    /// every trace step).
    fn sets_output(&self) -> bool {
        self.trace.is_some() || !matches!(*self.workload, Workload::Tasks { .. })
    }
}

impl RequestSource for StepSource {
    /// The request, after the step's ramp for a user's first one ([`StepSource::wait_ms`]); the
    /// history is not read (every request is independent).
    fn next(&self, at: &LoadPosition, _history: &[Turn]) -> Next {
        Next::Send {
            content: self.request(at),
            think_ms: self.wait_ms(at),
        }
    }

    fn request(&self, at: &LoadPosition) -> RequestContent {
        let built = self.built(at);
        // A drawn output length is sent as the request's own ceiling (with `ignore_eos` where
        // the spec lists the provider); the tasks keep the contract's, as micro-single-task.
        let output = self.sets_output().then(|| OutputLength {
            max_tokens: built.prompt.max_output_tokens,
            ignore_eos: self.ignore_eos.get(at.lane_index).copied().unwrap_or(false),
        });
        let mut messages = Vec::with_capacity(2);
        if let Some(system) = built.prompt.system {
            messages.push(ChatMessage::text(Role::System, system));
        }
        messages.push(ChatMessage::text(Role::User, built.prompt.user));
        RequestContent {
            group: built.group,
            item_key: built.key,
            messages,
            output,
            tools: Vec::new(),
        }
    }
}

#[cfg(test)]
#[path = "workload_tests.rs"]
mod tests;
