//! The spec's `request:` section: the fixed request contract every provider gets, each field
//! defaulting to the benchmark contract (METHODOLOGY §1).

use serde::{Deserialize, Serialize};

/// The fixed request contract (METHODOLOGY §1). Every field defaults to the benchmark
/// contract, so a spec writes only what it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestContract {
    /// Sampling temperature (default 0).
    #[serde(default)]
    pub temperature: f64,
    /// Nucleus sampling (default 1).
    #[serde(default = "default_top_p")]
    pub top_p: f64,
    /// Presence penalty (default 0).
    #[serde(default)]
    pub presence_penalty: f64,
    /// Frequency penalty (default 0).
    #[serde(default)]
    pub frequency_penalty: f64,
    /// Completion ceiling (default 256); the field name comes from each provider.
    #[serde(default = "default_max_output_tokens")]
    pub max_output_tokens: u32,
    /// `response_format.type` (default `json_object`).
    #[serde(default = "default_response_format")]
    pub response_format: String,
    /// `reasoning_effort` (the reference spec sends `low`); empty or absent omits the field,
    /// which servers without reasoning accept.
    #[serde(default)]
    pub reasoning_effort: String,
    /// Absolute client deadline in ms (default 20000: 20 s covering connect and the stream).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Extra time the coordinator waits for a probe past the deadline before it records a harness
    /// failure (default 5000).
    #[serde(default = "default_grace_ms")]
    pub harness_grace_ms: u64,
    /// Limits on what one response may make the probe hold (optional `limits:` block).
    #[serde(default)]
    pub limits: crate::limits::StreamLimits,
}

/// The benchmark contract's client deadline: 20 s (METHODOLOGY §1).
pub const DEFAULT_TIMEOUT_MS: u64 = 20_000;

fn default_top_p() -> f64 {
    1.0
}

fn default_max_output_tokens() -> u32 {
    256
}

fn default_response_format() -> String {
    String::from("json_object")
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

impl Default for RequestContract {
    /// The contract a spec gets for every field it leaves out: [`RequestContract::reference`]
    /// with the 20 s deadline, without `reasoning_effort` (absent omits it).
    fn default() -> RequestContract {
        RequestContract {
            reasoning_effort: String::new(),
            ..RequestContract::reference(DEFAULT_TIMEOUT_MS)
        }
    }
}

fn default_grace_ms() -> u64 {
    5_000
}

impl RequestContract {
    /// The reference contract of METHODOLOGY §1 (temperature 0, top_p 1, no penalties, 256
    /// tokens, JSON object, reasoning effort low) with the given deadline.
    pub fn reference(timeout_ms: u64) -> RequestContract {
        RequestContract {
            temperature: 0.0,
            top_p: 1.0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            max_output_tokens: 256,
            response_format: String::from("json_object"),
            reasoning_effort: String::from("low"),
            timeout_ms,
            harness_grace_ms: default_grace_ms(),
            limits: crate::limits::StreamLimits::default(),
        }
    }
}
