//! A forced tool call as the answer (issue 39 item 2): when a request offers a tool and forces
//! the model to call it, the simulator streams the same seeded draft it would send as a JSON
//! answer, as that call's arguments, in the request's dialect. Legacy completions have no
//! tools and answer in text.
//!
//! Chat: the first piece opens `delta.tool_calls[0]` with its id, type and name; later pieces
//! carry `function.arguments` only; the finish is `tool_calls` (or `length`). Anthropic: a
//! `tool_use` content block, `input_json_delta` pieces, `content_block_stop`, and stop reason
//! `tool_use` (or `max_tokens`). Responses: a `function_call` output item, `response.function_call_arguments.delta`
//! pieces, `.done` and the done item, then `response.completed` (on a length stop the call is
//! left open and `response.incomplete` follows).

use crate::dialect::{self, Rendered, Tracker, close_block};
use crate::draft::{Draft, Payload};
use crate::sse::{Chunker, Label};
use openbench_common::spec::Api;
use serde_json::{Value, json};

/// The forced tool's name in a request body of `api`'s dialect: chat `tool_choice: {type:
/// function, function: {name}}`, Responses `{type: function, name}`, Anthropic `{type: tool,
/// name}`; `None` without a forced tool.
pub fn forced_tool(api: Api, body: &Value) -> Option<String> {
    let choice = body.get("tool_choice")?;
    let kind = choice.get("type").and_then(Value::as_str);
    let name = match api {
        Api::OpenaiChat if kind == Some("function") => choice.pointer("/function/name"),
        Api::OpenaiResponses if kind == Some("function") => choice.get("name"),
        Api::AnthropicMessages if kind == Some("tool") => choice.get("name"),
        _ => None,
    };
    name.and_then(Value::as_str).map(str::to_string)
}

/// The events of an answer piece or the finish when the draft answers with a tool call; `None`
/// for every other payload (rendered as usual).
pub fn events(
    draft: &Draft,
    chunker: &Chunker,
    payload: &Payload,
    t: &mut Tracker,
) -> Option<Vec<Rendered>> {
    let name = draft.tool.as_deref()?;
    let call_id = format!("call_{}", draft.id_hex);
    match (draft.api, payload) {
        (Api::OpenaiCompletions, _) => None,
        (Api::OpenaiChat, Payload::Answer(piece)) => {
            let call = if t.tool_started {
                json!({"index": 0, "function": {"arguments": piece}})
            } else {
                json!({"index": 0, "id": call_id, "type": "function",
                    "function": {"name": name, "arguments": piece}})
            };
            t.tool_started = true;
            let data = chunker.chunk(json!({"tool_calls": [call]}), None);
            Some(vec![(Label::Answer, None, data)])
        }
        (Api::OpenaiChat, Payload::Finish(reason)) => {
            let reason = if *reason == "length" {
                "length"
            } else {
                "tool_calls"
            };
            Some(vec![(
                Label::Finish,
                None,
                chunker.chunk(json!({}), Some(reason)),
            )])
        }
        (Api::AnthropicMessages, Payload::Answer(piece)) => {
            let mut out = Vec::new();
            if !t.tool_started {
                close_block(t, &mut out);
                let block = json!({"type": "tool_use", "id": format!("toolu_{}", draft.id_hex),
                    "name": name, "input": {}});
                let data = json!({"type": "content_block_start", "index": t.index, "content_block": block});
                out.push((Label::Role, Some("content_block_start"), data.to_string()));
                t.open = Some(false);
                t.tool_started = true;
            }
            t.tokens += 1;
            let data = json!({"type": "content_block_delta", "index": t.index,
                "delta": {"type": "input_json_delta", "partial_json": piece}});
            out.push((Label::Answer, Some("content_block_delta"), data.to_string()));
            Some(out)
        }
        (Api::AnthropicMessages, Payload::Finish(reason)) => {
            let mut out = Vec::new();
            close_block(t, &mut out);
            let stop = if *reason == "length" {
                "max_tokens"
            } else {
                "tool_use"
            };
            let data = json!({"type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": t.tokens}});
            out.push((Label::Finish, Some("message_delta"), data.to_string()));
            Some(out)
        }
        (Api::OpenaiResponses, Payload::Answer(piece)) => {
            let mut out = Vec::new();
            let item_id = format!("fc_{}", draft.id_hex);
            if !t.tool_started {
                if t.open.take().is_some() {
                    t.index += 1;
                }
                let item = json!({"type": "function_call", "id": item_id, "call_id": call_id,
                    "name": name, "arguments": "", "status": "in_progress"});
                let data = json!({"type": "response.output_item.added", "sequence_number": t.next(),
                    "output_index": t.index, "item": item});
                out.push((
                    Label::Role,
                    Some("response.output_item.added"),
                    data.to_string(),
                ));
                t.tool_started = true;
            }
            t.tokens += 1;
            t.tool_arguments.push_str(piece);
            let data = json!({"type": "response.function_call_arguments.delta",
                "sequence_number": t.next(), "item_id": item_id, "output_index": t.index,
                "delta": piece});
            out.push((
                Label::Answer,
                Some("response.function_call_arguments.delta"),
                data.to_string(),
            ));
            Some(out)
        }
        (Api::OpenaiResponses, Payload::Finish(reason)) => {
            let mut out = Vec::new();
            if *reason != "length" && t.tool_started {
                let item_id = format!("fc_{}", draft.id_hex);
                let arguments = t.tool_arguments.clone();
                let data = json!({"type": "response.function_call_arguments.done",
                    "sequence_number": t.next(), "item_id": item_id, "output_index": t.index,
                    "arguments": arguments});
                out.push((
                    Label::Role,
                    Some("response.function_call_arguments.done"),
                    data.to_string(),
                ));
                let item = json!({"type": "function_call", "id": item_id, "call_id": call_id,
                    "name": name, "arguments": arguments, "status": "completed"});
                let data = json!({"type": "response.output_item.done", "sequence_number": t.next(),
                    "output_index": t.index, "item": item});
                out.push((
                    Label::Role,
                    Some("response.output_item.done"),
                    data.to_string(),
                ));
            }
            // The ending itself is the text answer's: no text block is open, so none is closed.
            t.open = None;
            out.extend(dialect::responses(draft, payload, t));
            Some(out)
        }
        _ => None,
    }
}
