//! The `load:` section of a spec: which load models to run (a list of steps or a saturation
//! search), how long each step warms up, measures and cools down, the SLO that defines goodput,
//! and the workload that builds the prompts.
//!
//! Parsing denies unknown fields; [`LoadSection::problems`] then lists every rule broken at once,
//! each naming its field path (`load.steps[2].rate_per_s`) and value, the way the common spec
//! does for its own sections.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod steps;
#[cfg(test)]
mod tests;
pub(crate) mod validate;

pub use steps::{RepeatOf, Step, StepModel};
pub use validate::{Limits, SLO_METRICS};

/// A problem with a `load:` section.
#[derive(Debug, thiserror::Error)]
pub enum LoadSpecError {
    /// The YAML did not parse into the section's shape.
    #[error("{origin}: load section is not valid: {source}")]
    Parse {
        /// Where the section came from (a spec path).
        origin: String,
        /// The parser's error (names the field and position), boxed: it is large.
        source: Box<serde_saphyr::Error>,
    },
    /// The section parsed but breaks one or more rules; every problem is listed.
    #[error("{origin}: load section has {} problem(s):\n  - {}", problems.len(), problems.join("\n  - "))]
    Invalid {
        /// Where the section came from.
        origin: String,
        /// One line per problem, each naming the field and value.
        problems: Vec<String>,
    },
}

/// The whole `load:` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadSection {
    /// Seed of every random draw (Poisson gaps, prompt words, length draws).
    pub seed: u64,
    /// Warm-up, measured window and cool-down of every step.
    pub phases: Phases,
    /// A sweep: the steps in the order they run. Exactly one of `steps` and `saturation`.
    #[serde(default)]
    pub steps: Vec<LoadModel>,
    /// A saturation search instead of a fixed list of steps.
    #[serde(default)]
    pub saturation: Option<SaturationSearch>,
    /// Per-request service-level objectives: metric name → upper bound (`ttfa_ms: 500`).
    /// Goodput counts completed requests that meet every one.
    #[serde(default)]
    pub slo: BTreeMap<String, f64>,
    /// Smallest goodput fraction at which a step still counts as sustained (§9: default 0.9).
    #[serde(default = "default_goodput_threshold")]
    pub goodput_threshold: f64,
    /// Smallest achieved ÷ target rate at which a step still counts as sustained (0.95).
    #[serde(default = "default_sustain_fraction")]
    pub sustain_fraction: f64,
    /// What the requests ask.
    pub workload: WorkloadSpec,
    /// Provider keys whose requests carry `ignore_eos: true`, so answers run to the drawn
    /// output length (vLLM, SGLang and llama.cpp accept it; most hosted APIs refuse or ignore
    /// it, and the report says where output length could not be held).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_eos: Vec<String>,
    /// Most requests one lane may hold in flight in an open-loop step (1..=10,000; absent:
    /// [`DEFAULT_MAX_IN_FLIGHT`]). A release due while its lane is full waits, and its send lag
    /// shows it; it is never skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<u32>,
    /// Runs the whole sweep this many times (2..=100; absent: once), AIPerf's
    /// `--num-profile-runs`: pass r runs every step in order as its own phase, with its own
    /// seeded arrivals and prompts, and the report gives each figure per repeat and across
    /// repeats with a 95% Student t interval (docs/load.md, "Repeats"). Not with `saturation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
}

/// Most passes `load.repeats` may ask for.
pub const MAX_REPEATS: u32 = 100;

/// Requests one lane may hold in flight in an open-loop step when `load.max_in_flight` is
/// absent: the 1,000 concurrent streams one process is benchmarked to drive (docs/performance.md,
/// `bench load-generator`).
pub const DEFAULT_MAX_IN_FLIGHT: u32 = 1_000;

impl LoadSection {
    /// The open-loop in-flight bound per lane: `max_in_flight`, or [`DEFAULT_MAX_IN_FLIGHT`].
    pub fn open_loop_in_flight(&self) -> u32 {
        self.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT)
    }

    /// Passes over the sweep: `repeats`, or 1.
    pub fn repeat_count(&self) -> u32 {
        self.repeats.unwrap_or(1).max(1)
    }

    /// The conversations of sweep step `index` when it holds them (any step with
    /// `conversation`).
    pub fn conversation(&self, index: usize) -> Option<&Conversation> {
        match self.steps.get(index)? {
            LoadModel::Closed { conversation, .. }
            | LoadModel::Constant { conversation, .. }
            | LoadModel::Poisson { conversation, .. }
            | LoadModel::Gamma { conversation, .. }
            | LoadModel::Ramp { conversation, .. }
            | LoadModel::Trace { conversation, .. } => conversation.as_ref(),
        }
    }

    /// The agent runs of sweep step `index` when it holds them (any step with `agent`).
    pub fn agent(&self, index: usize) -> Option<&Agent> {
        match self.steps.get(index)? {
            LoadModel::Closed { agent, .. }
            | LoadModel::Constant { agent, .. }
            | LoadModel::Poisson { agent, .. }
            | LoadModel::Gamma { agent, .. }
            | LoadModel::Ramp { agent, .. }
            | LoadModel::Trace { agent, .. } => agent.as_ref(),
        }
    }

    /// The ramp of sweep step `index` when it is a closed loop that has one (`ramp_up_s`).
    pub fn ramp_up_s(&self, index: usize) -> Option<f64> {
        match self.steps.get(index)? {
            LoadModel::Closed { ramp_up_s, .. } => *ramp_up_s,
            _ => None,
        }
    }
}

fn default_goodput_threshold() -> f64 {
    0.9
}

fn default_sustain_fraction() -> f64 {
    0.95
}

/// One load setting, as written in `steps:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum LoadModel {
    /// Closed loop: `concurrency` users, each sending its next request when the last one ends.
    Closed {
        /// Users per lane.
        concurrency: u32,
        /// Users start one after another over this many seconds instead of all at once: user g
        /// of the provider's `concurrency` N sends its first request g × ramp_up_s ÷ N seconds
        /// after the step's start (users rise linearly; all N run from (N − 1) × ramp_up_s ÷ N
        /// on). Absent: every user starts at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ramp_up_s: Option<f64>,
        /// Each user holds conversations instead of independent requests: turn k carries the
        /// earlier turns' messages and the model's answers verbatim ([`Conversation`]).
        /// Absent: every request stands alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversation: Option<Conversation>,
        /// Each user runs agents instead of independent requests: the model is offered tools,
        /// the harness answers each call with a deterministic result, and a run loops until a
        /// final answer or `max_steps` model calls ([`Agent`], docs/agents.md). Absent: every
        /// request stands alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<Agent>,
    },
    /// Open loop, one request every 1/rate seconds.
    Constant {
        /// Requests per second per lane.
        rate_per_s: f64,
        /// Each release opens a conversation ([`Conversation`]): its later turns follow their
        /// previous one after its think time, and it ends after its turns or a failed turn.
        /// Absent: every release is one request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversation: Option<Conversation>,
        /// Each release starts an agent run ([`Agent`], docs/agents.md): its later steps follow
        /// their tool results after their think time, and it ends at its answer, its step limit
        /// or a failed step. Absent: every release is one request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<Agent>,
    },
    /// Open loop, exponential gaps of mean 1/rate, drawn from the seed.
    Poisson {
        /// Mean requests per second per lane.
        rate_per_s: f64,
        /// Each release opens a conversation ([`Conversation`]): its later turns follow their
        /// previous one after its think time, and it ends after its turns or a failed turn.
        /// Absent: every release is one request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversation: Option<Conversation>,
        /// Each release starts an agent run ([`Agent`], docs/agents.md): its later steps follow
        /// their tool results after their think time, and it ends at its answer, its step limit
        /// or a failed step. Absent: every release is one request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<Agent>,
    },
    /// Open loop, gamma-distributed gaps of mean 1/rate, drawn from the seed: vLLM `bench
    /// serve`'s `--burstiness` (shape = burstiness, scale = 1/(rate × burstiness); 1 is Poisson,
    /// below 1 burstier, above 1 more even).
    Gamma {
        /// Mean requests per second per lane.
        rate_per_s: f64,
        /// The gamma shape: the gaps' coefficient of variation is 1/√burstiness.
        burstiness: f64,
        /// Each release opens a conversation ([`Conversation`]): its later turns follow their
        /// previous one after its think time, and it ends after its turns or a failed turn.
        /// Absent: every release is one request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversation: Option<Conversation>,
        /// Each release starts an agent run ([`Agent`], docs/agents.md): its later steps follow
        /// their tool results after their think time, and it ends at its answer, its step limit
        /// or a failed step. Absent: every release is one request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<Agent>,
    },
    /// Open loop whose rate rises (or falls) linearly from `from_rate_per_s` at the step's start
    /// to `to_rate_per_s` at `ramp_s`, then stays there.
    Ramp {
        /// Even (`constant`) or seeded Poisson arrivals along the ramp.
        arrivals: Arrivals,
        /// Rate at the step's start, requests per second per lane (0 allowed).
        from_rate_per_s: f64,
        /// Rate from `ramp_s` on.
        to_rate_per_s: f64,
        /// Seconds the rate takes to go from one to the other.
        ramp_s: f64,
        /// Each release opens a conversation ([`Conversation`]): its later turns follow their
        /// previous one after its think time, and it ends after its turns or a failed turn.
        /// Absent: every release is one request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversation: Option<Conversation>,
        /// Each release starts an agent run ([`Agent`], docs/agents.md): its later steps follow
        /// their tool results after their think time, and it ends at its answer, its step limit
        /// or a failed step. Absent: every release is one request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<Agent>,
    },
    /// Open loop replaying a trace file's arrivals, each request with the file's input and
    /// output lengths.
    Trace {
        /// The file, relative to the spec unless absolute (like `load.workload.path`).
        path: String,
        /// Its shape.
        format: TraceFormat,
        /// Every recorded offset is multiplied by this (0.5 replays twice as fast).
        #[serde(default = "default_time_scale")]
        time_scale: f64,
        /// Each recorded arrival (line k) opens a conversation ([`Conversation`]) whose turn 0
        /// is line k's request; the file's own conversation ids are kept in its item keys, not
        /// joined. Absent: every line is one request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversation: Option<Conversation>,
        /// Each recorded arrival (line k) starts an agent run ([`Agent`]) asking the agent
        /// family's item k (the file's lengths are not used: the run's messages are the
        /// family's). Absent: every line is one request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<Agent>,
    },
}

fn default_time_scale() -> f64 {
    1.0
}

/// The shape of a trace file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// Azure LLM inference traces (2023, 2024): CSV `TIMESTAMP,ContextTokens,GeneratedTokens`,
    /// timestamps `YYYY-MM-DD HH:MM:SS[.fraction]`.
    AzureCsv,
    /// Mooncake / FAST'25 traces: JSONL `timestamp` (ms), `input_length`, `output_length`,
    /// `hash_ids` (ids of 512-token prompt blocks).
    MooncakeJsonl,
}

/// How each step's time is split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Phases {
    /// Seconds of load before the measured window (its requests are not measured).
    pub warmup_s: f64,
    /// The measured window.
    pub measure: Measure,
    /// Seconds of load kept after the window, so measured requests finish under the same load.
    pub cooldown_s: f64,
}

/// Length of the measured window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Measure {
    /// A fixed number of seconds.
    DurationS(f64),
    /// A fixed number of requests per lane (the window ends at the send time of the next one).
    Requests(u32),
}

/// Open-loop arrival process of a saturation search or a ramp: the shared one.
pub use openbench_common::arrivals::Arrivals;

/// A saturation search: open-loop steps at rising rates until one is not sustained, then a few
/// bisections between the last sustained rate and the first that was not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaturationSearch {
    /// Arrival process of every step.
    pub arrivals: Arrivals,
    /// Rate of the first step, requests per second per lane.
    pub start_rate_per_s: f64,
    /// Each ramp step multiplies the rate by this (> 1).
    #[serde(default = "default_growth")]
    pub growth: f64,
    /// The ramp stops here even if every step was sustained.
    pub max_rate_per_s: f64,
    /// Bisections after the first step that was not sustained.
    #[serde(default = "default_refine_steps")]
    pub refine_steps: u32,
}

fn default_growth() -> f64 {
    2.0
}

fn default_refine_steps() -> u32 {
    2
}

/// Where prompts come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// Generated prompts of exact o200k lengths.
    Synthetic {
        /// Input (user prompt) length in tokens; with a shared prefix, the suffix length.
        input_tokens: LengthDist,
        /// Output length asked for (the request's completion ceiling).
        output_tokens: LengthDist,
        /// Shared prefixes, to expose prefix caching.
        #[serde(default)]
        shared_prefix: Option<SharedPrefix>,
    },
    /// Prompts read from a JSONL file.
    Jsonl {
        /// The file, relative to the spec unless absolute.
        path: String,
        /// The line shape.
        format: JsonlFormat,
        /// Output length asked for; without it, the contract's ceiling.
        #[serde(default)]
        output_tokens: Option<LengthDist>,
    },
    /// The micro-single-task items themselves, scored exactly as that workflow scores them.
    Tasks,
}

/// The shape of each line of a prompt file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JsonlFormat {
    /// `{"messages": [{"role": "system"|"user", "content": …}]}`.
    OpenaiMessages,
    /// `{"conversations": [{"from": "system"|"human"|"gpt", "value": …}]}`.
    Sharegpt,
}

/// N prefixes × M suffixes: every prompt is one of N shared prefixes followed by its own suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SharedPrefix {
    /// Distinct prefixes (N).
    pub prefixes: u32,
    /// Suffixes per prefix (M).
    pub suffixes_per_prefix: u32,
    /// Length of every prefix in tokens.
    pub prefix_tokens: u32,
}

/// A step's conversations: how many turns each has and how long a user thinks between them,
/// both drawn from the section's seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Conversation {
    /// Turns per conversation, drawn per conversation (`{dist: fixed, tokens: 3}`: 3 turns; the
    /// distribution's values are turns here, not tokens).
    pub turns: LengthDist,
    /// Think time before each later turn, ms, drawn per turn (values are ms). Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_ms: Option<LengthDist>,
}

/// A step's agent runs (docs/agents.md): in a closed step each user runs one agent task after
/// another, in an open step each release starts one; each run is a loop of model calls with the
/// harness's tool results between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    /// Most model calls one run makes: a run whose call this many still calls a tool ends
    /// there without an answer (reported as a step-limit run).
    pub max_steps: u32,
    /// Think time before each later step (the tool's own time, as the harness models it), ms,
    /// drawn per step (values are ms). Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_ms: Option<LengthDist>,
}

/// A distribution of lengths in o200k tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum LengthDist {
    /// Always this length.
    Fixed {
        /// Tokens.
        tokens: u32,
    },
    /// Uniform over `min..=max`.
    Uniform {
        /// Smallest length.
        min: u32,
        /// Largest length.
        max: u32,
    },
    /// Normal, rounded to the nearest integer and clamped to `min..=max`.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        sd: f64,
        /// Smallest length after clamping.
        min: u32,
        /// Largest length after clamping.
        max: u32,
    },
    /// One of these, uniformly.
    List {
        /// The lengths.
        values: Vec<u32>,
    },
}

impl LengthDist {
    /// The smallest and largest length this distribution can give (`None` for an empty list).
    pub fn bounds(&self) -> Option<(u32, u32)> {
        match self {
            LengthDist::Fixed { tokens } => Some((*tokens, *tokens)),
            LengthDist::Uniform { min, max } | LengthDist::Normal { min, max, .. } => {
                Some((*min, *max))
            }
            LengthDist::List { values } => Some((*values.iter().min()?, *values.iter().max()?)),
        }
    }
}

impl LoadSection {
    /// Parses a `load:` section from YAML; `origin` names the file in errors. Parsing only:
    /// call [`LoadSection::validate`] before using it.
    pub fn from_yaml(text: &str, origin: &str) -> Result<LoadSection, LoadSpecError> {
        serde_saphyr::from_str(text).map_err(|source| LoadSpecError::Parse {
            origin: origin.to_string(),
            source: Box::new(source),
        })
    }

    /// Every rule the section breaks ([`LoadSection::problems`]) as one error, or `Ok`.
    pub fn validate(&self, origin: &str, limits: &Limits) -> Result<(), LoadSpecError> {
        let problems = self.problems(limits);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(LoadSpecError::Invalid {
                origin: origin.to_string(),
                problems,
            })
        }
    }
}
