//! The messages of an agent's tool loop as each API takes them (docs/agents.md): an assistant
//! message that made tool calls and the tool messages carrying their results. A message with
//! neither renders exactly as before (`{role, content}`), so text-only bodies keep their bytes.
//!
//! Shapes, as the SDKs type them:
//! - OpenAI chat (openai-python `types/chat/chat_completion_assistant_message_param.py`,
//!   `chat_completion_tool_message_param.py`): the assistant message carries `tool_calls:
//!   [{id, type: function, function: {name, arguments}}]` and `content` (null when it said
//!   nothing: "required unless tool_calls is specified"); each result is `{role: tool,
//!   tool_call_id, content}`.
//! - OpenAI Responses (`types/responses/response_function_tool_call_param.py`,
//!   `response_input_param.py` `FunctionCallOutput`): each call is an input item `{type:
//!   function_call, call_id, name, arguments}` after the assistant's text (when it said any),
//!   each result `{type: function_call_output, call_id, output}`.
//! - Anthropic messages (anthropic-sdk-python `types/tool_use_block_param.py`,
//!   `tool_result_block_param.py`): the assistant turn's `content` is a list of blocks, its text
//!   (when any) then `{type: tool_use, id, name, input}` with the arguments as an object;
//!   consecutive results go in one user turn as `{type: tool_result, tool_use_id, content}`
//!   blocks (the API wants every result of a turn's calls in the next user turn).
//! - Legacy completions have no tools: a request carrying a tool loop is refused
//!   ([`super::tools::NoTools`]).

use super::role_name;
use openbench_common::request::{ChatMessage, Role};
use serde_json::{Map, Value, json};

/// True when `message` is part of a tool loop (an assistant message with tool calls, or a tool
/// result).
pub fn is_loop(message: &ChatMessage) -> bool {
    message.role == Role::Tool || !message.tool_calls.is_empty()
}

/// One chat-completions message.
pub fn chat_message(m: &ChatMessage) -> Value {
    if m.role == Role::Tool {
        return json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content});
    }
    if m.tool_calls.is_empty() {
        return json!({"role": m.role, "content": m.content});
    }
    let calls: Vec<Value> = m
        .tool_calls
        .iter()
        .map(|c| {
            json!({"id": c.id, "type": "function",
                "function": {"name": c.name, "arguments": c.arguments}})
        })
        .collect();
    let content = if m.content.is_empty() {
        Value::Null
    } else {
        json!(m.content)
    };
    json!({"role": role_name(m.role), "content": content, "tool_calls": calls})
}

/// The Responses `input` items of the (non-system) messages, in order.
pub fn responses_input(messages: &[&ChatMessage]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in messages {
        if m.role == Role::Tool {
            out.push(
                json!({"type": "function_call_output", "call_id": m.tool_call_id,
                "output": m.content}),
            );
            continue;
        }
        if m.tool_calls.is_empty() || !m.content.is_empty() {
            out.push(json!({"role": role_name(m.role), "content": m.content}));
        }
        for c in &m.tool_calls {
            out.push(
                json!({"type": "function_call", "call_id": c.id, "name": c.name,
                "arguments": c.arguments}),
            );
        }
    }
    out
}

/// The Anthropic `messages` of the (non-system) messages: consecutive tool results merged into
/// one user turn of `tool_result` blocks.
pub fn anthropic_messages(messages: &[&ChatMessage]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut results: Vec<Value> = Vec::new();
    let flush = |results: &mut Vec<Value>, out: &mut Vec<Value>| {
        if !results.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(results)}));
        }
    };
    for m in messages {
        if m.role == Role::Tool {
            results.push(json!({"type": "tool_result", "tool_use_id": m.tool_call_id,
                "content": m.content}));
            continue;
        }
        flush(&mut results, &mut out);
        if m.tool_calls.is_empty() {
            out.push(json!({"role": role_name(m.role), "content": m.content}));
            continue;
        }
        let mut blocks = Vec::new();
        if !m.content.is_empty() {
            blocks.push(json!({"type": "text", "text": m.content}));
        }
        for c in &m.tool_calls {
            blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name,
                "input": input_object(&c.arguments)}));
        }
        out.push(json!({"role": role_name(m.role), "content": blocks}));
    }
    flush(&mut results, &mut out);
    out
}

/// A call's arguments as the object Anthropic's `input` takes: the parsed text when it is a JSON
/// object, else `{}` (an agent's run ends at a malformed call, so that is never sent on).
fn input_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ => Value::Object(Map::new()),
    }
}

#[cfg(test)]
#[path = "tool_loop_tests.rs"]
mod tests;
