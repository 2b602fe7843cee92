//! Incremental Server-Sent Events framing over raw network reads (METHODOLOGY §3).
//!
//! Hand-written rather than taken from `eventsource-stream`: that crate yields events without the
//! read that completed them and drops comment lines, and we need both (every event carries the
//! monotonic stamp of the read that completed it; keep-alive comments are recorded). Framing
//! works on bytes and decodes a line only once it is complete, so a UTF-8 character split between
//! reads is never broken. Line endings: CRLF, LF and a lone CR, also when a CRLF is itself split
//! between two reads. A line or an event past its limit (`request.limits`) is an error before
//! it is held, so a hostile upstream can never make the decoder grow without bound.

use openbench_common::limits::StreamLimits;
use openbench_common::record::ErrorType;
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

/// Why framing stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// A line that is not valid UTF-8.
    #[error("SSE line {line} is not valid UTF-8 ({len} bytes)")]
    InvalidUtf8 {
        /// 1-based line number in the stream.
        line: u64,
        /// Byte length of the offending line.
        len: usize,
    },
    /// A line longer than the line limit (what came before it is kept).
    #[error("SSE line {line} is longer than the {limit}-byte line limit")]
    LineTooLong {
        /// 1-based line number in the stream.
        line: u64,
        /// The limit, in bytes.
        limit: usize,
    },
    /// An event larger than the event limit (events before it are kept).
    #[error("SSE event ending at line {line} is larger than the {limit}-byte event limit")]
    EventTooLarge {
        /// 1-based number of the line that crossed the limit.
        line: u64,
        /// The limit, in bytes.
        limit: usize,
    },
}

impl SseError {
    /// The record's error type for this failure.
    pub fn error_type(&self) -> ErrorType {
        match self {
            SseError::InvalidUtf8 { .. } => ErrorType::InvalidSse,
            SseError::LineTooLong { .. } => ErrorType::LimitLineBytes,
            SseError::EventTooLarge { .. } => ErrorType::LimitEventBytes,
        }
    }
}

/// Incremental SSE decoder: feed it each network read with the read's stamp.
#[derive(Debug)]
pub struct SseDecoder {
    /// Bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// The previous byte fed was a CR: a LF right after it belongs to the same line ending.
    after_cr: bool,
    /// Lines completed so far (for error messages).
    lines: u64,
    /// The event being built.
    pending: Pending,
    /// Longest line held, in bytes.
    line_limit: usize,
    /// Largest event held, in bytes.
    event_limit: usize,
}

impl Default for SseDecoder {
    fn default() -> SseDecoder {
        SseDecoder::with_limits(&StreamLimits::default())
    }
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

    fn bytes(&self) -> usize {
        [&self.event, &self.data, &self.id]
            .into_iter()
            .flatten()
            .map(String::len)
            .sum()
    }
}

impl SseDecoder {
    /// A decoder at the start of a stream, with the default limits.
    pub fn new() -> SseDecoder {
        SseDecoder::default()
    }

    /// A decoder at the start of a stream that refuses lines and events past `limits`.
    pub fn with_limits(limits: &StreamLimits) -> SseDecoder {
        SseDecoder {
            line: Vec::new(),
            after_cr: false,
            lines: 0,
            pending: Pending::default(),
            line_limit: usize::try_from(limits.line_bytes).unwrap_or(usize::MAX),
            event_limit: usize::try_from(limits.event_bytes).unwrap_or(usize::MAX),
        }
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
            match memchr::memchr2(b'\n', b'\r', rest) {
                None => {
                    self.hold(rest)?;
                    break;
                }
                Some(i) => {
                    self.hold(&rest[..i])?;
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

    /// Appends bytes to the current line, unless that would pass the line limit.
    fn hold(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len().saturating_add(bytes.len()) > self.line_limit {
            self.line.clear();
            return Err(SseError::LineTooLong {
                line: self.lines + 1,
                limit: self.line_limit,
            });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// Ends the current line: frames it, then empties the line buffer, which keeps its
    /// capacity for the next line (one allocation per stream, not one per line).
    fn end_line(&mut self, at: Duration, out: &mut Vec<SseFrame>) -> Result<(), SseError> {
        self.lines += 1;
        let framed = self.frame_line(at, out);
        self.line.clear();
        framed
    }

    fn frame_line(&mut self, at: Duration, out: &mut Vec<SseFrame>) -> Result<(), SseError> {
        let mut line = std::str::from_utf8(&self.line).map_err(|_| SseError::InvalidUtf8 {
            line: self.lines,
            len: self.line.len(),
        })?;
        if self.lines == 1 {
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
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
            None => (line, ""),
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
        if self.pending.bytes() > self.event_limit {
            self.pending = Pending::default();
            return Err(SseError::EventTooLarge {
                line: self.lines,
                limit: self.event_limit,
            });
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
