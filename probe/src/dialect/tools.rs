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

/// The offered tool does not exist in this dialect (legacy completions).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {api} API has no tools: a request offering tool {tool:?} cannot be sent")]
pub struct NoTools {
    /// The dialect.
    pub api: Api,
    /// The tool's name.
    pub tool: String,
}

/// Adds `tool` and its tool choice to a built body, as `api` takes them.
pub fn offer(body: &mut Value, api: Api, tool: &ToolOffer) -> Result<(), NoTools> {
    let (tools, choice) = match api {
        Api::OpenaiChat => (
            json!([{"type": "function", "function": {
                "name": tool.name, "description": tool.description, "parameters": tool.parameters}}]),
            match tool.choice {
                ToolChoice::Forced => json!({"type": "function", "function": {"name": tool.name}}),
                ToolChoice::Auto => json!("auto"),
            },
        ),
        // `strict` is required by the Responses type and defaults to true there; false keeps the
        // sampling unconstrained, as chat's (default false) and Anthropic's tools are.
        Api::OpenaiResponses => (
            json!([{"type": "function", "name": tool.name, "description": tool.description,
                "parameters": tool.parameters, "strict": false}]),
            match tool.choice {
                ToolChoice::Forced => json!({"type": "function", "name": tool.name}),
                ToolChoice::Auto => json!("auto"),
            },
        ),
        Api::AnthropicMessages => (
            json!([{"name": tool.name, "description": tool.description,
                "input_schema": tool.parameters}]),
            match tool.choice {
                ToolChoice::Forced => json!({"type": "tool", "name": tool.name}),
                ToolChoice::Auto => json!({"type": "auto"}),
            },
        ),
        Api::OpenaiCompletions => {
            debug_assert!(!api.has_tools());
            return Err(NoTools {
                api,
                tool: tool.name.clone(),
            });
        }
    };
    if let Some(map) = body.as_object_mut() {
        map.insert("tools".into(), tools);
        map.insert("tool_choice".into(), choice);
    }
    Ok(())
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
