//! `openai-completions`: the legacy `POST {base}/completions` with one `prompt` string, and
//! chunks of `choices[0].text` ending in `data: [DONE]` (usage with `include_usage`, as in chat).
//!
//! The prompt is rendered from the messages as plain text: the system prompt (with the JSON
//! object contract asked for in it, as there is no `response_format`), then each other message
//! as `User: <text>` or `Assistant: <text>`, all joined by a blank line, and a final
//! `Assistant:` for the model to continue. A server applies no chat template to it.

use super::{parse_json, split_system};
use crate::classify::{
    Chunk, DONE, DeltaShape, InvalidSse, classification, classify_json, parse_usage, reasoning_text,
};
use openbench_common::record::Classification;
use openbench_common::request::{ChatMessage, Role};
use openbench_common::spec::{ProviderAdapter, RequestContract};
use serde_json::{Map, Value, json};

/// The prompt string of `messages` (see the module documentation).
pub fn render_prompt(messages: &[ChatMessage], ask_json: bool) -> String {
    let (system, rest) = split_system(messages, ask_json);
    let mut parts: Vec<String> = system.into_iter().collect();
    for m in rest {
        let who = if m.role == Role::Assistant {
            "Assistant"
        } else {
            "User"
        };
        parts.push(format!("{who}: {}", m.content));
    }
    parts.push("Assistant:".to_string());
    parts.join("\n\n")
}

/// The JSON body: `model`, `prompt`, `stream: true`, the sampling fields and penalties of the
/// contract, the adapter's max-tokens field, and `stream_options.include_usage` when the adapter
/// asks for usage.
pub fn build_body(
    adapter: &ProviderAdapter,
    contract: &RequestContract,
    messages: &[ChatMessage],
) -> Value {
    let ask_json = contract.response_format == "json_object";
    let mut body = Map::new();
    body.insert("model".into(), json!(adapter.model));
    body.insert("prompt".into(), json!(render_prompt(messages, ask_json)));
    crate::body::insert_sampling(&mut body, adapter, contract);
    if adapter.include_usage {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// Classifies one chunk: `[DONE]`, an error (as in chat), or `choices[0].text` as answer (and
/// `reasoning_content` on the choice, which reasoning servers add, as reasoning).
pub fn classify(event: Option<&str>, data: &str) -> Result<Chunk, InvalidSse> {
    if event == Some("error") || data.trim().is_empty() || data.trim() == DONE {
        return crate::classify::classify_event_value(event, data);
    }
    let value = parse_json(data)?;
    let chat = classify_json(&value);
    if chat.classification == Classification::Error {
        return Ok(chat);
    }
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first());
    let mut chunk = Chunk::of(Classification::Metadata);
    chunk.model = chat.model;
    chunk.timings = chat.timings;
    chunk.usage = value.get("usage").and_then(parse_usage);
    chunk.finish_reason = chat.finish_reason;
    if let Some(choice) = choice {
        chunk.answer = choice
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        chunk.reasoning = reasoning_text(choice);
    }
    let shape = if choice.is_some_and(Value::is_object) {
        DeltaShape::Object { role: false }
    } else {
        DeltaShape::NotAnObject
    };
    chunk.classification = classification(&chunk, choice.is_some(), shape);
    Ok(chunk)
}
