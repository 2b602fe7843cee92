//! Redaction: no piece of a credential leaves the probe in any string. One redactor per
//! provider, applied to every upstream-derived string before the execution is recorded, sent
//! over gRPC or traced.
//!
//! The rule (docs/faults.md "Secrets"): no [`PIECE_CHARS`]-character piece of a secret, and no
//! reversed, hexadecimal or base64 form of one ([`crate::redact_forms`]), in any field. The
//! pieces are built once per secret into one Aho-Corasick automaton, so a text is scanned once
//! whatever the number of pieces. Whitespace is skipped while matching (a key broken by spaces or
//! newlines is still found) and texts that follow one another — the events of a stream, reasoning
//! and answer, the answer and the error that ended it — are also matched as one text, so a piece
//! split across them is found; each text's share of a match becomes `[redacted]`.

use crate::classify::ERROR_SNIPPET_CHARS;
use crate::credentials::Credentials;
pub use crate::redact_forms::PIECE_CHARS;
use aho_corasick::AhoCorasick;
use openbench_common::record::{Execution, StreamEvent};

/// The replacement text: short and fixed, whatever it replaces.
pub const REDACTED: &str = "[redacted]";

/// The secret matcher could not be built (only for absurdly long secrets).
#[derive(Debug, thiserror::Error)]
#[error("cannot build the matcher of the credentials' pieces: {0}")]
pub struct RedactorError(#[from] aho_corasick::BuildError);

/// Replaces every forbidden piece of the known secrets in strings.
#[derive(Clone, Default)]
pub struct Redactor {
    /// All forbidden pieces of all secrets; `None` without secrets.
    pieces: Option<AhoCorasick>,
    /// The secrets whole: for the fields the spec and plan fill (provider, lane, ids), where a
    /// 6-character piece would more likely be a name than an echo.
    whole: Option<AhoCorasick>,
    /// Bytes of the longest piece: how much text before an error may hold part of one.
    longest: usize,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.pieces.as_ref().map_or(0, AhoCorasick::patterns_len);
        write!(f, "Redactor({count} pieces)")
    }
}

impl Redactor {
    /// A redactor for every value held by `credentials`.
    pub fn new(credentials: &Credentials) -> Result<Redactor, RedactorError> {
        let mut pieces: Vec<String> = credentials
            .secret_values()
            .flat_map(crate::redact_forms::forbidden_pieces)
            .collect();
        pieces.sort();
        pieces.dedup();
        if pieces.is_empty() {
            return Ok(Redactor::default());
        }
        let longest = pieces.iter().map(String::len).max().unwrap_or(0);
        let whole: Vec<&str> = credentials
            .secret_values()
            .filter(|v| !v.is_empty())
            .collect();
        Ok(Redactor {
            pieces: Some(AhoCorasick::new(&pieces)?),
            whole: Some(AhoCorasick::new(whole)?),
            longest,
        })
    }

    /// `text` with every forbidden piece replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        self.redact_in_place(&mut out);
        out
    }

    /// Replaces forbidden pieces inside `text`.
    pub fn redact_in_place(&self, text: &mut String) {
        let found = self.matches(text);
        if found.is_empty() {
            return;
        }
        let mut marks = vec![false; text.len()];
        for (start, end) in found {
            marks[start..end].fill(true);
        }
        *text = replace_covered(text, &marks);
    }

    /// Replaces whole secrets inside `text` (a field we fill, not the upstream).
    fn redact_whole_in_place(&self, text: &mut String) {
        if let Some(whole) = &self.whole
            && whole.is_match(text.as_str())
        {
            *text = whole.replace_all(text, &vec![REDACTED; whole.patterns_len()]);
        }
    }

    /// Redacts pieces that may be split across `parts` (consecutive pieces of one text): the
    /// matches are found in the concatenation and each part's share of a match becomes
    /// `[redacted]`, so no fragment of a piece stays in any part.
    pub fn redact_across(&self, parts: &mut [&mut String]) {
        let mut covered = Covered::of(parts.iter().map(|p| p.as_str()));
        self.cover(&mut covered, &(0..parts.len()).collect::<Vec<_>>());
        covered.apply(parts);
    }

    /// Marks, in the concatenation of the parts at `order`, every forbidden piece.
    fn cover(&self, covered: &mut Covered, order: &[usize]) {
        let joined: String = order.iter().map(|&i| covered.texts[i].as_str()).collect();
        let found = self.matches(&joined);
        if found.is_empty() {
            return;
        }
        let mut marks = vec![false; joined.len()];
        for (start, end) in found {
            marks[start..end].fill(true);
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

    /// The byte ranges of `text` that hold a forbidden piece, whitespace inside the piece
    /// skipped (the range then spans it). Overlapping matches are all reported.
    fn matches(&self, text: &str) -> Vec<(usize, usize)> {
        let Some(pieces) = &self.pieces else {
            return Vec::new();
        };
        if !text.contains(char::is_whitespace) {
            return pieces
                .find_overlapping_iter(text)
                .map(|m| (m.start(), m.end()))
                .collect();
        }
        // The text without whitespace, and where each of its bytes was in `text`.
        let mut squeezed = Vec::with_capacity(text.len());
        let mut origin = Vec::with_capacity(text.len());
        for (at, c) in text.char_indices() {
            if !c.is_whitespace() {
                let end = at + c.len_utf8();
                squeezed.extend_from_slice(&text.as_bytes()[at..end]);
                origin.extend(at..end);
            }
        }
        pieces
            .find_overlapping_iter(&squeezed)
            .map(|m| (origin[m.start()], origin[m.end() - 1] + 1))
            .collect()
    }

    /// `text` redacted, then cut to [`ERROR_SNIPPET_CHARS`] characters (marked `…`). `before`
    /// is the response text that preceded it (a piece may start there): only `text` is
    /// returned.
    pub fn snippet_after(&self, before: &str, text: &str) -> String {
        let text = text.trim();
        let mut parts = [before.to_string(), text.to_string()];
        let mut covered = Covered::of(parts.iter().map(String::as_str));
        self.cover(&mut covered, &[0, 1]);
        self.cover(&mut covered, &[1]);
        {
            let [first, second] = &mut parts;
            covered.apply(&mut [first, second]);
        }
        let [_, text] = parts;
        // A cut leaves no piece: the text holds none, and a cut marker is no piece.
        match text.char_indices().nth(ERROR_SNIPPET_CHARS) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text,
        }
    }

    /// [`Redactor::snippet_after`] with nothing before.
    pub fn snippet(&self, text: &str) -> String {
        self.snippet_after("", text)
    }

    /// The end of the response text of `events`, reasoning before answer within each, holding
    /// at least the longest piece's length in non-whitespace bytes (or all of it): what may
    /// hold the start of a piece that continues in what follows.
    pub fn response_tail(&self, events: &[StreamEvent]) -> String {
        let mut pieces = Vec::new();
        let mut held = 0;
        for e in events.iter().rev() {
            if held >= self.longest {
                break;
            }
            for text in [&e.answer, &e.reasoning] {
                held += text.bytes().filter(|b| !b.is_ascii_whitespace()).count();
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

    /// Redacts every string of an execution before it leaves the executor: the upstream's (the
    /// headers kept, the model and finish reasons, the error message, server timings, the
    /// response texts, over their concatenations too) of every forbidden piece; the identity
    /// fields the spec and plan fill, of whole secrets.
    pub fn redact_execution(&self, execution: &mut Execution) {
        if self.pieces.is_none() {
            return;
        }
        let r = &mut execution.record;
        // Filled from the spec and the plan: whole secrets only.
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
            self.redact_whole_in_place(s);
        }
        for s in [&mut r.probe_id, &mut r.scheduled_at, &mut r.offered_tool]
            .into_iter()
            .flatten()
        {
            self.redact_whole_in_place(s);
        }
        // From the upstream: every forbidden piece.
        for s in [
            &mut r.response_model,
            &mut r.provider_request_id,
            &mut r.finish_reason,
            &mut r.error_message,
        ]
        .into_iter()
        .flatten()
        {
            self.redact_in_place(s);
        }
        for call in &mut r.tool_calls {
            for s in [&mut call.id, &mut call.name, &mut call.arguments] {
                self.redact_in_place(s);
            }
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
            self.redact_whole_in_place(&mut e.request_id);
            for s in [&mut e.event, &mut e.finish_reason].into_iter().flatten() {
                self.redact_in_place(s);
            }
        }
    }

    /// Redacts the whole response text, matched in arrival order and as the whole reasoning
    /// followed by the whole answer: a piece split across events or across reasoning and
    /// answer is removed from each event, and the record's texts are rebuilt from the events
    /// (else redacted the same way on their own).
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
        // The whole reasoning, then the whole answer: each stream on its own, and what a reader
        // of the two texts side by side sees.
        let streams: Vec<usize> = (0..n).step_by(2).chain((1..n).step_by(2)).collect();
        self.cover(&mut covered, &all);
        self.cover(&mut covered, &streams);
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
            self.redact_in_place(&mut r.reasoning_text);
            self.redact_in_place(&mut r.answer_text);
        }
    }
}

/// Which bytes of each of several texts belong to a forbidden piece.
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
#[path = "redact_tests.rs"]
mod tests;
