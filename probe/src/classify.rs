//! What one SSE event carried (METHODOLOGY §3): reasoning text, answer text, finish reason,
//! usage, the response model, server timings, or a provider error.
//!
//! Pure functions over one event's `event:` name and `data:` payload, so every rule is unit
//! tested without a network.

use openbench_common::record::{Classification, ErrorType, Usage};
use serde_json::Value;

mod common_shape;

/// The payload that ends a stream.
pub const DONE: &str = "[DONE]";

/// Longest provider error text kept from a stream or an error body, in characters.
pub const ERROR_SNIPPET_CHARS: usize = 512;

/// Everything one event carried.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// What the event counts as.
    pub classification: Classification,
    /// Non-empty reasoning text, or empty.
    pub reasoning: String,
    /// Non-empty visible answer text, or empty.
    pub answer: String,
    /// `choices[0].finish_reason`, when a non-empty string (`""` is no finish).
    pub finish_reason: Option<String>,
    /// Top-level `model`, when a non-empty string.
    pub model: Option<String>,
    /// Top-level `usage`, when an object.
    pub usage: Option<Usage>,
    /// Top-level `timings` (llama.cpp), when present.
    pub timings: Option<Value>,
    /// The provider's error text, whole, for [`Classification::Error`] (the executor redacts it
    /// before it cuts it to a snippet: a secret must not survive as a cut piece).
    pub error: Option<String>,
    /// The finer error type a dialect's typed error names (Anthropic `overloaded_error` is the
    /// class of its HTTP 529); `None` keeps `stream_error`.
    pub error_type: Option<ErrorType>,
    /// Non-empty tool-call argument text, or empty.
    pub tool_call: String,
    /// The event's share of each tool call it touches (start, fragment, end), for the record's
    /// reconstructed calls.
    pub tool_parts: Vec<crate::dialect::tools::ToolPart>,
}

impl Chunk {
    /// An event of `classification` that carried nothing else (yet).
    pub fn of(classification: Classification) -> Chunk {
        Chunk {
            classification,
            reasoning: String::new(),
            answer: String::new(),
            finish_reason: None,
            model: None,
            usage: None,
            timings: None,
            error: None,
            error_type: None,
            tool_call: String::new(),
            tool_parts: Vec::new(),
        }
    }
}

/// A data payload that is not JSON (an `invalid_sse` transport error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("data payload is not JSON ({reason})")]
pub struct InvalidSse {
    /// The JSON parser's message.
    pub reason: String,
    /// The payload, whole: the executor redacts it before it cuts it to a snippet.
    pub data: String,
}

/// Classifies one dispatched event by its `event:` name and `data:` payload. A payload of the
/// common chunk shape is read into typed fields (`common_shape`); any other goes through a
/// `serde_json::Value` ([`classify_event_value`]), with the same result for every payload.
pub fn classify_event(event: Option<&str>, data: &str) -> Result<Chunk, InvalidSse> {
    if event != Some("error")
        && let Some(chunk) = common_shape::classify_common(data)
    {
        return Ok(chunk);
    }
    classify_event_value(event, data)
}

/// [`classify_event`] through a `serde_json::Value` for every payload: the reference the fast path
/// is checked against (tests and the `chunk_classifier` fuzz target).
pub fn classify_event_value(event: Option<&str>, data: &str) -> Result<Chunk, InvalidSse> {
    if event == Some("error") {
        let mut chunk = Chunk::of(Classification::Error);
        let text = serde_json::from_str::<Value>(data)
            .ok()
            .and_then(|v| error_text(&v))
            .unwrap_or_else(|| data.to_string());
        chunk.error = Some(text);
        return Ok(chunk);
    }
    if data.trim().is_empty() {
        // An event with no payload (`event: ping`): nothing to parse, nothing to count.
        return Ok(Chunk::of(Classification::Metadata));
    }
    if data.trim() == DONE {
        return Ok(Chunk::of(Classification::Done));
    }
    let value: Value = serde_json::from_str(data).map_err(|e| InvalidSse {
        reason: e.to_string(),
        data: data.to_string(),
    })?;
    Ok(classify_json(&value))
}

/// Classifies a parsed chunk.
pub fn classify_json(value: &Value) -> Chunk {
    let is_error = value.get("error").is_some_and(|e| !e.is_null())
        || value.get("object").and_then(Value::as_str) == Some("error");
    if is_error {
        let mut chunk = Chunk::of(Classification::Error);
        chunk.error = Some(error_text(value).unwrap_or_else(|| value.to_string()));
        return chunk;
    }
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first());
    let delta = choice.and_then(|c| c.get("delta"));
    let mut chunk = Chunk::of(Classification::Metadata);
    chunk.model = value
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .map(str::to_string);
    chunk.usage = value.get("usage").and_then(parse_usage);
    chunk.timings = value.get("timings").filter(|t| !t.is_null()).cloned();
    chunk.finish_reason = choice
        .and_then(|c| c.get("finish_reason"))
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .map(str::to_string);
    if let Some(delta) = delta {
        chunk.reasoning = reasoning_text(delta);
        chunk.answer = answer_text(delta);
        chunk.tool_parts = crate::dialect::tools::chat_parts(delta);
        chunk.tool_call = chunk
            .tool_parts
            .iter()
            .map(|p| p.arguments.as_str())
            .collect();
    }
    let shape = match delta.and_then(Value::as_object) {
        Some(d) => DeltaShape::Object {
            role: d.get("role").is_some_and(|r| !r.is_null()),
        },
        None => DeltaShape::NotAnObject,
    };
    chunk.classification = classification(&chunk, choice.is_some(), shape);
    chunk
}

/// What the first choice's `delta` was, which decides a chunk that carried no text.
pub(crate) enum DeltaShape {
    /// Absent, `null` or not an object.
    NotAnObject,
    /// An object; `role` when it had a non-null `role`.
    Object { role: bool },
}

/// What a chunk counts as, from the texts, finish reason and usage already read into it, whether
/// it had a first choice, and the shape of that choice's delta (METHODOLOGY §3).
pub(crate) fn classification(chunk: &Chunk, has_choice: bool, delta: DeltaShape) -> Classification {
    match (chunk.reasoning.is_empty(), chunk.answer.is_empty()) {
        (false, false) => Classification::ReasoningAndAnswer,
        (false, true) => Classification::Reasoning,
        (true, false) => Classification::Answer,
        (true, true) if has_tool_text(chunk) => Classification::ToolCall,
        (true, true) if chunk.finish_reason.is_some() => Classification::Finish,
        (true, true) if chunk.usage.is_some() && !has_choice => Classification::Usage,
        (true, true) => match delta {
            DeltaShape::Object { role: true } => Classification::Role,
            DeltaShape::Object { role: false } => Classification::EmptyDelta,
            DeltaShape::NotAnObject => Classification::Metadata,
        },
    }
}

/// True when the chunk carries tool-call text: an arguments fragment or a function name.
pub(crate) fn has_tool_text(chunk: &Chunk) -> bool {
    !chunk.tool_call.is_empty() || chunk.tool_parts.iter().any(|p| p.has_text())
}

/// First non-empty of `reasoning_content`, `reasoning`, `reasoning_details[].text` (joined).
pub fn reasoning_text(delta: &Value) -> String {
    for key in ["reasoning_content", "reasoning"] {
        if let Some(text) = delta.get(key).and_then(Value::as_str)
            && !text.is_empty()
        {
            return text.to_string();
        }
    }
    delta
        .get("reasoning_details")
        .and_then(Value::as_array)
        .map(|items| blocks_text(items))
        .unwrap_or_default()
}

/// `content` as a string, or the concatenated `text` of a list of blocks.
pub fn answer_text(delta: &Value) -> String {
    match delta.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => blocks_text(items),
        _ => String::new(),
    }
}

fn blocks_text(items: &[Value]) -> String {
    items
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect()
}

/// Usage counts, including `prompt_tokens_details.cached_tokens` and
/// `completion_tokens_details.reasoning_tokens`. `None` unless it is an object.
pub fn parse_usage(value: &Value) -> Option<Usage> {
    let obj = value.as_object()?;
    let num = |v: Option<&Value>| v.and_then(Value::as_u64);
    Some(Usage {
        prompt_tokens: num(obj.get("prompt_tokens")),
        completion_tokens: num(obj.get("completion_tokens")),
        total_tokens: num(obj.get("total_tokens")),
        cached_tokens: num(obj
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens")))
        .or_else(|| num(obj.get("cached_tokens"))),
        cache_write_tokens: None,
        reasoning_tokens: num(obj
            .get("completion_tokens_details")
            .and_then(|d| d.get("reasoning_tokens")))
        .or_else(|| num(obj.get("reasoning_tokens"))),
    })
}

/// The provider's error text: `error.message`, `error` as a string, or a top-level `message`.
pub(crate) fn error_text(value: &Value) -> Option<String> {
    let error = value.get("error");
    error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .or_else(|| error.and_then(Value::as_str))
        .or_else(|| value.get("message").and_then(Value::as_str))
        .map(str::to_string)
        .or_else(|| error.filter(|e| !e.is_null()).map(Value::to_string))
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
