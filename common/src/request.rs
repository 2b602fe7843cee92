//! Planned requests: what the coordinator asks a probe to execute, who each request is, and
//! the ids that name them.

use crate::hash::short_id;
use serde::{Deserialize, Serialize};

/// Who sends a chat message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt.
    System,
    /// The user prompt.
    #[default]
    User,
    /// An earlier answer, for multi-turn requests (with the tool calls it made, in an agent's
    /// tool loop).
    Assistant,
    /// The result of one tool call, answering the call named by `tool_call_id` (an agent's
    /// tool loop). Each dialect renders it as its API takes it (docs/agents.md).
    Tool,
}

/// One chat message of a request (a workflow sends as many as its task needs).
///
/// A tool loop adds two kinds: an assistant message that made tool calls (`tool_calls`, its
/// text possibly empty) and a tool message carrying one call's result (`tool_call_id`,
/// `content`). Both fields are left out of the JSON when empty, so plans of text messages keep
/// their bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// System, user, assistant or tool.
    pub role: Role,
    /// The message text (a tool message: the tool's result).
    pub content: String,
    /// An assistant message: the tool calls it made, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<crate::tool::ToolCall>,
    /// A tool message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_call_id: String,
}

impl ChatMessage {
    /// A text message of `role`.
    pub fn text(role: Role, content: String) -> ChatMessage {
        ChatMessage {
            role,
            content,
            ..ChatMessage::default()
        }
    }

    /// An assistant message that made `tool_calls` (its text `content`, often empty).
    pub fn assistant_calls(
        content: impl Into<String>,
        tool_calls: Vec<crate::tool::ToolCall>,
    ) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            content: content.into(),
            tool_calls,
            tool_call_id: String::new(),
        }
    }

    /// The result `content` of the tool call `call_id`.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: call_id.into(),
        }
    }
}

/// A request the coordinator planned and a probe executes. Carries no credentials: each probe
/// reads its own from its environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedRequest {
    /// Who the request is (its fields sit at the top level of the JSON).
    #[serde(flatten)]
    pub identity: RequestIdentity,
    /// The messages, in order (micro-single-task: system then user).
    pub messages: Vec<ChatMessage>,
    /// Absolute client deadline covering connect and the whole stream, ms.
    pub deadline_ms: u64,
    /// This request's own output length (the load workflow's drawn length); absent, the
    /// contract's ceiling applies. Serialised only when present, so plans without it keep
    /// their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputLength>,
    /// Load phases only: the load of the request's phase (`poisson 16/s`, `closed c=8`), so the
    /// probe's spans and metrics say which load it served. Serialised only when present, so
    /// paired-rounds plans keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
    /// The tool this request offers (a workflow's `answer_via: tool_call`), rendered in the
    /// provider's dialect. Serialised only when present, so plans without it keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<crate::tool::ToolOffer>,
    /// The tools an agent's request offers, in order (several; the model chooses, so each is
    /// offered with `auto`). Rendered after `tool` when both are set. Serialised only when
    /// present, so plans without them keep their bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<crate::tool::ToolOffer>,
}

impl PlannedRequest {
    /// Every tool the request offers: `tool`, then `tools`.
    pub fn offered_tools(&self) -> Vec<&crate::tool::ToolOffer> {
        self.tool.iter().chain(self.tools.iter()).collect()
    }
}

/// How long one request's answer may (or, with `ignore_eos`, must) run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputLength {
    /// Completion ceiling sent in the adapter's max-tokens field instead of the contract's.
    pub max_tokens: u32,
    /// Also send `ignore_eos: true`, so the server generates exactly `max_tokens` (vLLM,
    /// SGLang and llama.cpp honour it; the simulator too).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_eos: bool,
}

/// Who a request is: the one definition of the fields that follow a request from the plan to its
/// terminal record (flattened into [`PlannedRequest`]; copied onto a record, field for field, by
/// `TerminalRecord::set_identity`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RequestIdentity {
    /// Run this request belongs to.
    pub run_id: String,
    /// `round-…` id of a paired round; empty (and left out of the JSON) for a load request,
    /// which its `phase` names.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub round_id: String,
    /// `req-…` id.
    pub request_id: String,
    /// 0-based round index.
    pub round_index: u64,
    /// Attempt (0 for a full run; 1 or 2 for a smoke).
    pub attempt: u32,
    /// Task family.
    pub task_family: String,
    /// Dataset item id.
    pub item_id: String,
    /// Provider key from the spec.
    pub provider: String,
    /// Region label of the lane.
    pub region: String,
    /// Lane label.
    pub lane: String,
    /// Load phases only: the phase's index in the schedule (paired rounds leave the three load
    /// fields out, so their plans and records keep their bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<u32>,
    /// Load phases only: the closed-loop slot (0 in an open loop), so one lane may have many
    /// requests in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
    /// Load phases only: the request's sequence number within its slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u64>,
}

/// `round-` + 24 hex of sha256(schedule_version, round_index, family, item_id, attempt).
pub fn round_id(
    schedule_version: &str,
    round_index: u64,
    family: &str,
    item_id: &str,
    attempt: u32,
) -> String {
    short_id(
        "round-",
        &[
            schedule_version,
            &round_index.to_string(),
            family,
            item_id,
            &attempt.to_string(),
        ],
    )
}

/// `req-` + 24 hex of sha256(schedule_version, provider, round_index, family, item_id, attempt).
pub fn request_id(
    schedule_version: &str,
    provider: &str,
    round_index: u64,
    family: &str,
    item_id: &str,
    attempt: u32,
) -> String {
    short_id(
        "req-",
        &[
            schedule_version,
            provider,
            &round_index.to_string(),
            family,
            item_id,
            &attempt.to_string(),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_methodology() {
        // Python: hashlib.sha256("\0".join(["v1", "zai", "3", "ticket-triage", "tt-0007", "0"])
        //                         .encode()).hexdigest()[:24]
        assert_eq!(
            request_id("v1", "zai", 3, "ticket-triage", "tt-0007", 0),
            "req-bf5f1f4f7712be5af3e6e2df"
        );
        // Python: the same over ["v1", "3", "ticket-triage", "tt-0007", "1"]
        assert_eq!(
            round_id("v1", 3, "ticket-triage", "tt-0007", 1),
            "round-5164f086b342aebdf806e8f6"
        );
    }

    #[test]
    fn identity_is_flat_on_the_wire_and_copied_whole_onto_the_record() {
        let identity = RequestIdentity {
            run_id: "run-1".into(),
            round_id: "round-2".into(),
            request_id: "req-3".into(),
            round_index: 4,
            attempt: 5,
            task_family: "ticket-triage".into(),
            item_id: "tt-6".into(),
            provider: "zai".into(),
            region: "eu".into(),
            lane: "zai@eu".into(),
            ..RequestIdentity::default()
        };
        let planned = PlannedRequest {
            identity: identity.clone(),
            messages: vec![ChatMessage::text(Role::User, "q".into())],
            deadline_ms: 7,
            output: None,
            load: None,
            tool: None,
            tools: Vec::new(),
        };
        let json = serde_json::to_string(&planned).unwrap_or_default();
        assert_eq!(
            json,
            "{\"run_id\":\"run-1\",\"round_id\":\"round-2\",\"request_id\":\"req-3\",\
             \"round_index\":4,\"attempt\":5,\"task_family\":\"ticket-triage\",\
             \"item_id\":\"tt-6\",\"provider\":\"zai\",\"region\":\"eu\",\
             \"lane\":\"zai@eu\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],\
             \"deadline_ms\":7}"
        );
        let back: Option<PlannedRequest> = serde_json::from_str(&json).ok();
        assert_eq!(back.as_ref(), Some(&planned));

        let mut record =
            crate::record::TerminalRecord::new(String::new(), crate::record::Outcome::Completed);
        record.set_identity(&identity);
        let copied = RequestIdentity {
            run_id: record.run_id.clone(),
            round_id: record.round_id.clone(),
            request_id: record.request_id.clone(),
            round_index: record.round_index,
            attempt: record.attempt,
            task_family: record.task_family.clone(),
            item_id: record.item_id.clone(),
            provider: record.provider.clone(),
            region: record.region.clone(),
            lane: record.lane.clone(),
            phase: record.phase,
            slot: record.slot,
            sequence: record.sequence,
        };
        assert_eq!(copied, identity);
    }
}
