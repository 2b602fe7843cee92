//! Joining each dialect's tool-call parts into whole calls, timing them and judging them
//! (docs/methodology.md §3b): the one fold every dialect's [`ToolPart`]s go through.

use crate::dialect::tools::ToolPart;
use openbench_common::tool::{ToolCall, ToolCallError};
use std::time::Duration;

/// The tool calls of one stream so far, in the order each began.
#[derive(Debug, Clone, Default)]
pub struct ToolCalls {
    calls: Vec<OpenCall>,
    /// The first event with tool-call text (a name or an arguments fragment).
    pub first: Option<Duration>,
    /// The last event with tool-call text.
    pub last: Option<Duration>,
}

#[derive(Debug, Clone)]
struct OpenCall {
    /// The dialect's index of the call.
    index: u64,
    call: ToolCall,
    closed: bool,
}

impl ToolCalls {
    /// Folds one event's parts, read at `at`. A part that only closes a call nobody opened (an
    /// Anthropic text block's `content_block_stop`) is ignored.
    pub fn push(&mut self, at: Duration, parts: Vec<ToolPart>) {
        for part in parts {
            if part.has_text() {
                self.first.get_or_insert(at);
                self.last = Some(at);
            }
            let position = self.calls.iter().position(|c| c.index == part.index);
            let open = match position {
                Some(i) => &mut self.calls[i],
                None if part.closes && !part.has_text() && part.id.is_none() => continue,
                None => {
                    self.calls.push(OpenCall {
                        index: part.index,
                        call: ToolCall::default(),
                        closed: false,
                    });
                    let last = self.calls.len() - 1;
                    &mut self.calls[last]
                }
            };
            if let Some(id) = part.id
                && open.call.id.is_empty()
            {
                open.call.id = id;
            }
            if let Some(name) = part.name
                && open.call.name.is_empty()
            {
                open.call.name = name;
            }
            open.call.arguments.push_str(&part.arguments);
            open.closed |= part.closes;
        }
    }

    /// A final finish reason other than `length` ends every open call (chat has no per-call
    /// end event: its calls end with the choice).
    pub fn finish(&mut self, reason: &str) {
        if reason != "length" {
            for call in &mut self.calls {
                call.closed = true;
            }
        }
    }

    /// Bytes of argument text held (counted against `limits.answer_bytes`).
    pub fn len(&self) -> usize {
        self.calls.iter().map(|c| c.call.arguments.len()).sum()
    }

    /// True when no call began.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The calls and, when any is broken, why: `truncated_tool_call` when the stream did not
    /// complete, stopped for length, or left a call open; else `malformed_tool_call` when a
    /// call's arguments are not one JSON value (empty arguments stand for `{}`, as Anthropic
    /// streams a call without input).
    pub fn judge(
        self,
        completed: bool,
        length_stop: bool,
    ) -> (Vec<ToolCall>, Option<ToolCallError>) {
        let truncated = !completed || length_stop || self.calls.iter().any(|c| !c.closed);
        let calls: Vec<ToolCall> = self.calls.into_iter().map(|c| c.call).collect();
        let error = if calls.is_empty() {
            None
        } else if truncated {
            Some(ToolCallError::TruncatedToolCall)
        } else if calls.iter().any(|c| !is_json(&c.arguments)) {
            Some(ToolCallError::MalformedToolCall)
        } else {
            None
        };
        (calls, error)
    }
}

/// True when `text` (empty taken as `{}`) is one JSON value.
fn is_json(text: &str) -> bool {
    text.trim().is_empty() || serde_json::from_str::<serde_json::Value>(text).is_ok()
}
