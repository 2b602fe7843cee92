//! The workflow-agnostic part of reducing a final record for a report: lanes interned to small
//! indices, the details kept of a failure, the labels records serialize outcomes and error types
//! with, and the model-echo check. A workflow's own observation type (which adds what it scores)
//! builds on these and implements [`LaneRecord`] so [`crate::admission`] can check it.

use openbench_common::record::{ErrorType, Outcome, TerminalRecord};
use std::collections::HashMap;

/// What every report reads of one reduced record: which request, which round, which lane.
pub trait LaneRecord {
    /// Request id (`req-…`).
    fn request_id(&self) -> &str;
    /// Round index.
    fn round_index(&self) -> u64;
    /// Lane index into the report's [`LaneTable`].
    fn lane(&self) -> u32;
}

/// A lane (provider, region) as seen in records or the lock.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LaneKey {
    /// Lane label (`provider`, or `provider@region` with several regions).
    pub lane: String,
    /// Provider key.
    pub provider: String,
    /// Region label.
    pub region: String,
}

impl LaneKey {
    /// The lane a record was measured on; a record without a lane label (written before lanes
    /// had regions) is labelled by its provider.
    pub fn of_record(record: &TerminalRecord) -> LaneKey {
        let lane = if record.lane.is_empty() {
            record.provider.clone()
        } else {
            record.lane.clone()
        };
        LaneKey {
            lane,
            provider: record.provider.clone(),
            region: record.region.clone(),
        }
    }
}

/// Interns lanes so each observation carries a small index.
#[derive(Debug, Default)]
pub struct LaneTable {
    /// Lanes by index.
    pub lanes: Vec<LaneKey>,
    index: HashMap<LaneKey, u32>,
}

impl LaneTable {
    /// Index of `key`, adding it when new.
    pub fn intern(&mut self, key: LaneKey) -> u32 {
        if let Some(i) = self.index.get(&key) {
            return *i;
        }
        let i = self.lanes.len() as u32;
        self.index.insert(key.clone(), i);
        self.lanes.push(key);
        i
    }

    /// Lane label → its index (the first, should two lanes share a label), for callers that
    /// hold rows keyed by label and observations keyed by index.
    pub fn index_by_label(&self) -> HashMap<&str, usize> {
        self.lanes
            .iter()
            .enumerate()
            .rev()
            .map(|(i, l)| (l.lane.as_str(), i))
            .collect()
    }
}

/// A failure's details, kept only for failed (or harness) records.
#[derive(Debug, Clone, PartialEq)]
pub struct FailureInfo {
    /// Outcome label (`timeout`, `http_error`, …).
    pub outcome: Outcome,
    /// Finer error type.
    pub error_type: Option<ErrorType>,
    /// HTTP status.
    pub http_status: Option<u16>,
    /// Redacted message.
    pub message: Option<String>,
}

impl FailureInfo {
    /// The failure details of a record that did not complete; `None` for a completed one.
    pub fn of_record(record: &TerminalRecord) -> Option<Box<FailureInfo>> {
        (record.outcome != Outcome::Completed).then(|| {
            Box::new(FailureInfo {
                outcome: record.outcome,
                error_type: record.error_type,
                http_status: record.http_status,
                message: record.error_message.clone(),
            })
        })
    }
}

/// For a completed record: `None` when the echoed model equals the requested one, else what was
/// echoed (`""` when nothing was); `None` for a record that did not complete. `requested` gives
/// the lock's model id of a provider, used when the record does not name the requested model.
pub fn model_mismatch(
    record: &TerminalRecord,
    requested: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    if record.outcome != Outcome::Completed {
        return None;
    }
    let want = if record.requested_model.is_empty() {
        requested(&record.provider).unwrap_or_default()
    } else {
        record.requested_model.clone()
    };
    match &record.response_model {
        Some(m) if *m == want => None,
        Some(m) => Some(m.clone()),
        None => Some(String::new()),
    }
}

/// The label of an error type, as serialized in records.
pub fn error_type_label(e: ErrorType) -> &'static str {
    match e {
        ErrorType::Http429 => "http_429",
        ErrorType::OtherHttp4xx => "other_http_4xx",
        ErrorType::Http5xx => "http_5xx",
        ErrorType::OtherHttpStatus => "other_http_status",
        ErrorType::Timeout => "timeout",
        ErrorType::Connect => "connect",
        ErrorType::Transport => "transport",
        ErrorType::InvalidSse => "invalid_sse",
        ErrorType::TruncatedStream => "truncated_stream",
        ErrorType::LimitLineBytes => "limit_line_bytes",
        ErrorType::LimitEventBytes => "limit_event_bytes",
        ErrorType::LimitEvents => "limit_events",
        ErrorType::LimitAnswerBytes => "limit_answer_bytes",
        ErrorType::StreamError => "stream_error",
        ErrorType::Harness => "harness",
        ErrorType::RegionUnreachable => "region_unreachable",
    }
}

/// The label of an outcome, as serialized in records.
pub fn outcome_label(o: Outcome) -> &'static str {
    match o {
        Outcome::Completed => "completed",
        Outcome::HttpError => "http_error",
        Outcome::Timeout => "timeout",
        Outcome::TransportError => "transport_error",
        Outcome::StreamLimitExceeded => "stream_limit_exceeded",
        Outcome::StreamError => "stream_error",
        Outcome::HarnessError => "harness_error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record read from JSON, as reports read them; `extra` sets or overrides fields.
    fn record(extra: serde_json::Value) -> TerminalRecord {
        let mut base = serde_json::json!({
            "schema_version": 1, "request_id": "req-1", "provider": "acme", "region": "eu",
            "started_at": "2026-01-01T00:00:00Z", "outcome": "completed",
            "answer_text": "{}", "reasoning_text": ""
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            base[k] = v.clone();
        }
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn a_record_without_a_lane_label_is_its_providers_lane() {
        let old = LaneKey::of_record(&record(serde_json::json!({})));
        assert_eq!(old.lane, "acme");
        let new = LaneKey::of_record(&record(serde_json::json!({"lane": "acme@eu"})));
        assert_eq!(
            new,
            LaneKey {
                lane: "acme@eu".into(),
                provider: "acme".into(),
                region: "eu".into()
            }
        );
    }

    #[test]
    fn a_label_maps_to_its_first_lane() {
        let key = |lane: &str, region: &str| LaneKey {
            lane: lane.into(),
            provider: "p".into(),
            region: region.into(),
        };
        let mut table = LaneTable::default();
        for k in [key("b", "r"), key("a", "r"), key("b", "s")] {
            table.intern(k);
        }
        // Three lanes, two labelled `b` (indices 0 and 2): the label names the first.
        let index = table.index_by_label();
        assert_eq!(index.len(), 2);
        assert_eq!((index["b"], index["a"]), (0, 1));
    }

    #[test]
    fn lanes_are_interned_once_in_first_seen_order() {
        let key = |l: &str| LaneKey {
            lane: l.into(),
            provider: l.into(),
            region: "r".into(),
        };
        let mut t = LaneTable::default();
        assert_eq!(t.intern(key("b")), 0);
        assert_eq!(t.intern(key("a")), 1);
        assert_eq!(t.intern(key("b")), 0);
        assert_eq!(t.lanes, vec![key("b"), key("a")]);
    }

    #[test]
    fn only_a_failed_record_keeps_failure_details() {
        assert_eq!(FailureInfo::of_record(&record(serde_json::json!({}))), None);
        let failed = record(serde_json::json!({
            "outcome": "http_error", "error_type": "http_429", "http_status": 429,
            "error_message": "slow down"
        }));
        assert_eq!(
            FailureInfo::of_record(&failed).as_deref(),
            Some(&FailureInfo {
                outcome: Outcome::HttpError,
                error_type: Some(ErrorType::Http429),
                http_status: Some(429),
                message: Some("slow down".into()),
            })
        );
    }

    #[test]
    fn the_model_echo_is_checked_against_the_record_else_the_lock() {
        let lock = |p: &str| (p == "acme").then(|| "lock-model".to_string());
        let echo = |extra| model_mismatch(&record(extra), &lock);
        assert_eq!(
            echo(serde_json::json!({"response_model": "lock-model"})),
            None
        );
        assert_eq!(
            echo(serde_json::json!({"requested_model": "m1", "response_model": "lock-model"})),
            Some("lock-model".into())
        );
        assert_eq!(
            echo(serde_json::json!({"requested_model": "m1", "response_model": "m1"})),
            None
        );
        assert_eq!(echo(serde_json::json!({})), Some(String::new()));
        assert_eq!(
            echo(serde_json::json!({"outcome": "timeout", "response_model": "x"})),
            None
        );
    }

    #[test]
    fn labels_match_the_records_serialization() {
        for e in [
            ErrorType::Http429,
            ErrorType::OtherHttp4xx,
            ErrorType::RegionUnreachable,
        ] {
            assert_eq!(
                serde_json::to_value(e).unwrap(),
                serde_json::Value::from(error_type_label(e))
            );
        }
        for o in [
            Outcome::Completed,
            Outcome::TransportError,
            Outcome::HarnessError,
        ] {
            assert_eq!(
                serde_json::to_value(o).unwrap(),
                serde_json::Value::from(outcome_label(o))
            );
        }
    }
}
