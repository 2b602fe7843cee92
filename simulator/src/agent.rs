//! The simulated agent (docs/agents.md): a request that offers tools and whose question is an
//! agent item's (a canned answer of group [`AGENT_GROUP`] carrying an [`AgentScript`]) is
//! answered deterministically. While fewer tool results came back than the script has calls,
//! the model makes the next scripted call; then it answers with the JSON object the script
//! reads from the results it was given, so a wrong tool result gives a wrong answer.
//!
//! With the quirk `agent-wrong-tool` it calls the *other* offered tool with the scripted
//! arguments instead (so its tool calls score wrong, and the harness's error result makes its
//! answer wrong too), and still answers once it has as many results as calls.
//!
//! Tool-loop messages are read in every dialect into the same `(role, text)` pairs: a call is
//! `("tool_call", "NAME ARGUMENTS")` with the arguments as compact JSON, a result is
//! `("tool_result", TEXT)`; ids are left out, so the same loop seeds the same draws in every
//! dialect.

use crate::quirk::Quirk;
use crate::request::SimRequest;
use openbench_common::agent::{AGENT_GROUP, AgentScript};
use openbench_common::workflow::CannedAnswer;
use serde_json::Value;

/// What the simulated agent does with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Call `name` with `arguments` (compact JSON text).
    Call {
        /// The function.
        name: String,
        /// Its arguments.
        arguments: String,
    },
    /// The final answer text.
    Answer(String),
}

/// The agent's action for `request`, or `None` when it is not an agent request (no tools
/// offered, or no agent item asks its question).
pub fn act(request: &SimRequest, answers: &[CannedAnswer]) -> Option<Action> {
    if request.offered.is_empty() {
        return None;
    }
    let canned = answers
        .iter()
        .find(|a| a.group == AGENT_GROUP && a.user_prompt == request.user_prompt)?;
    let script: AgentScript = serde_json::from_str(&canned.correct).ok()?;
    let results: Vec<&str> = request
        .messages
        .iter()
        .filter(|(role, _)| role == "tool_result")
        .map(|(_, text)| text.as_str())
        .collect();
    let Some(call) = script.calls.get(results.len()) else {
        return Some(Action::Answer(script.answer_from(&results)));
    };
    let mut name = call.name.clone();
    if request.forced.contains(&Quirk::AgentWrongTool)
        && let Some(other) = request.offered.iter().find(|n| **n != call.name)
    {
        name.clone_from(other);
    }
    Some(Action::Call {
        name,
        arguments: call.arguments.to_string(),
    })
}

/// The names of the tools a body offers: chat `tools[].function.name`, Responses and Anthropic
/// `tools[].name`.
pub fn offered(body: &Value) -> Vec<String> {
    body.get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t.pointer("/function/name")
                .or_else(|| t.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

/// The `(role, text)` pairs of one message or input item of any dialect (see the module
/// documentation); a plain message is one `(role, content)` pair as always.
pub fn item_pairs(item: &Value) -> Vec<(String, String)> {
    let role = item.get("role").and_then(Value::as_str).unwrap_or_default();
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    match item.get("type").and_then(Value::as_str) {
        // Responses input items.
        Some("function_call") => {
            return vec![call_pair(
                &text(item.get("name")),
                &text(item.get("arguments")),
            )];
        }
        Some("function_call_output") => {
            return vec![("tool_result".into(), text(item.get("output")))];
        }
        _ => {}
    }
    if role == "tool" {
        return vec![("tool_result".into(), text(item.get("content")))];
    }
    let mut out = Vec::new();
    match item.get("content") {
        // Anthropic content blocks.
        Some(Value::Array(blocks)) => {
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        let input = b.get("input").map(Value::to_string).unwrap_or_default();
                        out.push(call_pair(&text(b.get("name")), &input));
                    }
                    Some("tool_result") => {
                        out.push(("tool_result".into(), text(b.get("content"))));
                    }
                    _ => out.push((role.to_string(), text(b.get("text")))),
                }
            }
        }
        content => {
            let calls = item.get("tool_calls").and_then(Value::as_array);
            let content = text(content);
            if calls.is_none() || !content.is_empty() {
                out.push((role.to_string(), content));
            }
            for c in calls.into_iter().flatten() {
                out.push(call_pair(
                    &text(c.pointer("/function/name")),
                    &text(c.pointer("/function/arguments")),
                ));
            }
        }
    }
    out
}

/// A call's pair: its name and its arguments as compact JSON (as sent when they are not JSON).
fn call_pair(name: &str, arguments: &str) -> (String, String) {
    let arguments = serde_json::from_str::<Value>(arguments)
        .map_or_else(|_| arguments.to_string(), |v| v.to_string());
    ("tool_call".into(), format!("{name} {arguments}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_dialect_reads_the_same_loop_into_the_same_pairs() {
        let chat = [
            json!({"role": "user", "content": "q"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                "type": "function", "function": {"name": "f", "arguments": "{\"id\": \"a\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "call_1", "content": "r"}),
        ];
        let responses = [
            json!({"role": "user", "content": "q"}),
            json!({"type": "function_call", "call_id": "call_1", "name": "f",
                "arguments": "{\"id\":\"a\"}"}),
            json!({"type": "function_call_output", "call_id": "call_1", "output": "r"}),
        ];
        let anthropic = [
            json!({"role": "user", "content": "q"}),
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                "name": "f", "input": {"id": "a"}}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                "content": "r"}]}),
        ];
        let expected: Vec<(String, String)> = vec![
            ("user".into(), "q".into()),
            ("tool_call".into(), "f {\"id\":\"a\"}".into()),
            ("tool_result".into(), "r".into()),
        ];
        for items in [&chat[..], &responses[..], &anthropic[..]] {
            let pairs: Vec<_> = items.iter().flat_map(item_pairs).collect();
            assert_eq!(pairs, expected);
        }
    }
}
