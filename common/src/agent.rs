//! What a workflow tells the simulator about an agent task (docs/agents.md): the tool calls a
//! right agent makes and how its final answer is read from the tool results it was given.
//!
//! An agent item's [`crate::workflow::CannedAnswer`] has group [`AGENT_GROUP`], its
//! `user_prompt` the item's question and its `correct` an [`AgentScript`] as JSON. The simulator
//! then plays the agent deterministically: while fewer results than scripted calls came back it
//! makes the next call; then it answers with the JSON object the script builds from the results
//! it received, so a wrong result gives a wrong answer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The canned-answer group of an agent item.
pub const AGENT_GROUP: &str = "agent";

/// One scripted tool call: a function name and its arguments object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptedCall {
    /// The function name (`lookup_meeting`).
    pub name: String,
    /// The arguments (`{"id": "mtg-0003"}`).
    pub arguments: Value,
}

/// One key of the final answer: `key` takes the string at `field` of the `result`-th tool
/// result (0-based, in the order the results were sent), or `""` when it has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerKey {
    /// The answer object's key.
    pub key: String,
    /// Which tool result it is read from.
    pub result: usize,
    /// The field of that result (a JSON object).
    pub field: String,
}

/// A right agent's run: its calls in order, then its answer read from the results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentScript {
    /// The calls, one per step.
    pub calls: Vec<ScriptedCall>,
    /// The final answer's keys.
    pub answer: Vec<AnswerKey>,
}

impl AgentScript {
    /// The final answer built from `results` (the tool results' texts, in order): a compact
    /// JSON object of the script's keys, in order.
    pub fn answer_from(&self, results: &[&str]) -> String {
        let mut out = serde_json::Map::new();
        for key in &self.answer {
            let value = results
                .get(key.result)
                .and_then(|r| serde_json::from_str::<Value>(r).ok())
                .and_then(|v| {
                    v.get(&key.field)
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .unwrap_or_default();
            out.insert(key.key.clone(), Value::String(value));
        }
        Value::Object(out).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_read_from_the_results_it_was_given() {
        let script = AgentScript {
            calls: Vec::new(),
            answer: vec![
                AnswerKey {
                    key: "organizer".into(),
                    result: 0,
                    field: "organizer".into(),
                },
                AnswerKey {
                    key: "owner".into(),
                    result: 1,
                    field: "owner".into(),
                },
            ],
        };
        assert_eq!(
            script.answer_from(&[r#"{"organizer":"Ada"}"#, r#"{"owner":"Alan"}"#]),
            r#"{"organizer":"Ada","owner":"Alan"}"#
        );
        // A result without the field (an error result) and a missing result give "".
        assert_eq!(
            script.answer_from(&[r#"{"error":"no meeting"}"#]),
            r#"{"organizer":"","owner":""}"#
        );
    }
}
