//! A provider's `endpoint` string: what it points at, and the POST URL of a base URL (one
//! endpoint convention: the base URL from the provider's docs, the adapter adds the path).

/// Where a provider's endpoint points (parsed from its `endpoint` string, which stays a string
/// in the spec so the adapters hash does not change).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint<'a> {
    /// `https://…` or `http://…`: the chat completions URL itself.
    Url(&'a str),
    /// `sim://<profile>`: a profile of the embedded simulator.
    Simulator {
        /// Simulator profile.
        profile: &'a str,
    },
    /// `env://<VAR>`: the URL is read from an environment variable (a user's own deployment).
    FromEnv {
        /// Variable name.
        var: &'a str,
    },
    /// Anything else (refused by validation).
    Unknown(&'a str),
}

impl<'a> Endpoint<'a> {
    /// Parses an endpoint string.
    pub fn parse(endpoint: &'a str) -> Endpoint<'a> {
        if let Some(profile) = endpoint.strip_prefix("sim://") {
            Endpoint::Simulator { profile }
        } else if let Some(var) = endpoint.strip_prefix("env://") {
            Endpoint::FromEnv { var }
        } else if endpoint.starts_with("https://") || endpoint.starts_with("http://") {
            Endpoint::Url(endpoint)
        } else {
            Endpoint::Unknown(endpoint)
        }
    }
}

/// The path the adapter adds to a provider's base URL: the OpenAI-compatible chat completions
/// route.
pub const CHAT_COMPLETIONS_PATH: &str = "/chat/completions";

/// The POST URL of an endpoint written as the base URL users copy from provider docs
/// (`https://api.together.xyz/v1`): the base with [`CHAT_COMPLETIONS_PATH`] added. A URL that
/// already ends in the path (the older full-path convention) is kept, never doubled.
pub fn chat_completions_url(base: &str) -> String {
    let trimmed = base.trim_end_matches('/');
    if trimmed.ends_with(CHAT_COMPLETIONS_PATH) {
        trimmed.to_string()
    } else {
        format!("{trimmed}{CHAT_COMPLETIONS_PATH}")
    }
}
