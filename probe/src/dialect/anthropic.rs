//! `anthropic-messages`: `POST {base}/messages` with `x-api-key` (the adapter's
//! `auth: {scheme: headers, headers: {x-api-key: ENV}}`) and `anthropic-version`, and the named
//! event stream `message_start` … `message_stop`.
//!
//! Events: `message_start` carries the model and input usage; `content_block_delta` carries
//! `text_delta` (answer), `thinking_delta` (reasoning), `input_json_delta` (tool-call arguments)
//! or `signature_delta` (nothing we count); `message_delta` carries the stop reason and output
//! usage; `message_stop` ends the stream like `[DONE]`; `ping` is a keep-alive, counted like a
//! comment; `error` is a provider error whose `error.type` names its class.

use super::tools::ToolPart;
use super::{split_system, text_at, typed_event};
use crate::classify::{Chunk, InvalidSse};
use crate::record::status_error_type;
use openbench_common::record::{Classification, ErrorType, Usage};
use openbench_common::request::ChatMessage;
use openbench_common::spec::{ProviderAdapter, RequestContract};
use serde_json::{Map, Value, json};

/// The `anthropic-version` header every request carries.
pub const VERSION: &str = "2023-06-01";

/// The JSON body: `model`, `max_tokens`, `messages` (no system message: the system prompt is
/// the top-level `system`, with the JSON object contract asked for in it), `temperature`,
/// `top_p`, `stream: true`.
pub fn build_body(
    adapter: &ProviderAdapter,
    contract: &RequestContract,
    messages: &[ChatMessage],
) -> Value {
    let (system, rest) = split_system(messages, contract.response_format == "json_object");
    let mut body = Map::new();
    body.insert("model".into(), json!(adapter.model));
    body.insert("max_tokens".into(), json!(contract.max_output_tokens));
    body.insert(
        "messages".into(),
        Value::Array(super::tool_loop::anthropic_messages(&rest)),
    );
    if let Some(system) = system {
        body.insert("system".into(), json!(system));
    }
    body.insert("temperature".into(), json!(contract.temperature));
    body.insert("top_p".into(), json!(contract.top_p));
    body.insert("stream".into(), json!(true));
    Value::Object(body)
}

/// Classifies one event by its payload's `type` (the `event:` name when the payload has none).
pub fn classify(event: Option<&str>, data: &str) -> Result<Chunk, InvalidSse> {
    let Some((value, kind)) = typed_event(event, data)? else {
        return Ok(Chunk::of(Classification::Metadata));
    };
    let mut chunk = Chunk::of(Classification::Metadata);
    match kind.as_str() {
        "message_start" => {
            chunk.classification = Classification::Role;
            chunk.model = text_at(&value, "/message/model");
            chunk.usage = value.pointer("/message/usage").and_then(parse_usage);
        }
        "content_block_start" => {
            // A block may open with text already in it; a tool-use block opens with its name.
            if let Some(text) = text_at(&value, "/content_block/text") {
                chunk.answer = text;
                chunk.classification = Classification::Answer;
            } else if let Some(text) = text_at(&value, "/content_block/thinking") {
                chunk.reasoning = text;
                chunk.classification = Classification::Reasoning;
            } else if value.pointer("/content_block/type").and_then(Value::as_str)
                == Some("tool_use")
            {
                chunk.tool_parts.push(ToolPart {
                    index: block_index(&value),
                    id: text_at(&value, "/content_block/id"),
                    name: text_at(&value, "/content_block/name"),
                    ..ToolPart::default()
                });
                if chunk.tool_parts.iter().any(ToolPart::has_text) {
                    chunk.classification = Classification::ToolCall;
                }
            }
        }
        "content_block_stop" => chunk.tool_parts.push(ToolPart {
            index: block_index(&value),
            closes: true,
            ..ToolPart::default()
        }),
        "content_block_delta" => read_delta(&value, &mut chunk),
        "message_delta" => {
            chunk.finish_reason = text_at(&value, "/delta/stop_reason").map(|r| finish_reason(&r));
            chunk.usage = value.get("usage").and_then(parse_usage);
            chunk.classification = if chunk.finish_reason.is_some() {
                Classification::Finish
            } else if chunk.usage.is_some() {
                Classification::Usage
            } else {
                Classification::Metadata
            };
        }
        "message_stop" => chunk.classification = Classification::Done,
        "ping" => chunk.classification = Classification::Comment,
        "error" => {
            chunk.classification = Classification::Error;
            chunk.error =
                Some(text_at(&value, "/error/message").unwrap_or_else(|| value.to_string()));
            chunk.error_type = value
                .pointer("/error/type")
                .and_then(Value::as_str)
                .map(error_type);
        }
        // Event types added later.
        _ => {}
    }
    Ok(chunk)
}

/// A `content_block_delta`: answer, reasoning or tool-call text, by `delta.type`.
fn read_delta(value: &Value, chunk: &mut Chunk) {
    let delta_type = value.pointer("/delta/type").and_then(Value::as_str);
    match delta_type {
        Some("text_delta") => {
            if let Some(text) = text_at(value, "/delta/text") {
                chunk.answer = text;
                chunk.classification = Classification::Answer;
            } else {
                chunk.classification = Classification::EmptyDelta;
            }
        }
        Some("thinking_delta") => {
            if let Some(text) = text_at(value, "/delta/thinking") {
                chunk.reasoning = text;
                chunk.classification = Classification::Reasoning;
            } else {
                chunk.classification = Classification::EmptyDelta;
            }
        }
        Some("input_json_delta") => {
            if let Some(text) = text_at(value, "/delta/partial_json") {
                chunk.tool_parts.push(ToolPart {
                    index: block_index(value),
                    arguments: text.clone(),
                    ..ToolPart::default()
                });
                chunk.tool_call = text;
                chunk.classification = Classification::ToolCall;
            } else {
                chunk.classification = Classification::EmptyDelta;
            }
        }
        // `signature_delta` (a thinking block's signature) carries nothing we count.
        _ => {}
    }
}

/// A content block event's `index` (0 when absent).
fn block_index(value: &Value) -> u64 {
    value.get("index").and_then(Value::as_u64).unwrap_or(0)
}

/// The stop reason in the record's vocabulary: `max_tokens` is `length` (the answer was cut
/// off, METHODOLOGY §4), `end_turn` and `stop_sequence` are `stop`, `tool_use` is `tool_calls`;
/// any other reason is kept as sent.
pub fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "end_turn" | "stop_sequence" => "stop",
        "max_tokens" => "length",
        "tool_use" => "tool_calls",
        other => other,
    }
    .to_string()
}

/// Anthropic usage: `input_tokens` excludes the cache, so the prompt is input plus
/// `cache_read_input_tokens` plus `cache_creation_input_tokens`; the cached part is the read
/// part. `None` unless it is an object.
pub fn parse_usage(value: &Value) -> Option<Usage> {
    let obj = value.as_object()?;
    let num = |key: &str| obj.get(key).and_then(Value::as_u64);
    let input = num("input_tokens");
    let cached = num("cache_read_input_tokens");
    let created = num("cache_creation_input_tokens");
    let prompt = input.map(|i| i + cached.unwrap_or(0) + created.unwrap_or(0));
    let output = num("output_tokens");
    Some(Usage {
        prompt_tokens: prompt,
        completion_tokens: output,
        // Not reported, and never derived: `message_start`'s placeholder output count would
        // leave a stale total once `message_delta` brings the real one.
        total_tokens: None,
        cached_tokens: cached,
        reasoning_tokens: None,
    })
}

/// The HTTP status each Anthropic error type is documented with (a stream's `error` event
/// carries the type, not the status).
pub fn error_status(error_type: &str) -> Option<u16> {
    Some(match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => return None,
    })
}

/// The record's error type of a stream error of `error_type`: the class of its documented HTTP
/// status (`overloaded_error` is a 529: `http_5xx`, like an HTTP 529 or 503 overload), or
/// `stream_error` for a type we do not know.
fn error_type(error_type: &str) -> ErrorType {
    error_status(error_type).map_or(ErrorType::StreamError, status_error_type)
}
