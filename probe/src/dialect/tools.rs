//! Tool calls in every dialect (docs/methodology.md §3b): the offered tool rendered as each API
//! takes it, and each dialect's tool-call events read into [`ToolPart`]s that one fold in
//! [`crate::record`] joins into calls.
//!
//! Shapes, as the SDKs type them: OpenAI chat `tools: [{type: function, function: {name,
//! description, parameters}}]` with `tool_choice: {type: function, function: {name}}`
//! (openai-python `types/chat/chat_completion_named_tool_choice_param.py`); Responses
//! `tools: [{type: function, name, description, parameters, strict}]` with `tool_choice:
//! {type: function, name}` (`types/responses/function_tool_param.py`,
//! `tool_choice_function_param.py`); Anthropic `tools: [{name, description, input_schema}]`
//! with `tool_choice: {type: tool, name}` (anthropic-sdk-python `types/tool_param.py`,
//! `tool_choice_tool_param.py`). Legacy completions have no tools.

use openbench_common::spec::Api;
use openbench_common::tool::{ToolChoice, ToolOffer};
use serde_json::{Value, json};

/// One dialect event's share of a tool call: which call (the dialect's own index: chat's
/// `tool_calls[].index`, Anthropic's content block index, Responses' `output_index`), its id
/// and name when this event names them, an arguments fragment, and whether the event closes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPart {
    /// The call's index in its dialect.
    pub index: u64,
    /// The call id, when this event carries it.
    pub id: Option<String>,
    /// The function name, when this event carries it.
    pub name: Option<String>,
    /// An arguments fragment (may be empty).
    pub arguments: String,
    /// This event ends the call (Anthropic `content_block_stop`, Responses
    /// `response.function_call_arguments.done` / `response.output_item.done`).
    pub closes: bool,
}

impl ToolPart {
    /// True when the part carries model output: a name or an arguments fragment.
    pub fn has_text(&self) -> bool {
        self.name.as_deref().is_some_and(|n| !n.is_empty()) || !self.arguments.is_empty()
    }
}

/// The offered tool, or a tool loop's messages, do not exist in this dialect (legacy
/// completions).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {api} API has no tools: a request offering tool {tool:?} cannot be sent")]
pub struct NoTools {
    /// The dialect.
    pub api: Api,
    /// The tool's name (a tool loop's message: `tool call` or `tool result`).
    pub tool: String,
}

/// Adds `tool` and its tool choice to a built body, as `api` takes them.
pub fn offer(body: &mut Value, api: Api, tool: &ToolOffer) -> Result<(), NoTools> {
    offer_all(body, api, &[tool])
}

/// Adds every tool of `tools` (in order) and one tool choice to a built body, as `api` takes
/// them: the first forced tool's named choice when one is forced, else `auto`. Nothing for an
/// empty list, so bodies without tools keep their bytes.
pub fn offer_all(body: &mut Value, api: Api, tools: &[&ToolOffer]) -> Result<(), NoTools> {
    let Some(first) = tools.first() else {
        return Ok(());
    };
    let forced = tools.iter().find(|t| t.choice == ToolChoice::Forced);
    let rendered: Vec<Value> = match api {
        Api::OpenaiChat => tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect(),
        // `strict` is required by the Responses type and defaults to true there; false keeps the
        // sampling unconstrained, as chat's (default false) and Anthropic's tools are.
        Api::OpenaiResponses => tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description,
                    "parameters": t.parameters, "strict": false})
            })
            .collect(),
        Api::AnthropicMessages => tools
            .iter()
            .map(|t| {
                json!({"name": t.name, "description": t.description,
                    "input_schema": t.parameters})
            })
            .collect(),
        Api::OpenaiCompletions => {
            debug_assert!(!api.has_tools());
            return Err(NoTools {
                api,
                tool: first.name.clone(),
            });
        }
    };
    let choice = match (api, forced) {
        (Api::OpenaiChat, Some(t)) => json!({"type": "function", "function": {"name": t.name}}),
        (Api::OpenaiResponses, Some(t)) => json!({"type": "function", "name": t.name}),
        (Api::AnthropicMessages, Some(t)) => json!({"type": "tool", "name": t.name}),
        (Api::AnthropicMessages, None) => json!({"type": "auto"}),
        _ => json!("auto"),
    };
    if let Some(map) = body.as_object_mut() {
        map.insert("tools".into(), Value::Array(rendered));
        map.insert("tool_choice".into(), choice);
    }
    Ok(())
}

/// Refuses a tool loop's messages (a tool call or a tool result) in a dialect without tools.
pub fn check_messages(
    api: Api,
    messages: &[openbench_common::request::ChatMessage],
) -> Result<(), NoTools> {
    match messages.iter().find(|m| super::tool_loop::is_loop(m)) {
        Some(m) if !api.has_tools() => Err(NoTools {
            api,
            tool: if m.tool_calls.is_empty() {
                "tool result".into()
            } else {
                "tool call".into()
            },
        }),
        _ => Ok(()),
    }
}

/// The parts of an OpenAI chat `delta.tool_calls` list: `{index, id?, type?, function: {name?,
/// arguments?}}` each (the id and name come once, in a call's first fragment).
pub fn chat_parts(delta: &Value) -> Vec<ToolPart> {
    let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) else {
        return Vec::new();
    };
    calls
        .iter()
        .enumerate()
        .map(|(position, call)| ToolPart {
            index: call
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64),
            id: string(call, "/id"),
            name: string(call, "/function/name"),
            arguments: string(call, "/function/arguments").unwrap_or_default(),
            closes: false,
        })
        .collect()
}

/// A non-empty string at a JSON pointer.
pub(crate) fn string(value: &Value, pointer: &str) -> Option<String> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
