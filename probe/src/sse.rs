//! Incremental Server-Sent Events framing over raw network reads (METHODOLOGY §3).
//!
//! Hand-written rather than taken from `eventsource-stream`: that crate yields events without the
//! read that completed them and drops comment lines, and we need both (every event carries the
//! monotonic stamp of the read that completed it; keep-alive comments are recorded). Framing
//! works on bytes and decodes a line only once it is complete, so a UTF-8 character split between
//! reads is never broken. Line endings: CRLF, LF and a lone CR, also when a CRLF is itself split
//! between two reads.

use std::time::Duration;

/// One framed item: a comment line or a dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseFrame {
    /// A `:` line; `text` is what follows the colon (one leading space stripped).
    Comment {
        /// Comment text.
        text: String,
        /// Stamp of the read that completed the line.
        at: Duration,
    },
    /// An event dispatched by a blank line.
    Event(SseEvent),
}

/// A dispatched SSE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when present.
    pub event: Option<String>,
    /// Every `data:` line joined with `\n`.
    pub data: String,
    /// The `id:` field, when present.
    pub id: Option<String>,
    /// Stamp of the read that completed the event (its dispatching blank line).
    pub at: Duration,
}

/// A line that is not valid UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("SSE line {line} is not valid UTF-8 ({len} bytes)")]
pub struct SseError {
    /// 1-based line number in the stream.
    pub line: u64,
    /// Byte length of the offending line.
    pub len: usize,
}

/// Incremental SSE decoder: feed it each network read with the read's stamp.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// The previous byte fed was a CR: a LF right after it belongs to the same line ending.
    after_cr: bool,
    /// Lines completed so far (for error messages).
    lines: u64,
    /// The event being built.
    pending: Pending,
}

#[derive(Debug, Default)]
struct Pending {
    event: Option<String>,
    data: Option<String>,
    id: Option<String>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.event.is_none() && self.data.is_none()
    }
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> SseDecoder {
        SseDecoder::default()
    }

    /// Frames one read. Complete items are appended to `out`, each stamped `at`; an incomplete
    /// line or event waits for the next read. Stops at the first invalid line.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        at: Duration,
        out: &mut Vec<SseFrame>,
    ) -> Result<(), SseError> {
        let mut rest = bytes;
        while let Some(&first) = rest.first() {
            if self.after_cr {
                self.after_cr = false;
                if first == b'\n' {
                    // The LF of a CRLF whose CR ended the previous line (maybe in another read).
                    rest = &rest[1..];
                    continue;
                }
            }
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.line.extend_from_slice(rest);
                    break;
                }
                Some(i) => {
                    self.line.extend_from_slice(&rest[..i]);
                    self.after_cr = rest[i] == b'\r';
                    rest = &rest[i + 1..];
                    self.end_line(at, out)?;
                }
            }
        }
        Ok(())
    }

    /// True when bytes of an unterminated line or an undispatched event are held.
    pub fn has_partial(&self) -> bool {
        !self.line.is_empty() || !self.pending.is_empty()
    }

    /// At end of stream: dispatches an event whose lines were complete but whose blank line never
    /// came (a lenient reading; a final unterminated line is discarded, as the SSE standard does).
    pub fn finish(&mut self, at: Duration) -> Option<SseEvent> {
        self.line.clear();
        let pending = std::mem::take(&mut self.pending);
        if pending.is_empty() {
            None
        } else {
            Some(SseEvent {
                event: pending.event,
                data: pending.data.unwrap_or_default(),
                id: pending.id,
                at,
            })
        }
    }

    fn end_line(&mut self, at: Duration, out: &mut Vec<SseFrame>) -> Result<(), SseError> {
        self.lines += 1;
        let raw = std::mem::take(&mut self.line);
        let mut line = String::from_utf8(raw).map_err(|e| SseError {
            line: self.lines,
            len: e.as_bytes().len(),
        })?;
        if self.lines == 1 && line.starts_with('\u{feff}') {
            line.drain(..'\u{feff}'.len_utf8());
        }
        if line.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            if !pending.is_empty() {
                out.push(SseFrame::Event(SseEvent {
                    event: pending.event,
                    data: pending.data.unwrap_or_default(),
                    id: pending.id,
                    at,
                }));
            }
            return Ok(());
        }
        let (field, value) = match line.find(':') {
            Some(0) => {
                let text = strip_one_space(&line[1..]).to_string();
                out.push(SseFrame::Comment { text, at });
                return Ok(());
            }
            Some(i) => (&line[..i], strip_one_space(&line[i + 1..])),
            None => (line.as_str(), ""),
        };
        match field {
            "data" => match self.pending.data.as_mut() {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.pending.data = Some(value.to_string()),
            },
            "event" => self.pending.event = Some(value.to_string()),
            "id" => self.pending.id = Some(value.to_string()),
            // `retry` and unknown fields are ignored, as the standard says.
            _ => {}
        }
        Ok(())
    }
}

fn strip_one_space(value: &str) -> &str {
    value.strip_prefix(' ').unwrap_or(value)
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
