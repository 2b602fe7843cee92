//! The workflow's spec section (`cache_probe:`), checked with every problem named at once and
//! written back with its defaults filled (what the lock hashes).

use openbench_common::spec::Spec;
use openbench_common::workflow::WorkflowError;
use serde::{Deserialize, Serialize};

/// The section's name in the spec.
pub const SECTION: &str = "cache_probe";

/// The `cache_probe:` section: how long the prefixes are, which gaps are probed, how often.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheProbeSection {
    /// Length of every prefix, in prompt tokens (built at 4 characters a token).
    #[serde(default = "default_prefix_tokens")]
    pub prefix_tokens: u32,
    /// The gaps probed, seconds from a prefix's first send to its second, ascending.
    pub gaps_s: Vec<f64>,
    /// Trials per gap.
    #[serde(default = "default_repeats")]
    pub repeats: u32,
    /// Seconds between the starts of consecutive trials.
    #[serde(default = "default_spacing_s")]
    pub spacing_s: f64,
    /// Seconds after a probe that its paired fresh prefix is sent.
    #[serde(default = "default_pair_offset_s")]
    pub pair_offset_s: f64,
    /// Completion ceiling of every request (the answers are not what is measured).
    #[serde(default = "default_max_output_tokens")]
    pub max_output_tokens: u32,
    /// Seed of the bootstrap interval of the hit-vs-miss TTFA difference.
    #[serde(default)]
    pub bootstrap_seed: u64,
    /// Turns of the conversation each lane holds after the trials (whether it stays on its
    /// cache across turns: [`crate::conversation`]); 0 (the default): none.
    #[serde(default)]
    pub conversation_turns: u32,
    /// Seconds between a conversation turn's end and the next turn's send.
    #[serde(default = "default_conversation_think_s")]
    pub conversation_think_s: f64,
}

fn default_prefix_tokens() -> u32 {
    2048
}
fn default_repeats() -> u32 {
    3
}
fn default_spacing_s() -> f64 {
    2.0
}
fn default_pair_offset_s() -> f64 {
    1.0
}
fn default_max_output_tokens() -> u32 {
    16
}
fn default_conversation_think_s() -> f64 {
    1.0
}

/// Most turns a probe conversation may have (each re-sends every earlier one).
pub const MAX_CONVERSATION_TURNS: u32 = 100;

/// Longest prefix a spec may ask for, tokens (beyond any context window we serve).
pub const MAX_PREFIX_TOKENS: u32 = 1_000_000;

impl CacheProbeSection {
    /// The section of `spec`, or every problem with the workflow's part of it.
    pub fn read(spec: &Spec) -> Result<CacheProbeSection, Vec<String>> {
        let mut problems = Vec::new();
        for key in spec.benchmark.workflow_fields.keys() {
            problems.push(format!(
                "benchmark.{key}: not a field of workflow cache-probe"
            ));
        }
        for key in spec.workflow_sections.keys().filter(|k| *k != SECTION) {
            problems.push(format!(
                "{key}: unknown section (cache-probe has `{SECTION}`)"
            ));
        }
        let section = match spec.workflow_sections.get(SECTION) {
            None => {
                problems.push(format!("{SECTION}: missing (at least `gaps_s`)"));
                None
            }
            Some(value) => match serde_json::from_value::<CacheProbeSection>(value.clone()) {
                Ok(section) => Some(section),
                Err(e) => {
                    problems.push(format!("{SECTION}: {e}"));
                    None
                }
            },
        };
        if let Some(section) = &section {
            problems.extend(section.problems());
        }
        match section {
            Some(section) if problems.is_empty() => Ok(section),
            _ => Err(problems),
        }
    }

    fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let at = SECTION;
        if !(1..=MAX_PREFIX_TOKENS).contains(&self.prefix_tokens) {
            problems.push(format!(
                "{at}.prefix_tokens: {} must be in 1..={MAX_PREFIX_TOKENS}",
                self.prefix_tokens
            ));
        }
        if self.gaps_s.is_empty() {
            problems.push(format!("{at}.gaps_s: must list at least one gap"));
        }
        for (i, gap) in self.gaps_s.iter().enumerate() {
            if !(gap.is_finite() && *gap > 0.0) {
                problems.push(format!("{at}.gaps_s[{i}]: {gap} must be above 0"));
            }
        }
        if self.gaps_s.windows(2).any(|w| w[0] >= w[1]) {
            problems.push(format!("{at}.gaps_s: {:?} must be ascending", self.gaps_s));
        }
        if self.repeats == 0 {
            problems.push(format!("{at}.repeats: must be at least 1"));
        }
        if self.conversation_turns > MAX_CONVERSATION_TURNS {
            problems.push(format!(
                "{at}.conversation_turns: {} is over {MAX_CONVERSATION_TURNS}",
                self.conversation_turns
            ));
        }
        for (field, value) in [
            ("spacing_s", self.spacing_s),
            ("pair_offset_s", self.pair_offset_s),
            ("conversation_think_s", self.conversation_think_s),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                problems.push(format!("{at}.{field}: {value} must be 0 or more"));
            }
        }
        if self.max_output_tokens == 0 {
            problems.push(format!("{at}.max_output_tokens: must be at least 1"));
        }
        problems
    }

    /// Checks the section and writes it back normalised.
    pub fn check(spec: &mut Spec) -> Vec<String> {
        match CacheProbeSection::read(spec) {
            Ok(section) => {
                let value = serde_json::to_value(&section).unwrap_or_default();
                spec.workflow_sections.insert(SECTION.into(), value);
                Vec::new()
            }
            Err(problems) => problems,
        }
    }

    /// The (already checked) section, for planning.
    pub fn of(spec: &Spec) -> Result<CacheProbeSection, WorkflowError> {
        CacheProbeSection::read(spec).map_err(|problems| WorkflowError(problems.join("; ").into()))
    }
}
