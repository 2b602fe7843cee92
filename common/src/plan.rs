//! Planned requests: what the coordinator asks a probe to execute, and the ids that name them.

use crate::hash::short_id;
use serde::{Deserialize, Serialize};

/// One chat message of the fixed request contract (one system, one user).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system` or `user`.
    pub role: String,
    /// The message text.
    pub content: String,
}

/// A request the coordinator planned and a probe executes. Carries no credentials: each probe
/// reads its own from its environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedRequest {
    /// Run this request belongs to.
    pub run_id: String,
    /// `round-…` id.
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
    /// System then user message.
    pub messages: Vec<ChatMessage>,
    /// Absolute client deadline covering connect and the whole stream, ms.
    pub deadline_ms: u64,
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
}
