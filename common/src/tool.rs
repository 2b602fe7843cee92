//! Tool calls (issue 39 item 2): the tool a request may offer, the call a stream carries back
//! and the two ways a streamed call can be broken. One shape for every API dialect: each
//! dialect renders a [`ToolOffer`] as its own API takes it and reads its own events back into
//! [`ToolCall`]s (docs/methodology.md §3b).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One function tool a request offers, and whether the model must call it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOffer {
    /// The function's name (`triage`).
    pub name: String,
    /// What the function does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// `forced`: the model must call this tool (the benchmark's choice, so the answer is the
    /// call); `auto`: it may answer in text instead.
    pub choice: ToolChoice,
}

/// The tool choice a request sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (`"auto"`).
    Auto,
    /// The model must call the offered tool (OpenAI `{type: function, …name}`, Anthropic
    /// `{type: tool, name}`).
    Forced,
}

/// One tool call reconstructed from a stream: its id, name and the arguments text exactly as
/// the fragments joined (parsed only when scored).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id (`call_…`, `toolu_…`); empty when it sent none.
    pub id: String,
    /// The function name.
    pub name: String,
    /// The arguments text, every fragment joined in arrival order.
    pub arguments: String,
}

/// Why a streamed tool call cannot be taken as the answer (METHODOLOGY §4 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallError {
    /// A call completed but its arguments are not one JSON value.
    MalformedToolCall,
    /// The stream ended, failed or hit the length stop while a call was still open.
    TruncatedToolCall,
}

impl ToolCallError {
    /// The name written in records and evaluations (`malformed_tool_call`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolCallError::MalformedToolCall => "malformed_tool_call",
            ToolCallError::TruncatedToolCall => "truncated_tool_call",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_methodology_names() {
        for e in [
            ToolCallError::MalformedToolCall,
            ToolCallError::TruncatedToolCall,
        ] {
            let json = serde_json::to_string(&e).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", e.as_str()));
        }
        assert_eq!(
            serde_json::to_string(&ToolChoice::Forced).unwrap_or_default(),
            "\"forced\""
        );
    }
}
