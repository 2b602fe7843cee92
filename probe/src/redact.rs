//! Redaction: every credential value that would leave the probe in any string becomes
//! `[redacted]`. One function, applied to every outgoing string.
//!
//! Besides each value as written, the redactor looks for its base64 forms (standard and
//! URL-safe alphabets, at each of the three byte alignments a value can have inside a longer
//! encoded text) and, for the answer and reasoning texts, for a value split across events: those
//! are redacted over the concatenated stream, and every event's part of a match is replaced.

use crate::credentials::Credentials;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
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
            .flat_map(|v| std::iter::once(v.to_string()).chain(base64_forms(v)))
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

    /// Redacts secrets that may be split across `parts` (consecutive pieces of one text): the
    /// matches are found in the concatenation and each part's share of a match becomes
    /// `[redacted]`, so no fragment of a secret stays in any part.
    pub fn redact_across(&self, parts: &mut [&mut String]) {
        if self.secrets.is_empty() || parts.len() < 2 {
            parts.iter_mut().for_each(|p| self.redact_in_place(p));
            return;
        }
        let joined: String = parts.iter().map(|p| p.as_str()).collect();
        let mut covered = vec![false; joined.len()];
        for secret in &self.secrets {
            for (start, _) in joined.match_indices(secret.as_str()) {
                covered[start..start + secret.len()].fill(true);
            }
        }
        let mut start = 0;
        for part in parts.iter_mut() {
            let end = start + part.len();
            if covered[start..end].contains(&true) {
                **part = replace_covered(part, &covered[start..end]);
            }
            start = end;
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
        let (mut answers, mut reasonings): (Vec<_>, Vec<_>) = execution
            .events
            .iter_mut()
            .map(|e| (&mut e.answer, &mut e.reasoning))
            .unzip();
        self.redact_across(&mut answers);
        self.redact_across(&mut reasonings);
        for e in &mut execution.events {
            self.redact_in_place(&mut e.request_id);
            for s in [&mut e.event, &mut e.finish_reason].into_iter().flatten() {
                self.redact_in_place(s);
            }
        }
    }
}

/// Shortest base64 core worth looking for: shorter ones would redact innocent text.
const MIN_BASE64_CORE: usize = 12;

/// The base64 text that always appears when `secret` is encoded inside a longer text, for each
/// byte alignment (0, 1 or 2 bytes before it in its 3-byte group) and both alphabets: the
/// characters that depend only on the secret's bytes.
fn base64_forms(secret: &str) -> Vec<String> {
    let mut forms = Vec::new();
    for shift in 0..3usize {
        let mut bytes = vec![0u8; shift];
        bytes.extend_from_slice(secret.as_bytes());
        // Whole 3-byte groups only: a partial last group depends on what follows.
        bytes.truncate(bytes.len() / 3 * 3);
        for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&bytes);
            // The first group mixes in the bytes before the secret.
            let core = if shift == 0 {
                encoded.as_str()
            } else {
                encoded.get(4..).unwrap_or("")
            };
            if core.len() >= MIN_BASE64_CORE && !forms.iter().any(|f| f == core) {
                forms.push(core.to_string());
            }
        }
    }
    forms
}

/// `text` with each run of covered bytes replaced by one `[redacted]` (runs start and end on
/// character boundaries, since matches and parts do).
fn replace_covered(text: &str, covered: &[bool]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if covered[i] {
            while i < text.len() && covered[i] {
                i += 1;
            }
            out.push_str(REDACTED);
        } else {
            let start = i;
            while i < text.len() && !covered[i] {
                i += 1;
            }
            out.push_str(text.get(start..i).unwrap_or_default());
        }
    }
    out
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

    const SENTINEL: &str = "sk-sentinel-0123456789abcdef";

    #[test]
    fn a_secret_split_across_parts_leaves_no_fragment_in_any_part() {
        let r = Redactor::new(&Credentials::from_pairs([("K", SENTINEL)]));
        let (mut a, mut b, mut c) = (
            "key: sk-sentinel-01".to_string(),
            "23456789".to_string(),
            "abcdef, done".to_string(),
        );
        r.redact_across(&mut [&mut a, &mut b, &mut c]);
        assert_eq!(
            [a.as_str(), b.as_str(), c.as_str()],
            ["key: [redacted]", "[redacted]", "[redacted], done"]
        );
    }

    #[test]
    fn base64_forms_are_redacted_at_every_alignment() {
        let r = Redactor::new(&Credentials::from_pairs([("K", SENTINEL)]));
        // Written out by hand (`printf 'PREFIX%s' KEY | base64`), one per alignment.
        for (encoded, prefix_chars) in [
            ("c2stc2VudGluZWwtMDEyMzQ1Njc4OWFiY2RlZg==", 0),
            ("OnNrLXNlbnRpbmVsLTAxMjM0NTY3ODlhYmNkZWY=", 4),
            ("Ojpzay1zZW50aW5lbC0wMTIzNDU2Nzg5YWJjZGVm", 4),
        ] {
            let out = r.redact(&format!("Basic {encoded}"));
            assert!(out.contains(REDACTED), "{encoded} -> {out}");
            // At most the prefix group and the last partial group survive.
            let kept = out.trim_start_matches("Basic ").replace(REDACTED, "");
            assert!(kept.len() <= prefix_chars + 4, "{encoded} -> {out}");
        }
    }
}
