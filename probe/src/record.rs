//! From what a timed request saw to its terminal record: the stream state the read loop fills,
//! the way the request ended, and the derived metrics (METHODOLOGY §3–§4).
//!
//! Token counting happens here, after the stream has ended, never inside the read loop.

use crate::classify::Chunk;
use crate::dialect::tools::ToolPart;
use openbench_common::limits::EVENT_LABEL_CHARS;
use openbench_common::record::{
    Classification, ErrorType, Execution, Outcome, StreamEvent, TerminalRecord, Usage,
};
use openbench_common::tokenizer::count_tokens;
use std::time::Duration;

/// Milliseconds (fractional, nanosecond resolution) of a clock offset.
pub fn ms(offset: Duration) -> f64 {
    offset.as_nanos() as f64 / 1e6
}

pub use openbench_common::record::tokens_per_second;

/// The finer error type of a non-2xx status.
pub fn status_error_type(status: u16) -> ErrorType {
    match status {
        429 => ErrorType::Http429,
        400..=499 => ErrorType::OtherHttp4xx,
        500..=599 => ErrorType::Http5xx,
        _ => ErrorType::OtherHttpStatus,
    }
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// 2xx, stream consumed to `[DONE]` or a final `finish_reason`.
    Completed,
    /// 2xx, a final `finish_reason` arrived, then the connection failed: completed, flagged.
    CompletedAbruptly {
        /// What failed after the finish.
        message: String,
    },
    /// A non-2xx status (`message` holds a redacted-later snippet of the body).
    Http {
        /// Status code.
        status: u16,
        /// `HTTP <status>: <body snippet>`.
        message: String,
    },
    /// The absolute deadline passed.
    Timeout {
        /// What was still awaited.
        message: String,
    },
    /// Connect, transport, invalid SSE or a truncated stream; or a stream limit passed (a
    /// `limit_*` error type), whose outcome is `stream_limit_exceeded`.
    Transport {
        /// The finer type.
        error_type: ErrorType,
        /// What happened.
        message: String,
    },
    /// The provider reported an error inside a 2xx stream.
    Stream {
        /// The provider's error text.
        message: String,
        /// The class a dialect's typed error names (Anthropic `overloaded_error`: `http_5xx`,
        /// as its HTTP 529 would be); `None` is `stream_error`.
        error_type: Option<ErrorType>,
    },
}

impl Ending {
    /// The outcome, error type and message of this ending.
    pub fn parts(&self) -> (Outcome, Option<ErrorType>, Option<String>) {
        match self {
            Ending::Completed => (Outcome::Completed, None, None),
            Ending::CompletedAbruptly { message } => {
                (Outcome::Completed, None, Some(message.clone()))
            }
            Ending::Http { status, message } => (
                Outcome::HttpError,
                Some(status_error_type(*status)),
                Some(message.clone()),
            ),
            Ending::Timeout { message } => (
                Outcome::Timeout,
                Some(ErrorType::Timeout),
                Some(message.clone()),
            ),
            Ending::Transport {
                error_type,
                message,
            } => (
                if error_type.is_stream_limit() {
                    Outcome::StreamLimitExceeded
                } else {
                    Outcome::TransportError
                },
                Some(*error_type),
                Some(message.clone()),
            ),
            Ending::Stream {
                message,
                error_type,
            } => (
                Outcome::StreamError,
                Some(error_type.unwrap_or(ErrorType::StreamError)),
                Some(message.clone()),
            ),
        }
    }
}

/// Everything the read loop saw in a stream, in arrival order.
#[derive(Debug, Clone, Default)]
pub struct StreamState {
    /// Every event, comments included.
    pub events: Vec<StreamEvent>,
    answer: String,
    reasoning: String,
    reasoning_before_answer: String,
    ttfo: Option<Duration>,
    ttfa: Option<Duration>,
    last_answer: Option<Duration>,
    /// Last non-null `finish_reason`.
    pub finish_reason: Option<String>,
    model: Option<String>,
    usage: Option<Usage>,
    timings: Option<serde_json::Value>,
    /// `[DONE]` arrived.
    pub saw_done: bool,
    /// The tool calls so far.
    tools: crate::tool_fold::ToolCalls,
    /// The last event with output text carried tool-call text (no answer came after it).
    ended_in_tool_call: bool,
}

impl StreamState {
    /// Records a comment line (never output; never extends anything).
    pub fn push_comment(&mut self, at: Duration) {
        self.push_event(
            at,
            Classification::Comment,
            None,
            String::new(),
            String::new(),
            None,
        );
    }

    /// Records a classified event and folds it into the texts and timings.
    pub fn push_chunk(&mut self, at: Duration, event: Option<String>, chunk: Chunk) {
        let Chunk {
            classification,
            reasoning,
            answer,
            finish_reason,
            model,
            usage,
            timings,
            error: _,
            error_type: _,
            tool_call: _,
            tool_parts,
        } = chunk;
        let tool_text = tool_parts.iter().any(ToolPart::has_text);
        self.tools.push(at, tool_parts);
        if classification.has_output() && self.ttfo.is_none() {
            self.ttfo = Some(at);
        }
        if !reasoning.is_empty() {
            self.reasoning.push_str(&reasoning);
            if self.ttfa.is_none() {
                self.reasoning_before_answer.push_str(&reasoning);
            }
        }
        if !answer.is_empty() {
            self.answer.push_str(&answer);
            self.ttfa.get_or_insert(at);
            self.last_answer = Some(at);
            self.ended_in_tool_call = false;
        }
        if tool_text {
            self.ended_in_tool_call = true;
        }
        if self.model.is_none() {
            self.model = model;
        }
        if let Some(usage) = usage {
            // A dialect may report usage in parts (Anthropic: input at `message_start`, output
            // at `message_delta`): a later count replaces only the fields it carries.
            self.usage = Some(match self.usage.take() {
                Some(held) => merge_usage(held, usage),
                None => usage,
            });
        }
        if timings.is_some() {
            self.timings = timings;
        }
        if let Some(reason) = &finish_reason {
            self.tools.finish(reason);
            self.finish_reason = Some(clip_label(reason.clone()));
        }
        if classification == Classification::Done {
            self.saw_done = true;
        }
        self.push_event(at, classification, event, reasoning, answer, finish_reason);
    }

    fn push_event(
        &mut self,
        at: Duration,
        classification: Classification,
        event: Option<String>,
        reasoning: String,
        answer: String,
        finish_reason: Option<String>,
    ) {
        self.events.push(StreamEvent {
            // The record names the request once; the run writer puts its id on every line.
            request_id: String::new(),
            index: u32::try_from(self.events.len()).unwrap_or(u32::MAX),
            offset_ms: ms(at),
            classification,
            event: event.map(clip_label),
            reasoning,
            answer,
            finish_reason: finish_reason.map(clip_label),
        });
    }

    /// Bytes of answer text held.
    pub fn answer_len(&self) -> usize {
        self.answer.len()
    }

    /// Bytes of tool-call argument text held.
    pub fn tool_len(&self) -> usize {
        self.tools.len()
    }

    /// Bytes of reasoning text held.
    pub fn reasoning_len(&self) -> usize {
        self.reasoning.len()
    }

    /// True when the last event with output carried a tool call, not answer text.
    pub fn ended_in_tool_call(&self) -> bool {
        self.ended_in_tool_call
    }

    /// The output (completion) token count the provider's usage reports, when it does.
    pub fn output_tokens(&self) -> Option<u64> {
        self.usage.as_ref()?.completion_tokens
    }

    /// True when the stream reached `[DONE]` or a `finish_reason`.
    pub fn finished(&self) -> bool {
        self.saw_done || self.finish_reason.is_some()
    }
}

/// `held` with every count `later` carries put over it.
fn merge_usage(held: Usage, later: Usage) -> Usage {
    Usage {
        prompt_tokens: later.prompt_tokens.or(held.prompt_tokens),
        completion_tokens: later.completion_tokens.or(held.completion_tokens),
        total_tokens: later.total_tokens.or(held.total_tokens),
        cached_tokens: later.cached_tokens.or(held.cached_tokens),
        cache_write_tokens: later.cache_write_tokens.or(held.cache_write_tokens),
        reasoning_tokens: later.reasoning_tokens.or(held.reasoning_tokens),
    }
}

/// An `event:` name or `finish_reason` cut to [`EVENT_LABEL_CHARS`] characters (real ones are a
/// word), so every event's share of a record stays bounded.
fn clip_label(label: String) -> String {
    match label.char_indices().nth(EVENT_LABEL_CHARS) {
        Some((cut, _)) => label[..cut].to_string(),
        None => label,
    }
}

/// What the executor knows besides the stream.
#[derive(Debug, Clone, Default)]
pub struct Exchange {
    /// HTTP status, when headers arrived.
    pub status: Option<u16>,
    /// Offset of the response headers.
    pub headers_at: Option<Duration>,
    /// Offset of the end of the stream (or of the failure).
    pub end_at: Option<Duration>,
    /// Provider's request id header.
    pub provider_request_id: Option<String>,
    /// Rate-limit and retry headers.
    pub rate_limit_headers: std::collections::BTreeMap<String, String>,
    /// The request went out again on a fresh connection after its pooled one was found closed.
    pub resent_on_fresh_connection: bool,
}

/// Builds the terminal record: outcome, timings, texts, token counts and metrics. `base` carries
/// the identity fields.
pub fn finalize(
    mut record: TerminalRecord,
    state: StreamState,
    exchange: Exchange,
    ending: &Ending,
) -> Execution {
    let (outcome, error_type, error_message) = ending.parts();
    record.outcome = outcome;
    record.error_type = error_type;
    record.error_message = error_message;
    record.http_status = exchange.status;
    record.headers_ms = exchange.headers_at.map(ms);
    record.stream_end_ms = exchange.end_at.map(ms);
    record.provider_request_id = exchange.provider_request_id;
    record.resent_on_fresh_connection = exchange.resent_on_fresh_connection;
    record.rate_limit_headers = exchange.rate_limit_headers;
    record.ttfo_ms = state.ttfo.map(ms);
    record.ttfa_ms = state.ttfa.map(ms);
    let success = exchange.status.is_some_and(|s| (200..300).contains(&s));
    if success {
        let n = count_tokens(&state.answer);
        record.answer_tokens = Some(n);
        record.reasoning_tokens_before_answer = Some(count_tokens(&state.reasoning_before_answer));
        if outcome == Outcome::Completed && !state.answer.is_empty() {
            record.e2e_ms = state.last_answer.map(ms);
            if let (Some(ttfa), Some(e2e)) = (record.ttfa_ms, record.e2e_ms) {
                record.output_tokens_per_second = tokens_per_second(n, ttfa, e2e);
            }
        }
    }
    record.truncated_by_length = state.finish_reason.as_deref() == Some("length");
    record.ttf_tool_call_ms = state.tools.first.map(ms);
    if success && outcome == Outcome::Completed && !state.tools.is_empty() {
        record.tool_call_e2e_ms = state.tools.last.map(ms);
    }
    let (calls, tool_error) = state
        .tools
        .judge(outcome == Outcome::Completed, record.truncated_by_length);
    record.tool_calls = calls;
    record.tool_call_error = tool_error;
    record.abrupt_end = matches!(ending, Ending::CompletedAbruptly { .. });
    record.finish_reason = state.finish_reason;
    record.answer_text = state.answer;
    record.reasoning_text = state.reasoning;
    record.response_model = state.model;
    record.usage = state.usage;
    record.server_timings = state.timings;
    record.event_count = state.events.len() as u64;
    Execution {
        record,
        events: state.events,
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
