//! Redaction: every credential value that would leave the probe in any string becomes
//! `[redacted]`. One function, applied to every outgoing string.
//!
//! Besides each value as written, the redactor looks for its base64 forms (standard and
//! URL-safe alphabets, at each of the three byte alignments a value can have inside a longer
//! encoded text) and, for the answer and reasoning texts, for a value split across events: those
//! are redacted over the concatenated stream, and every event's part of a match is replaced.

use crate::classify::ERROR_SNIPPET_CHARS;
use crate::credentials::Credentials;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use openbench_common::record::{Execution, StreamEvent};

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
        let mut covered = Covered::of(parts.iter().map(|p| p.as_str()));
        self.cover(&mut covered, &(0..parts.len()).collect::<Vec<_>>(), false);
        covered.apply(parts);
    }

    /// Marks, in the concatenation of the parts at `order`, every secret, and with `cut_end`
    /// a piece of a secret's start ([`MIN_CUT_PIECE`] characters or more) that ends the text:
    /// the rest of that secret may have been cut off.
    fn cover(&self, covered: &mut Covered, order: &[usize], cut_end: bool) {
        if self.secrets.is_empty() {
            return;
        }
        let joined: String = order.iter().map(|&i| covered.texts[i].as_str()).collect();
        let mut marks = vec![false; joined.len()];
        for secret in &self.secrets {
            for (start, _) in joined.match_indices(secret.as_str()) {
                marks[start..start + secret.len()].fill(true);
            }
        }
        if cut_end && let Some(start) = self.cut_piece_start(&joined) {
            marks[start..].fill(true);
        }
        let mut at = 0;
        for &i in order {
            let len = covered.texts[i].len();
            for (mark, own) in marks[at..at + len].iter().zip(covered.marks[i].iter_mut()) {
                *own |= *mark;
            }
            at += len;
        }
    }

    /// Where the longest piece of a secret's start that ends `text` begins, when it is at least
    /// [`MIN_CUT_PIECE`] characters (and shorter than the whole secret).
    fn cut_piece_start(&self, text: &str) -> Option<usize> {
        self.secrets
            .iter()
            .filter_map(|secret| {
                secret
                    .char_indices()
                    .map(|(i, _)| i)
                    .skip(MIN_CUT_PIECE)
                    .filter(|&len| text.ends_with(&secret[..len]))
                    .max()
            })
            .max()
            .map(|len| text.len() - len)
    }

    /// `text` redacted, then cut to [`ERROR_SNIPPET_CHARS`] characters (marked `…`), with no piece
    /// of a secret left where the text ends or was cut. `before` is the response text that
    /// preceded it (a secret may start there): only `text` is returned.
    pub fn snippet_after(&self, before: &str, text: &str) -> String {
        let text = text.trim();
        let mut parts = [before.to_string(), text.to_string()];
        let mut covered = Covered::of(parts.iter().map(String::as_str));
        self.cover(&mut covered, &[0, 1], false);
        self.cover(&mut covered, &[1], true);
        {
            let [first, second] = &mut parts;
            covered.apply(&mut [first, second]);
        }
        let [_, text] = parts;
        match text.char_indices().nth(ERROR_SNIPPET_CHARS) {
            Some((cut, _)) => {
                let mut kept = [text[..cut].to_string()];
                let mut covered = Covered::of(kept.iter().map(String::as_str));
                self.cover(&mut covered, &[0], true);
                covered.apply(&mut kept.iter_mut().collect::<Vec<_>>());
                let [kept] = kept;
                format!("{kept}…")
            }
            None => text,
        }
    }

    /// [`Redactor::snippet_after`] with nothing before.
    pub fn snippet(&self, text: &str) -> String {
        self.snippet_after("", text)
    }

    /// The last `bytes` bytes (or a little more, to a character boundary) of the response text
    /// of `events`, reasoning before answer within each: what may hold the start of a secret
    /// that continues in what follows.
    pub fn response_tail(&self, events: &[StreamEvent]) -> String {
        let want = self.secrets.first().map_or(0, String::len);
        let mut pieces = Vec::new();
        let mut held = 0;
        for e in events.iter().rev() {
            if held >= want {
                break;
            }
            for text in [&e.answer, &e.reasoning] {
                held += text.len();
                pieces.push(text.as_str());
            }
        }
        pieces.reverse();
        pieces.concat()
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
        ] {
            self.redact_in_place(s);
        }
        for s in [&mut r.response_model, &mut r.provider_request_id]
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
        self.redact_response(execution);
        for e in &mut execution.events {
            self.redact_in_place(&mut e.request_id);
            // Event names and finish reasons are clipped: their ends may be cuts.
            for s in [&mut e.event, &mut e.finish_reason].into_iter().flatten() {
                self.redact_cut(s);
            }
        }
        if let Some(reason) = execution.record.finish_reason.as_mut() {
            self.redact_cut(reason);
        }
        if let Some(message) = execution.record.error_message.as_mut() {
            self.redact_cut(message);
        }
    }

    /// Redacts a text whose end may be a cut.
    fn redact_cut(&self, text: &mut String) {
        let mut parts = [std::mem::take(text)];
        let mut covered = Covered::of(parts.iter().map(String::as_str));
        self.cover(&mut covered, &[0], true);
        covered.apply(&mut parts.iter_mut().collect::<Vec<_>>());
        let [redacted] = parts;
        *text = redacted;
    }

    /// Redacts the whole response text: a secret split across events, across reasoning and
    /// answer, or left cut at the end of either stream, is removed from each event, and the
    /// record's texts are rebuilt from the events (else redacted the same way on their own).
    fn redact_response(&self, execution: &mut Execution) {
        let r = &mut execution.record;
        let joined = |pick: fn(&StreamEvent) -> &str| -> String {
            execution.events.iter().map(pick).collect()
        };
        let events_hold_the_texts = joined(|e| e.answer.as_str()) == r.answer_text
            && joined(|e| e.reasoning.as_str()) == r.reasoning_text;
        let mut parts: Vec<&mut String> = Vec::new();
        for e in &mut execution.events {
            parts.push(&mut e.reasoning);
            parts.push(&mut e.answer);
        }
        let n = parts.len();
        let mut covered = Covered::of(parts.iter().map(|p| p.as_str()));
        let all: Vec<usize> = (0..n).collect();
        let reasoning: Vec<usize> = (0..n).step_by(2).collect();
        let answer: Vec<usize> = (1..n).step_by(2).collect();
        self.cover(&mut covered, &all, true);
        self.cover(&mut covered, &reasoning, true);
        self.cover(&mut covered, &answer, true);
        covered.apply(&mut parts);
        if events_hold_the_texts {
            // One marker for one secret, even when its pieces were in several events.
            let rebuilt = |pick: fn(&StreamEvent) -> &str| {
                let mut text: String = execution.events.iter().map(pick).collect();
                let twice = REDACTED.repeat(2);
                while text.contains(&twice) {
                    text = text.replace(&twice, REDACTED);
                }
                text
            };
            r.reasoning_text = rebuilt(|e| e.reasoning.as_str());
            r.answer_text = rebuilt(|e| e.answer.as_str());
        } else {
            self.redact_across(&mut [&mut r.reasoning_text, &mut r.answer_text]);
            self.redact_cut(&mut r.reasoning_text);
            self.redact_cut(&mut r.answer_text);
        }
    }
}

/// Which bytes of each of several texts belong to a secret.
struct Covered {
    texts: Vec<String>,
    marks: Vec<Vec<bool>>,
}

impl Covered {
    fn of<'a>(texts: impl Iterator<Item = &'a str>) -> Covered {
        let texts: Vec<String> = texts.map(str::to_string).collect();
        let marks = texts.iter().map(|t| vec![false; t.len()]).collect();
        Covered { texts, marks }
    }

    /// Replaces each run of marked bytes of each part by one `[redacted]`.
    fn apply(&self, parts: &mut [&mut String]) {
        for (part, marks) in parts.iter_mut().zip(&self.marks) {
            if marks.contains(&true) {
                **part = replace_covered(part, marks);
            }
        }
    }
}

/// Shortest piece of a secret's start removed where a text ends (it may have been cut there):
/// shorter ones would redact innocent text, and say nothing of the secret.
pub const MIN_CUT_PIECE: usize = 4;

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

    /// Every 8-character piece of the sentinel in `text`.
    fn pieces(text: &str) -> Vec<&'static str> {
        (0..=SENTINEL.len() - 8)
            .map(|i| &SENTINEL[i..i + 8])
            .filter(|p| text.contains(p))
            .collect()
    }

    #[test]
    fn a_text_cut_at_every_offset_keeps_no_eight_character_piece_of_a_key() {
        let r = Redactor::new(&Credentials::from_pairs([("K", SENTINEL)]));
        let body = format!("{{\"error\": \"key {SENTINEL} is invalid\"}}");
        for cut in 0..=body.len() {
            let out = r.snippet(&body[..cut]);
            assert_eq!(pieces(&out), Vec::<&str>::new(), "cut at {cut}: {out}");
        }
        // The snippet's own cut: the key across character ERROR_SNIPPET_CHARS at every offset.
        for pad in ERROR_SNIPPET_CHARS - SENTINEL.len()..=ERROR_SNIPPET_CHARS + 1 {
            let out = r.snippet(&format!("{}{SENTINEL}{}", "a".repeat(pad), "z".repeat(600)));
            assert_eq!(pieces(&out), Vec::<&str>::new(), "pad {pad}: {out}");
            assert!(out.ends_with('…'), "pad {pad}");
        }
        // Event labels are clipped: a clipped one ending in the key's start loses that start.
        let mut label = format!("x{}", &SENTINEL[..9]);
        r.redact_cut(&mut label);
        assert_eq!(label, "x[redacted]");
        let mut short = format!("x{}", &SENTINEL[..3]);
        r.redact_cut(&mut short);
        assert_eq!(short, "xsk-");
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
