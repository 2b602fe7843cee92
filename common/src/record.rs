//! Terminal records and parsed stream events: what one timed request leaves behind.
//!
//! A terminal record is written exactly once per executed request (`raw/results.jsonl`); its
//! parsed events go to `raw/stream-events.jsonl`. Both are plain serde types so the probe, the
//! coordinator and the report read the same bytes the same way.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the record layout, bumped on any incompatible change.
pub const RECORD_SCHEMA_VERSION: u32 = 1;

/// Visible-answer tokens/s = (N − 1) / ((E2E − TTFA) in s); `None` unless N ≥ 2 and E2E > TTFA
/// (METHODOLOGY §3; the tool-call variant's report applies it to the call, docs/methodology.md
/// §5).
pub fn tokens_per_second(answer_tokens: u64, ttfa_ms: f64, e2e_ms: f64) -> Option<f64> {
    if answer_tokens >= 2 && e2e_ms > ttfa_ms {
        Some((answer_tokens - 1) as f64 / ((e2e_ms - ttfa_ms) / 1000.0))
    } else {
        None
    }
}

/// How a request ended (METHODOLOGY §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// 2xx and the stream reached `[DONE]` or a final `finish_reason`.
    Completed,
    /// A non-2xx HTTP status.
    HttpError,
    /// The absolute client deadline passed first.
    Timeout,
    /// Connect, TLS, reset, invalid SSE or a truncated stream.
    TransportError,
    /// The provider reported an error inside a 2xx stream.
    StreamError,
    /// Our own machinery failed (probe died, coordinator lost it): never the provider's fault.
    HarnessError,
    /// A 2xx stream that passed one of `request.limits` (its error type names which): ended
    /// at once, keeping what was read. Records written before this outcome existed say
    /// `transport_error` for the same ending. Last, so the order of the older outcomes (`Ord`) is unchanged.
    StreamLimitExceeded,
}

impl Outcome {
    /// True when the outcome is the provider's answer (anything but `harness_error`): the record
    /// commits its request, and a resume never re-executes it.
    pub fn is_committed(self) -> bool {
        self != Outcome::HarnessError
    }

    /// True for the outcomes that count as the provider's operational failure.
    pub fn is_operational_failure(self) -> bool {
        matches!(
            self,
            Outcome::HttpError
                | Outcome::Timeout
                | Outcome::TransportError
                | Outcome::StreamLimitExceeded
                | Outcome::StreamError
        )
    }
}

/// The finer reason behind a non-completed outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorType {
    /// HTTP 429.
    #[serde(rename = "http_429")]
    Http429,
    /// Any other 4xx.
    #[serde(rename = "other_http_4xx")]
    OtherHttp4xx,
    /// Any 5xx.
    #[serde(rename = "http_5xx")]
    Http5xx,
    /// A 1xx/3xx that we refuse to follow (no redirects).
    OtherHttpStatus,
    /// The absolute deadline passed.
    Timeout,
    /// The TCP/TLS connection could not be made.
    Connect,
    /// The connection failed after it was made (reset, body read error).
    Transport,
    /// A data payload that is not JSON, or an undecodable stream.
    InvalidSse,
    /// The stream ended with neither `[DONE]` nor a `finish_reason`.
    TruncatedStream,
    /// An SSE line longer than `request.limits.line_bytes`.
    LimitLineBytes,
    /// An SSE event larger than `request.limits.event_bytes`.
    LimitEventBytes,
    /// More events (comments included) than `request.limits.events`.
    LimitEvents,
    /// More answer (or reasoning) text than `request.limits.answer_bytes`.
    LimitAnswerBytes,
    /// An `error` object, an `"object":"error"` chunk or an `event: error`.
    StreamError,
    /// Our own machinery failed.
    Harness,
    /// The request's region could not be reached: its probe stopped answering the coordinator's
    /// health pings, or the link to it failed (connection refused or reset). A harness failure,
    /// re-run when the region is back (docs/faults.md).
    RegionUnreachable,
}

impl ErrorType {
    /// True for the error types of `request.limits` (`limit_*`): the stream passed a limit.
    pub fn is_stream_limit(self) -> bool {
        matches!(
            self,
            ErrorType::LimitLineBytes
                | ErrorType::LimitEventBytes
                | ErrorType::LimitEvents
                | ErrorType::LimitAnswerBytes
        )
    }
}

/// What a parsed SSE event carried (METHODOLOGY §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Classification {
    /// Non-empty reasoning text only.
    Reasoning,
    /// Non-empty answer text only.
    Answer,
    /// Both in one chunk.
    ReasoningAndAnswer,
    /// A role-only delta.
    Role,
    /// A delta with nothing in it.
    EmptyDelta,
    /// A usage-only chunk.
    Usage,
    /// A chunk that only carries `finish_reason`.
    Finish,
    /// An SSE comment line (`: keep-alive`).
    Comment,
    /// `data: [DONE]`.
    Done,
    /// Any other well-formed chunk (no choices, unknown fields).
    Metadata,
    /// A provider error inside the stream.
    Error,
    /// Tool-call argument text (Anthropic `input_json_delta`, Responses
    /// `response.function_call_arguments.delta`): output, so it counts for TTFO, never answer.
    /// Last, so the order of the older classifications is unchanged.
    ToolCall,
}

impl Classification {
    /// True when the event carries visible answer text.
    pub fn has_answer(self) -> bool {
        matches!(
            self,
            Classification::Answer | Classification::ReasoningAndAnswer
        )
    }

    /// True when the event carries reasoning, answer or tool-call text (the TTFO event).
    pub fn has_output(self) -> bool {
        matches!(
            self,
            Classification::Reasoning
                | Classification::Answer
                | Classification::ReasoningAndAnswer
                | Classification::ToolCall
        )
    }
}

/// One parsed SSE event with the time its last byte was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamEvent {
    /// The request this event belongs to, as read from the events file, where the run writer
    /// puts its record's id first on each line. Never serialised with the event itself: an
    /// [`Execution`]'s record names its request once, so the events crossing the gRPC hop (up
    /// to `limits.events` of them) carry no copy each.
    #[serde(default, skip_serializing)]
    pub request_id: String,
    /// 0-based position in the stream.
    pub index: u32,
    /// Milliseconds from clock zero to the read that completed this event.
    pub offset_ms: f64,
    /// What the event carried.
    pub classification: Classification,
    /// The SSE `event:` field, when the server sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Reasoning text in this event.
    #[serde(default)]
    pub reasoning: String,
    /// Visible answer text in this event.
    #[serde(default)]
    pub answer: String,
    /// `finish_reason` carried by this event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

/// Token usage as reported by the provider.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens (reasoning included, as providers count them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Total tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Cached prompt tokens (`prompt_tokens_details.cached_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Prompt tokens written to the provider's cache, billed at a surcharge (Anthropic's
    /// `cache_creation_input_tokens`; part of `prompt_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Reasoning tokens (`completion_tokens_details.reasoning_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

/// The one record a request leaves: identity, outcome, timings, text and provider metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TerminalRecord {
    /// Layout version ([`RECORD_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Run this request belongs to (empty for `probe once`).
    #[serde(default)]
    pub run_id: String,
    /// `round-…` id of a paired round (METHODOLOGY §7). Empty, and left out of the JSON, for a
    /// load request, which is named by its `phase` (records written before this carried the
    /// phase's `phase-…` id here; they still read, and nothing reads it back).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub round_id: String,
    /// `req-…` id (METHODOLOGY §7).
    #[serde(default)]
    pub request_id: String,
    /// 0-based round index in the plan.
    #[serde(default)]
    pub round_index: u64,
    /// Attempt number (0 in a full run, 1 or 2 in a smoke).
    #[serde(default)]
    pub attempt: u32,
    /// Task family of the item.
    #[serde(default)]
    pub task_family: String,
    /// Dataset item id.
    #[serde(default)]
    pub item_id: String,
    /// Provider key from the spec.
    #[serde(default)]
    pub provider: String,
    /// Region the probe ran in.
    #[serde(default)]
    pub region: String,
    /// Lane label (`provider` with one region, `provider@region` with several).
    #[serde(default)]
    pub lane: String,
    /// Model id we asked for.
    #[serde(default)]
    pub requested_model: String,
    /// Model id the response echoed (first chunk that carried one).
    pub response_model: Option<String>,
    /// Wall-clock time of clock zero, RFC 3339 UTC.
    pub started_at: String,
    /// How the request ended.
    pub outcome: Outcome,
    /// The finer reason of a failure.
    pub error_type: Option<ErrorType>,
    /// A redacted, human-readable failure message.
    pub error_message: Option<String>,
    /// HTTP status, when headers arrived.
    pub http_status: Option<u16>,
    /// Milliseconds to response headers.
    pub headers_ms: Option<f64>,
    /// Time to first output (reasoning or answer), ms.
    pub ttfo_ms: Option<f64>,
    /// Time to first visible answer text, ms.
    pub ttfa_ms: Option<f64>,
    /// Time to the last non-empty answer text, ms (2xx with a non-empty answer only).
    pub e2e_ms: Option<f64>,
    /// Time the stream ended (`[DONE]`, close or failure), ms.
    pub stream_end_ms: Option<f64>,
    /// The reconstructed visible answer.
    pub answer_text: String,
    /// The reconstructed reasoning text.
    pub reasoning_text: String,
    /// o200k_base tokens in the answer.
    pub answer_tokens: Option<u64>,
    /// o200k_base tokens of reasoning emitted before the first answer text.
    pub reasoning_tokens_before_answer: Option<u64>,
    /// Visible-answer tokens/s: (N − 1) / (E2E − TTFA), when N ≥ 2 and E2E > TTFA.
    pub output_tokens_per_second: Option<f64>,
    /// Final `finish_reason`.
    pub finish_reason: Option<String>,
    /// True when `finish_reason` was `length`: completed, but the answer was cut off.
    #[serde(default)]
    pub truncated_by_length: bool,
    /// True when the stream had already sent its final `finish_reason` and then the connection
    /// failed: completed (METHODOLOGY §4), but flagged; `error_message` says what failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abrupt_end: bool,
    /// Provider-reported usage.
    pub usage: Option<Usage>,
    /// Provider's request id header (`x-request-id` and kin).
    pub provider_request_id: Option<String>,
    /// Rate-limit and retry headers, lower-case names.
    #[serde(default)]
    pub rate_limit_headers: BTreeMap<String, String>,
    /// Number of parsed events (their details live in the events file).
    #[serde(default)]
    pub event_count: u64,
    /// Server-reported generation figures (llama.cpp `timings`), kept for cross-checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timings: Option<serde_json::Value>,
    /// The probe that produced the record (`<region>@<host fingerprint prefix>`; for a harness
    /// record, the probe the coordinator was calling). Absent in records written before probes
    /// were named, and for `probe once`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_id: Option<String>,
    /// True when this request was not executed together with the other lanes of its round: a
    /// re-run of a harness-failed lane-round (at the end of a session or on resume), launched
    /// after its round's other lanes had been measured. It counts in its lane's metrics but is
    /// never paired with that round's other lanes (docs/faults.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub out_of_round: bool,
    /// True when the request was sent a second time, on a fresh connection, because the pooled
    /// connection it first went out on was closed by the server before any response byte (the
    /// server had ended it, unread; METHODOLOGY §1, docs/methodology.md). The clock kept running
    /// from the first send: the lost try and the new connect are in TTFO.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resent_on_fresh_connection: bool,
    /// Load phases only: the phase, slot and sequence of the request
    /// ([`crate::request::RequestIdentity`]); absent for paired rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<u32>,
    /// Closed-loop slot (0 in an open loop); absent for paired rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
    /// Sequence number within the slot; absent for paired rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u64>,
    /// Open loop only: when the request was scheduled to be sent (the phase's start plus its
    /// planned offset), RFC 3339 UTC on the coordinator's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_at: Option<String>,
    /// Open loop only: actual send (the coordinator's dispatch) − scheduled send, ms
    /// (METHODOLOGY §9); latencies from the scheduled send add it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lag_ms: Option<f64>,
    /// Open loop only: the planned send offset from the phase's start, ms (what `scheduled_at`
    /// says, as an offset, so reports need no clock arithmetic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_offset_ms: Option<f64>,
    /// Load phases only: the actual send (the dispatch) as an offset from the phase's start, ms;
    /// a closed loop's measured window is judged on it (METHODOLOGY §9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_offset_ms: Option<f64>,
    /// Load phases only: the think time its source planned before it, ms, waited after the
    /// slot's previous request was terminal (the phase's start for a slot's first request in a
    /// sitting) and never part of its latency; absent when none was planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_ms: Option<f64>,
    /// Load phases only: the sitting that sent it (the manifest's session number, 1 for the
    /// first). Offsets are from the phase's start in that sitting, so a step resumed after an
    /// interruption holds two timelines, and the report says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sitting: Option<u32>,
    /// Load phases in a region with probe replicas only: which replica sent it (`k` of the
    /// region's `replicas`), so each replica's send lag is reported on its own (docs/load.md,
    /// "Probe replicas").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<u32>,
    /// The name of the tool the request offered (absent when it offered none), so a record
    /// says on its own that its answer is expected as a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_tool: Option<String>,
    /// Tool calls the stream carried, in the order each began (METHODOLOGY §3b); absent when
    /// none, so records without them keep their bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<crate::tool::ToolCall>,
    /// Time to the first tool-call token: the offset of the first event with tool-call text
    /// (a name or argument fragment), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttf_tool_call_ms: Option<f64>,
    /// Tool-call E2E: the offset of the last event with tool-call text, ms; only for a
    /// completed 2xx stream with a tool call (as E2E is for the answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_e2e_ms: Option<f64>,
    /// A tool call that was malformed or truncated; absent for none or a well-formed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_error: Option<crate::tool::ToolCallError>,
}

impl TerminalRecord {
    /// Copies a request's identity onto its record: the one place the fields are copied.
    pub fn set_identity(&mut self, id: &crate::request::RequestIdentity) {
        self.run_id.clone_from(&id.run_id);
        self.round_id.clone_from(&id.round_id);
        self.request_id.clone_from(&id.request_id);
        self.round_index = id.round_index;
        self.attempt = id.attempt;
        self.task_family.clone_from(&id.task_family);
        self.item_id.clone_from(&id.item_id);
        self.provider.clone_from(&id.provider);
        self.region.clone_from(&id.region);
        self.lane.clone_from(&id.lane);
        self.phase = id.phase;
        self.slot = id.slot;
        self.sequence = id.sequence;
    }

    /// An empty record for a request that has not produced anything yet.
    pub fn new(started_at: String, outcome: Outcome) -> Self {
        TerminalRecord {
            schema_version: RECORD_SCHEMA_VERSION,
            run_id: String::new(),
            round_id: String::new(),
            request_id: String::new(),
            round_index: 0,
            attempt: 0,
            task_family: String::new(),
            item_id: String::new(),
            provider: String::new(),
            region: String::new(),
            lane: String::new(),
            requested_model: String::new(),
            response_model: None,
            started_at,
            outcome,
            error_type: None,
            error_message: None,
            http_status: None,
            headers_ms: None,
            ttfo_ms: None,
            ttfa_ms: None,
            e2e_ms: None,
            stream_end_ms: None,
            answer_text: String::new(),
            reasoning_text: String::new(),
            answer_tokens: None,
            reasoning_tokens_before_answer: None,
            output_tokens_per_second: None,
            finish_reason: None,
            truncated_by_length: false,
            abrupt_end: false,
            resent_on_fresh_connection: false,
            phase: None,
            slot: None,
            sequence: None,
            scheduled_at: None,
            send_lag_ms: None,
            scheduled_offset_ms: None,
            sent_offset_ms: None,
            think_ms: None,
            sitting: None,
            replica: None,
            offered_tool: None,
            tool_calls: Vec::new(),
            ttf_tool_call_ms: None,
            tool_call_e2e_ms: None,
            tool_call_error: None,
            usage: None,
            provider_request_id: None,
            rate_limit_headers: BTreeMap::new(),
            event_count: 0,
            server_timings: None,
            probe_id: None,
            out_of_round: false,
        }
    }
}

/// A terminal record together with its parsed events: what a probe returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Execution {
    /// The terminal record.
    pub record: TerminalRecord,
    /// Every parsed event, in arrival order.
    pub events: Vec<StreamEvent>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_types_use_the_methodology_names() {
        let names: Vec<String> = [
            ErrorType::Http429,
            ErrorType::OtherHttp4xx,
            ErrorType::Http5xx,
            ErrorType::OtherHttpStatus,
            ErrorType::TruncatedStream,
            ErrorType::InvalidSse,
            ErrorType::LimitLineBytes,
            ErrorType::LimitEventBytes,
            ErrorType::LimitEvents,
            ErrorType::LimitAnswerBytes,
        ]
        .iter()
        .map(|e| serde_json::to_string(e).unwrap_or_default())
        .collect();
        assert_eq!(
            names,
            [
                "\"http_429\"",
                "\"other_http_4xx\"",
                "\"http_5xx\"",
                "\"other_http_status\"",
                "\"truncated_stream\"",
                "\"invalid_sse\"",
                "\"limit_line_bytes\"",
                "\"limit_event_bytes\"",
                "\"limit_events\"",
                "\"limit_answer_bytes\""
            ]
        );
    }
}
