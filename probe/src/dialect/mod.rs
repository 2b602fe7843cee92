//! The one seam between the probe and a provider's API dialect (`api:` on a provider): the
//! request body, the dialect's own headers and the reading of each stream event into a
//! [`Chunk`]. Everything after a `Chunk` (the stream state, TTFO, TTFA, E2E, the record) is the
//! same code for every dialect (METHODOLOGY §3; docs/methodology.md maps each dialect's events).
//!
//! `openai-chat` is the body and classifier in [`crate::body`] and [`crate::classify`], byte for
//! byte as before; the others live beside this file.

use crate::classify::{Chunk, InvalidSse, classify_event};
use crate::record::StreamState;
use openbench_common::request::{ChatMessage, OutputLength, Role};
use openbench_common::spec::{Api, ProviderAdapter, RequestContract};
use serde_json::{Value, json};

pub mod anthropic;
pub mod completions;
pub mod responses;
pub mod tool_loop;
pub mod tools;

/// The sentence that asks for the JSON object contract in the prompt, for the dialects with no
/// `response_format` field (Anthropic messages, legacy completions). Appended to the system
/// prompt (or made the system prompt) when the contract's `response_format` is `json_object`.
pub const JSON_OBJECT_INSTRUCTION: &str =
    "Respond with a single JSON object and nothing else: no prose, no code fences.";

/// The JSON body of one streaming request in `adapter.api`'s dialect, with the request's own
/// output length when it has one.
pub fn build_body(
    adapter: &ProviderAdapter,
    contract: &RequestContract,
    messages: &[ChatMessage],
    output: Option<&OutputLength>,
) -> Value {
    let mut body = match adapter.api {
        Api::OpenaiChat => crate::body::build_body(adapter, contract, messages),
        Api::AnthropicMessages => anthropic::build_body(adapter, contract, messages),
        Api::OpenaiResponses => responses::build_body(adapter, contract, messages),
        Api::OpenaiCompletions => completions::build_body(adapter, contract, messages),
    };
    if let Some(map) = body.as_object_mut() {
        for (key, value) in &adapter.extra_body {
            map.insert(key.clone(), value.clone());
        }
    }
    apply_output(&mut body, adapter, output);
    body
}

/// The body field that carries the completion ceiling in `adapter.api`'s dialect.
pub fn max_tokens_field(adapter: &ProviderAdapter) -> &str {
    match adapter.api {
        Api::OpenaiChat | Api::OpenaiCompletions => adapter.max_tokens_field.as_str(),
        Api::AnthropicMessages => "max_tokens",
        Api::OpenaiResponses => "max_output_tokens",
    }
}

/// Sets a request's own output length over the contract's ceiling and, when asked (and the
/// dialect is one the servers that honour it speak: chat and legacy completions),
/// `ignore_eos: true`; nothing without one, so other bodies keep their bytes.
pub fn apply_output(body: &mut Value, adapter: &ProviderAdapter, output: Option<&OutputLength>) {
    let (Some(output), Some(map)) = (output, body.as_object_mut()) else {
        return;
    };
    map.insert(max_tokens_field(adapter).into(), json!(output.max_tokens));
    let openai = matches!(adapter.api, Api::OpenaiChat | Api::OpenaiCompletions);
    if output.ignore_eos && openai {
        map.insert("ignore_eos".into(), json!(true));
    }
}

/// Non-secret headers the dialect itself requires (an adapter's `extra_headers` of the same
/// name win).
pub fn dialect_headers(api: Api) -> &'static [(&'static str, &'static str)] {
    match api {
        Api::AnthropicMessages => &[("anthropic-version", anthropic::VERSION)],
        Api::OpenaiChat | Api::OpenaiResponses | Api::OpenaiCompletions => &[],
    }
}

/// Settles what `api`'s stream leaves implicit once it is over: a Responses stream's finish
/// reason ([`responses::settle_finish`]; `ceiling` is the request's completion ceiling). The
/// other dialects name their own stop reason and are left as they are.
pub fn settle_finish(api: Api, state: &mut StreamState, ceiling: Option<u64>) {
    if api == Api::OpenaiResponses {
        responses::settle_finish(state, ceiling);
    }
}

/// The completion ceiling a built `body` asks for, in `adapter.api`'s field.
pub fn ceiling(adapter: &ProviderAdapter, body: &Value) -> Option<u64> {
    body.get(max_tokens_field(adapter)).and_then(Value::as_u64)
}

/// Classifies one dispatched event of `api`'s stream by its `event:` name and `data:` payload.
pub fn classify(api: Api, event: Option<&str>, data: &str) -> Result<Chunk, InvalidSse> {
    match api {
        Api::OpenaiChat => classify_event(event, data),
        Api::AnthropicMessages => anthropic::classify(event, data),
        Api::OpenaiResponses => responses::classify(event, data),
        Api::OpenaiCompletions => completions::classify(event, data),
    }
}

/// The system prompt (every non-empty system message joined by a blank line, with the JSON
/// instruction when `ask_json`) and the other messages, in order.
pub(crate) fn split_system(
    messages: &[ChatMessage],
    ask_json: bool,
) -> (Option<String>, Vec<&ChatMessage>) {
    let mut system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::System && !m.content.is_empty())
        .map(|m| m.content.as_str())
        .collect();
    if ask_json {
        system.push(JSON_OBJECT_INSTRUCTION);
    }
    let rest = messages.iter().filter(|m| m.role != Role::System).collect();
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, rest)
}

/// The lower-case role name of a message (`user`).
pub(crate) fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// A typed event (Anthropic messages, OpenAI Responses): its parsed payload and its type, the
/// payload's `type` field, else the `event:` name. `None` for an empty payload.
pub(crate) fn typed_event(
    event: Option<&str>,
    data: &str,
) -> Result<Option<(Value, String)>, InvalidSse> {
    if data.trim().is_empty() {
        return Ok(None);
    }
    let value = parse_json(data)?;
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .or(event)
        .unwrap_or_default()
        .to_string();
    Ok(Some((value, kind)))
}

/// Parses a data payload as JSON, or says why it is not (an `invalid_sse` transport error).
pub(crate) fn parse_json(data: &str) -> Result<Value, InvalidSse> {
    serde_json::from_str(data).map_err(|e| InvalidSse {
        reason: e.to_string(),
        data: data.to_string(),
    })
}

/// A string field at a JSON pointer, when it is a non-empty string.
pub(crate) fn text_at(value: &Value, pointer: &str) -> Option<String> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
#[path = "dialect_tests.rs"]
mod tests;
