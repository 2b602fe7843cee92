//! Redaction: every credential value that would leave the probe in any string becomes
//! `[redacted]`. One function, applied to every outgoing string.

use crate::credentials::Credentials;
use openbench_common::record::Execution;

/// The replacement text.
pub const REDACTED: &str = "[redacted]";

/// Replaces known secret values in strings.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.len())
    }
}

impl Redactor {
    /// A redactor for every value held by `credentials`.
    pub fn new(credentials: &Credentials) -> Redactor {
        let mut secrets: Vec<String> = credentials
            .secret_values()
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .collect();
        // Longest first, so a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        self.redact_in_place(&mut out);
        out
    }

    /// Replaces secrets inside `text`.
    pub fn redact_in_place(&self, text: &mut String) {
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                *text = text.replace(secret.as_str(), REDACTED);
            }
        }
    }

    /// Redacts every string of a JSON value (keys included).
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => self.redact_in_place(s),
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            serde_json::Value::Object(map) => {
                let entries = std::mem::take(map);
                for (mut k, mut v) in entries {
                    self.redact_in_place(&mut k);
                    self.redact_json(&mut v);
                    map.insert(k, v);
                }
            }
            _ => {}
        }
    }

    /// Redacts every string of an execution before it leaves the executor.
    pub fn redact_execution(&self, execution: &mut Execution) {
        if self.secrets.is_empty() {
            return;
        }
        let r = &mut execution.record;
        for s in [
            &mut r.run_id,
            &mut r.round_id,
            &mut r.request_id,
            &mut r.task_family,
            &mut r.item_id,
            &mut r.provider,
            &mut r.region,
            &mut r.lane,
            &mut r.requested_model,
            &mut r.started_at,
            &mut r.answer_text,
            &mut r.reasoning_text,
        ] {
            self.redact_in_place(s);
        }
        for s in [
            &mut r.response_model,
            &mut r.error_message,
            &mut r.finish_reason,
            &mut r.provider_request_id,
        ]
        .into_iter()
        .flatten()
        {
            self.redact_in_place(s);
        }
        let headers = std::mem::take(&mut r.rate_limit_headers);
        r.rate_limit_headers = headers
            .into_iter()
            .map(|(k, v)| (self.redact(&k), self.redact(&v)))
            .collect();
        if let Some(t) = r.server_timings.as_mut() {
            self.redact_json(t);
        }
        for e in &mut execution.events {
            self.redact_in_place(&mut e.request_id);
            self.redact_in_place(&mut e.reasoning);
            self.redact_in_place(&mut e.answer);
            for s in [&mut e.event, &mut e.finish_reason].into_iter().flatten() {
                self.redact_in_place(s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_every_occurrence_longest_first() {
        let c = Credentials::from_pairs([("A", "sk-abc"), ("B", "sk-abcdef")]);
        let r = Redactor::new(&c);
        assert_eq!(
            r.redact("key sk-abcdef and sk-abc, sk-abc"),
            "key [redacted] and [redacted], [redacted]"
        );
        let mut v = serde_json::json!({"sk-abc": ["x sk-abc", 1]});
        r.redact_json(&mut v);
        assert_eq!(v, serde_json::json!({"[redacted]": ["x [redacted]", 1]}));
    }
}
