//! What the simulator reads from an incoming request, in any of the API dialects it serves.

use crate::SimError;
use crate::quirk::{self, Quirk};
use openbench_common::spec::Api;
use serde_json::{Value, json};

/// The parts of a request body and headers that shape the response.
#[derive(Debug, Clone, PartialEq)]
pub struct SimRequest {
    /// The dialect the request came in (by its route); the response is rendered in it.
    pub api: Api,
    /// What seeds the response's draws: the model as sent, the messages as `[role, content]`
    /// pairs and the output settings, the same bytes for the same request in every dialect, so
    /// providers that differ only in `api:` get the same answers and latencies.
    pub seed_key: Vec<u8>,
    /// The requested model without any `+quirk` suffix: what the response echoes.
    pub model: String,
    /// The last `user` message's text (empty when there is none).
    pub user_prompt: String,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    /// Approximate prompt tokens (characters of all messages / 4), for the usage chunk.
    pub prompt_tokens: u64,
    /// Quirks forced by the model suffix and the `x-sim-quirk` header.
    pub forced: Vec<Quirk>,
    /// Exact gap schedule in ms (`x-sim-schedule`), unscaled.
    pub schedule: Option<Vec<f64>>,
    /// With `ignore_eos: true`: the answer runs to exactly this many chunks (one token each),
    /// the body's `max_tokens` (or `max_completion_tokens`), as a vLLM server would.
    pub exact_answer_tokens: Option<u32>,
    /// The tool the request forces the model to call (`tool_choice` naming one): the answer
    /// is streamed as that call. Not part of the seed, so the call's arguments are the text
    /// answer the same request without tools gets.
    pub tool: Option<String>,
    /// The names of every tool the request offers, in order (an agent's request offers
    /// several; [`crate::agent`]).
    pub offered: Vec<String>,
    /// Every message as `(role, text)`, system included: what the prefix cache names blocks by.
    pub messages: Vec<(String, String)>,
    /// What the route's prefix cache held of this prompt, set by the server when the route asks
    /// for the cache (`?prefix_cache=on`); `None` leaves timings and usage as they always were.
    pub cache: Option<crate::prefix_cache::CacheUse>,
}

impl SimRequest {
    /// Parses an `openai-chat` body and the two simulator headers (see [`SimRequest::parse_as`]).
    pub fn parse(
        body: &[u8],
        quirk_header: Option<&str>,
        schedule_header: Option<&str>,
    ) -> Result<SimRequest, SimError> {
        SimRequest::parse_as(Api::OpenaiChat, body, quirk_header, schedule_header)
    }

    /// Parses a body of `api`'s dialect and the two simulator headers; every error names the
    /// field.
    pub fn parse_as(
        api: Api,
        body: &[u8],
        quirk_header: Option<&str>,
        schedule_header: Option<&str>,
    ) -> Result<SimRequest, SimError> {
        let bad = |field: &str, message: &str| SimError::BadRequest {
            field: field.to_string(),
            message: message.to_string(),
        };
        let json: Value =
            serde_json::from_slice(body).map_err(|source| SimError::BodyNotJson { source })?;
        let raw_model = json
            .get("model")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("model", "missing or not a string"))?;
        let mut parts = raw_model.split('+');
        let model = parts.next().unwrap_or_default().to_string();
        let suffix: Vec<&str> = parts.collect();
        let mut forced = quirk::parse_list(&suffix.join("+"), '+', "model suffix")?;
        if let Some(header) = quirk_header {
            for q in quirk::parse_list(header, ',', "x-sim-quirk header")? {
                if !forced.contains(&q) {
                    forced.push(q);
                }
            }
        }
        let messages = crate::dialect::messages(api, &json).map_err(|(f, m)| bad(f, m))?;
        let mut user_prompt = String::new();
        let mut chars = 0usize;
        for (role, text) in &messages {
            chars += text.chars().count();
            if role == "user" {
                user_prompt = text.clone();
            }
        }
        let include_usage = json
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let schedule = schedule_header.map(parse_schedule).transpose()?;
        let ignore_eos = json.get("ignore_eos").and_then(Value::as_bool) == Some(true);
        let ceiling = ["max_tokens", "max_completion_tokens", "max_output_tokens"]
            .iter()
            .find_map(|field| json.get(*field).and_then(Value::as_u64));
        let exact_answer_tokens = ceiling
            .filter(|_| ignore_eos)
            .map(|n| n.min(u64::from(u32::MAX)) as u32);
        // System prompts are left out: a dialect without `response_format` asks for the JSON
        // object in its system prompt, and every provider of a run gets the same one anyway.
        let turns: Vec<&(String, String)> =
            messages.iter().filter(|(r, _)| r != "system").collect();
        let seed_key = json!([raw_model, turns, exact_answer_tokens])
            .to_string()
            .into_bytes();
        Ok(SimRequest {
            tool: crate::tool_call::forced_tool(api, &json),
            offered: crate::agent::offered(&json),
            api,
            seed_key,
            exact_answer_tokens,
            model,
            user_prompt,
            include_usage,
            prompt_tokens: (chars as u64).div_ceil(4),
            forced,
            schedule,
            messages,
            cache: None,
        })
    }
}

/// Parses `x-sim-schedule: 20,120,40`: non-negative gaps in milliseconds, at least two (the
/// role chunk's and one answer piece's).
fn parse_schedule(text: &str) -> Result<Vec<f64>, SimError> {
    let gaps = text
        .split(',')
        .map(str::trim)
        .map(|g| g.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0))
        .collect::<Option<Vec<f64>>>()
        .filter(|gaps| gaps.len() >= 2)
        .ok_or_else(|| SimError::BadRequest {
            field: "x-sim-schedule".into(),
            message: format!(
                "{text:?} must be at least two comma-separated non-negative milliseconds"
            ),
        })?;
    Ok(gaps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_suffix_and_header_force_quirks() {
        let body = br#"{"model":"glm+crlf+role-first","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}"#;
        let r = SimRequest::parse(body, Some("crlf, no-done"), Some("0, 12.5,3")).unwrap();
        assert_eq!(r.model, "glm");
        assert_eq!(r.user_prompt, "hi");
        assert!(r.include_usage);
        assert_eq!(r.prompt_tokens, 3); // 10 characters / 4, rounded up
        assert_eq!(r.forced, vec![Quirk::Crlf, Quirk::RoleFirst, Quirk::NoDone]);
        assert_eq!(r.schedule, Some(vec![0.0, 12.5, 3.0]));
    }

    #[test]
    fn ignore_eos_asks_for_exactly_the_ceiling_and_only_with_it() {
        let with = br#"{"model":"m","messages":[],"max_completion_tokens":32,"ignore_eos":true}"#;
        let r = SimRequest::parse(with, None, None).unwrap();
        assert_eq!(r.exact_answer_tokens, Some(32));
        let without = br#"{"model":"m","messages":[],"max_tokens":32}"#;
        let r = SimRequest::parse(without, None, None).unwrap();
        assert_eq!(r.exact_answer_tokens, None);
    }

    #[test]
    fn errors_name_the_field() {
        let err = SimRequest::parse(br#"{"messages":[]}"#, None, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "bad request: model: missing or not a string"
        );
        let body = br#"{"model":"m","messages":[]}"#;
        let err = SimRequest::parse(body, None, Some("1,-2")).unwrap_err();
        assert!(
            err.to_string().starts_with("bad request: x-sim-schedule:"),
            "{err}"
        );
    }

    #[test]
    fn a_body_that_is_not_json_keeps_the_parser_error() {
        let err = SimRequest::parse(b"{not json", None, None).unwrap_err();
        let source = std::error::Error::source(&err).expect("the parser error is kept");
        assert!(source.is::<serde_json::Error>(), "{source:?}");
        assert_eq!(
            err.to_string(),
            format!("bad request: body: not JSON: {source}")
        );
    }
}
