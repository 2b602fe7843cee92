//! `openai-responses`: `POST {base}/responses` with `input` messages and `instructions`, and
//! the `response.*` event stream (each payload names its own `type`, as the `event:` line does).
//!
//! Events: `response.output_text.delta` carries answer text, `response.reasoning_text.delta`
//! and `response.reasoning_summary_text.delta` reasoning, `response.function_call_arguments.delta`
//! tool-call arguments (each in `delta`); `response.completed` ends the stream like `[DONE]`
//! with the usage; `response.incomplete` ends it too (`max_output_tokens` is a `length` stop);
//! `response.failed` and `error` are provider errors. Everything else is metadata. A top-level
//! `timings` object on any event (llama.cpp puts its own on `response.completed`) is kept as the
//! server's timings, as in chat.
//!
//! The API has no stop reason: `response.completed` reads as `stop`, and [`settle_finish`] makes
//! it what the stream shows once it is over (`tool_calls`, or `length` at the ceiling).

use super::tools::ToolPart;
use super::{split_system, text_at, typed_event};
use crate::classify::{Chunk, InvalidSse};
use crate::record::StreamState;
use openbench_common::record::{Classification, ErrorType, Usage};
use openbench_common::request::ChatMessage;
use openbench_common::spec::{ProviderAdapter, RequestContract};
use serde_json::{Map, Value, json};

/// The JSON body: `model`, `input` (`[{role, content}]` without the system prompt, which is
/// `instructions`), `max_output_tokens`, `temperature`, `top_p`, `stream: true`, JSON mode as
/// `text.format`, and `reasoning.effort` when the contract sets one.
pub fn build_body(
    adapter: &ProviderAdapter,
    contract: &RequestContract,
    messages: &[ChatMessage],
) -> Value {
    let (instructions, rest) = split_system(messages, false);
    let mut body = Map::new();
    body.insert("model".into(), json!(adapter.model));
    if let Some(instructions) = instructions {
        body.insert("instructions".into(), json!(instructions));
    }
    body.insert(
        "input".into(),
        Value::Array(super::tool_loop::responses_input(&rest)),
    );
    body.insert(
        "max_output_tokens".into(),
        json!(contract.max_output_tokens),
    );
    body.insert("temperature".into(), json!(contract.temperature));
    body.insert("top_p".into(), json!(contract.top_p));
    body.insert("stream".into(), json!(true));
    if !contract.response_format.is_empty() {
        body.insert(
            "text".into(),
            json!({"format": {"type": contract.response_format}}),
        );
    }
    if !contract.reasoning_effort.is_empty() {
        body.insert(
            "reasoning".into(),
            json!({"effort": contract.reasoning_effort}),
        );
    }
    Value::Object(body)
}

/// Classifies one event by its payload's `type` (the `event:` name when the payload has none).
pub fn classify(event: Option<&str>, data: &str) -> Result<Chunk, InvalidSse> {
    let Some((value, kind)) = typed_event(event, data)? else {
        return Ok(Chunk::of(Classification::Metadata));
    };
    let mut chunk = Chunk::of(Classification::Metadata);
    chunk.model = text_at(&value, "/response/model");
    chunk.timings = value.get("timings").filter(|t| t.is_object()).cloned();
    let delta = || text_at(&value, "/delta");
    match kind.as_str() {
        "response.output_text.delta" => {
            if let Some(text) = delta() {
                chunk.answer = text;
                chunk.classification = Classification::Answer;
            }
        }
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
            if let Some(text) = delta() {
                chunk.reasoning = text;
                chunk.classification = Classification::Reasoning;
            }
        }
        "response.output_item.added" | "response.output_item.done"
            if value.pointer("/item/type").and_then(Value::as_str) == Some("function_call") =>
        {
            let added = kind == "response.output_item.added";
            chunk.tool_parts.push(ToolPart {
                index: output_index(&value),
                id: text_at(&value, "/item/call_id"),
                name: text_at(&value, "/item/name").filter(|_| added),
                // The added item's arguments (normally empty) start the text; the done item's
                // repeat the whole of it and are not added again.
                arguments: text_at(&value, "/item/arguments")
                    .filter(|_| added)
                    .unwrap_or_default(),
                closes: !added,
            });
            if chunk.tool_parts.iter().any(ToolPart::has_text) {
                chunk.tool_call = chunk.tool_parts[0].arguments.clone();
                chunk.classification = Classification::ToolCall;
            }
        }
        "response.function_call_arguments.delta" => {
            if let Some(text) = delta() {
                chunk.tool_parts.push(ToolPart {
                    index: output_index(&value),
                    arguments: text.clone(),
                    ..ToolPart::default()
                });
                chunk.tool_call = text;
                chunk.classification = Classification::ToolCall;
            }
        }
        "response.function_call_arguments.done" => chunk.tool_parts.push(ToolPart {
            index: output_index(&value),
            closes: true,
            ..ToolPart::default()
        }),
        "response.completed" | "response.incomplete" => {
            chunk.classification = Classification::Done;
            chunk.usage = value.pointer("/response/usage").and_then(parse_usage);
            chunk.finish_reason = Some(if kind == "response.completed" {
                "stop".to_string()
            } else {
                match text_at(&value, "/response/incomplete_details/reason").as_deref() {
                    Some("max_output_tokens") | None => "length".to_string(),
                    Some(other) => other.to_string(),
                }
            });
        }
        "response.failed" => {
            chunk.classification = Classification::Error;
            chunk.error = Some(
                text_at(&value, "/response/error/message").unwrap_or_else(|| value.to_string()),
            );
            chunk.error_type = text_at(&value, "/response/error/code").map(|c| error_type(&c));
        }
        "error" => {
            chunk.classification = Classification::Error;
            chunk.error = Some(
                text_at(&value, "/message")
                    .or_else(|| text_at(&value, "/error/message"))
                    .unwrap_or_else(|| value.to_string()),
            );
            chunk.error_type = text_at(&value, "/code").map(|c| error_type(&c));
        }
        _ => {}
    }
    Ok(chunk)
}

/// The record's finish reason of a finished Responses stream, which the API leaves implicit
/// (docs/methodology.md §3a): `response.completed` read as `stop` becomes
/// - `length` when the usage's `output_tokens` reached the request's `max_output_tokens`
///   (`ceiling`): a server that reports `completed` at the ceiling (llama.cpp does) cut the
///   answer off as surely as one that reports `response.incomplete`;
/// - else `tool_calls` when the last output the stream carried was a function call (chat's
///   `tool_calls` and Anthropic's `tool_use` say the same).
///
/// Anything else (`length` from `response.incomplete`, no finish) is kept.
pub fn settle_finish(state: &mut StreamState, ceiling: Option<u64>) {
    if state.finish_reason.as_deref() != Some("stop") {
        return;
    }
    let at_ceiling = matches!((state.output_tokens(), ceiling), (Some(n), Some(c)) if n >= c);
    if at_ceiling {
        state.finish_reason = Some("length".to_string());
    } else if state.ended_in_tool_call() {
        state.finish_reason = Some("tool_calls".to_string());
    }
}

/// An event's `output_index` (0 when absent).
fn output_index(value: &Value) -> u64 {
    value
        .get("output_index")
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// Responses usage: `input_tokens`, `output_tokens`, `total_tokens`,
/// `input_tokens_details.cached_tokens`, `output_tokens_details.reasoning_tokens`. `None`
/// unless it is an object.
pub fn parse_usage(value: &Value) -> Option<Usage> {
    value.as_object()?;
    let num = |pointer: &str| value.pointer(pointer).and_then(Value::as_u64);
    Some(Usage {
        prompt_tokens: num("/input_tokens"),
        completion_tokens: num("/output_tokens"),
        total_tokens: num("/total_tokens"),
        cached_tokens: num("/input_tokens_details/cached_tokens"),
        reasoning_tokens: num("/output_tokens_details/reasoning_tokens"),
    })
}

/// The record's error type of an error `code`: `rate_limit_exceeded` is `http_429`,
/// `server_error` and `server_is_overloaded` are `http_5xx` (the classes of their HTTP
/// statuses); any other code is `stream_error`.
fn error_type(code: &str) -> ErrorType {
    match code {
        "rate_limit_exceeded" => ErrorType::Http429,
        "server_error" | "server_is_overloaded" | "slow_down" => ErrorType::Http5xx,
        _ => ErrorType::StreamError,
    }
}
