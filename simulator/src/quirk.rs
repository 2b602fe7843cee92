//! The fault and quirk catalogue: every behaviour a request can force by name.
//!
//! A request selects quirks with the header `x-sim-quirk: a,b` or a model suffix `model+a+b`.
//! Profiles name their habitual quirks and their failure kinds with the same names, so one
//! table is the whole vocabulary.

use crate::SimError;

/// One entry of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Quirk {
    /// First chunk carries only `delta.role`.
    RoleFirst,
    /// Reasoning text in `delta.reasoning_content`.
    ReasoningInReasoningContent,
    /// Reasoning text in `delta.reasoning`.
    ReasoningInReasoning,
    /// Reasoning text in `delta.reasoning_details[].text`.
    ReasoningInDetails,
    /// Reasoning chunks carry `content: null`.
    ReasoningContentNull,
    /// Reasoning chunks carry `content: ""`.
    ReasoningContentEmpty,
    /// The first answer delta is whitespace only (`"\n"`).
    WhitespaceFirstDelta,
    /// Events are batched four to a write.
    BatchedEvents,
    /// The first answer event is written one byte per write, about 1 ms apart.
    OneByteWrites,
    /// A multi-byte UTF-8 character is split across two writes.
    Utf8Split,
    /// Lines end with CRLF.
    Crlf,
    /// Each chunk's JSON is spread over two `data:` lines.
    MultilineData,
    /// `: keep-alive` comments between events.
    KeepAlive,
    /// A usage-only final chunk (`choices: []`), whatever the request asked.
    UsageChunk,
    /// A final `finish_reason` but no `data: [DONE]`.
    NoDone,
    /// The stream stops mid-answer: neither `[DONE]` nor a `finish_reason`.
    Truncated,
    /// A `{"error": …}` chunk after two answer chunks, then close.
    ErrorObject,
    /// A `{"object": "error", …}` chunk after two answer chunks, then close.
    ObjectError,
    /// An `event: error` event after two answer chunks, then close.
    EventError,
    /// A non-JSON `data:` payload after two answer chunks.
    NonJsonData,
    /// HTTP 429 with `Retry-After: 2`.
    Http429,
    /// HTTP 500 with a JSON error body.
    Http500,
    /// HTTP 400 with a JSON error body.
    Http400,
    /// Response headers never come (until the hang limit or shutdown).
    NoHeaders,
    /// 200 and headers, then only `: keep-alive` comments until the hang limit.
    KeepAliveDrip,
    /// The response echoes a different `model` (`<model>-fp8`).
    WrongModel,
    /// The answer is cut to half its characters and ends with `finish_reason: "length"`.
    FinishLength,
    /// No answer text at all; the stream still finishes with `stop` and `[DONE]`.
    EmptyAnswer,
    /// Hostile: one `data:` line that never ends.
    EndlessLine,
    /// Hostile: `data:` lines without end and never a blank line.
    EndlessDataLines,
    /// Hostile: keep-alive comments as fast as the client reads.
    CommentFlood,
    /// Hostile: one 50 MB answer event, then a finish and `[DONE]`.
    HugeEvent,
    /// Hostile: HTTP 500 whose body never ends.
    EndlessErrorBody,
    /// Hostile: an answer event, then an event with invalid UTF-8.
    InvalidUtf8,
    /// Hostile: the request's bearer token echoed split across two answer events.
    EchoKeySplit,
    /// Hostile: the request's `Authorization` header echoed base64-encoded, split across two
    /// answer events.
    EchoKeyBase64,
    /// Hostile: HTTP 401 whose error message quotes the bearer token.
    EchoKeyError,
    /// Hostile: pieces of the bearer token in every field a stream carries (request id,
    /// rate-limit header, model, finish reason), its halves split by whitespace across
    /// reasoning and answer, spelled in 5-character groups, reversed and in hex.
    EchoKeyPieces,
    /// Hostile: HTTP 401 whose error message holds the bearer token in hex (both cases) and in
    /// URL-safe base64.
    EchoKeyEncodedError,
    /// Anthropic-style `event: ping` keep-alive events (`{"type":"ping"}`) between events, in
    /// any dialect (an Anthropic stream has them with `keep-alive` too, and one after
    /// `message_start` always).
    Ping,
    /// A mid-stream overload after two answer chunks, then close: Anthropic `event: error` with
    /// `overloaded_error`, Responses `response.failed` with `server_is_overloaded`, chat and
    /// legacy completions `event: error` with type `overloaded_error`.
    OverloadedError,
    /// A failure after two answer chunks, then close: Responses `response.failed` (other
    /// dialects: their error event, as `event-error`).
    ResponseFailed,
    /// With a forced tool: the call's arguments are not JSON (single-quoted keys); the stream
    /// ends normally.
    MalformedToolCall,
    /// With a forced tool: the call's arguments are cut to half and the stream ends with the
    /// length stop inside the call.
    TruncatedToolCall,
    /// An agent request (docs/agents.md): the simulated agent calls the other offered tool
    /// with the scripted arguments instead of the scripted one.
    AgentWrongTool,
}

/// Every quirk with its stable name and a one-line description, in listing order.
pub const CATALOGUE: &[(Quirk, &str, &str)] = &[
    (
        Quirk::RoleFirst,
        "role-first",
        "first chunk is role-only (delta.role, content null)",
    ),
    (
        Quirk::ReasoningInReasoningContent,
        "reasoning-in-reasoning-content",
        "reasoning text in delta.reasoning_content",
    ),
    (
        Quirk::ReasoningInReasoning,
        "reasoning-in-reasoning",
        "reasoning text in delta.reasoning",
    ),
    (
        Quirk::ReasoningInDetails,
        "reasoning-in-details",
        "reasoning text in delta.reasoning_details[].text",
    ),
    (
        Quirk::ReasoningContentNull,
        "reasoning-content-null",
        "reasoning chunks carry content: null",
    ),
    (
        Quirk::ReasoningContentEmpty,
        "reasoning-content-empty",
        "reasoning chunks carry content: \"\"",
    ),
    (
        Quirk::WhitespaceFirstDelta,
        "whitespace-first-delta",
        "first answer delta is \"\\n\" only",
    ),
    (
        Quirk::BatchedEvents,
        "batched-events",
        "four events per network write",
    ),
    (
        Quirk::OneByteWrites,
        "one-byte-writes",
        "first answer event written one byte per write, ~1 ms apart",
    ),
    (
        Quirk::Utf8Split,
        "utf8-split",
        "a multi-byte UTF-8 character split across two writes",
    ),
    (Quirk::Crlf, "crlf", "CRLF line endings"),
    (
        Quirk::MultilineData,
        "multiline-data",
        "each chunk's JSON spread over two data: lines",
    ),
    (
        Quirk::KeepAlive,
        "keep-alive",
        "': keep-alive' comments between events",
    ),
    (
        Quirk::UsageChunk,
        "usage-chunk",
        "usage-only final chunk (choices: []) even if not requested",
    ),
    (
        Quirk::NoDone,
        "no-done",
        "finish_reason but no [DONE] (still complete)",
    ),
    (
        Quirk::Truncated,
        "truncated",
        "stream stops mid-answer: no finish_reason, no [DONE]",
    ),
    (
        Quirk::ErrorObject,
        "error-object",
        "{\"error\":{…}} chunk after two answer chunks",
    ),
    (
        Quirk::ObjectError,
        "object-error",
        "{\"object\":\"error\",…} chunk after two answer chunks",
    ),
    (
        Quirk::EventError,
        "event-error",
        "'event: error' after two answer chunks",
    ),
    (
        Quirk::NonJsonData,
        "non-json-data",
        "a non-JSON data: payload after two answer chunks",
    ),
    (
        Quirk::OverloadedError,
        "overloaded-error",
        "mid-stream overload after two answer chunks (Anthropic error event overloaded_error, \
         Responses response.failed server_is_overloaded)",
    ),
    (
        Quirk::ResponseFailed,
        "response-failed",
        "Responses 'response.failed' after two answer chunks (others: their error event)",
    ),
    (
        Quirk::MalformedToolCall,
        "malformed-tool-call",
        "with a forced tool: the call's arguments are not JSON (single-quoted keys)",
    ),
    (
        Quirk::TruncatedToolCall,
        "truncated-tool-call",
        "with a forced tool: the call's arguments cut to half, then the length stop",
    ),
    (
        Quirk::AgentWrongTool,
        "agent-wrong-tool",
        "an agent request: the simulated agent calls the other offered tool instead",
    ),
    (
        Quirk::Ping,
        "ping",
        "Anthropic-style 'event: ping' keep-alive events between events",
    ),
    (Quirk::Http429, "http-429", "HTTP 429 with Retry-After: 2"),
    (
        Quirk::Http500,
        "http-500",
        "HTTP 500 with a JSON error body",
    ),
    (
        Quirk::Http400,
        "http-400",
        "HTTP 400 with a JSON error body",
    ),
    (
        Quirk::NoHeaders,
        "no-headers",
        "response headers never come (hang limit 60 s x time_scale)",
    ),
    (
        Quirk::KeepAliveDrip,
        "keep-alive-drip",
        "200, then only keep-alive comments every 500 ms x time_scale until the hang limit",
    ),
    (
        Quirk::WrongModel,
        "wrong-model",
        "echoes model '<model>-fp8'",
    ),
    (
        Quirk::FinishLength,
        "finish-length",
        "answer cut to half its characters, finish_reason: length",
    ),
    (
        Quirk::EmptyAnswer,
        "empty-answer",
        "no answer text; finish_reason stop and [DONE]",
    ),
    (
        Quirk::EndlessLine,
        "endless-line",
        "hostile: one data: line that never ends (until the hang limit)",
    ),
    (
        Quirk::EndlessDataLines,
        "endless-data-lines",
        "hostile: data: lines forever, never a blank line",
    ),
    (
        Quirk::CommentFlood,
        "comment-flood",
        "hostile: keep-alive comments as fast as the client reads",
    ),
    (
        Quirk::HugeEvent,
        "huge-event",
        "hostile: one 50 MB answer event, then finish and [DONE]",
    ),
    (
        Quirk::EndlessErrorBody,
        "endless-error-body",
        "hostile: HTTP 500 with a body that never ends",
    ),
    (
        Quirk::InvalidUtf8,
        "invalid-utf8",
        "hostile: an answer event, then an event with invalid UTF-8",
    ),
    (
        Quirk::EchoKeySplit,
        "echo-key-split",
        "hostile: the bearer token echoed split across two answer events",
    ),
    (
        Quirk::EchoKeyBase64,
        "echo-key-base64",
        "hostile: the Authorization header echoed base64-encoded, split across two answer events",
    ),
    (
        Quirk::EchoKeyError,
        "echo-key-error",
        "hostile: HTTP 401 whose error message quotes the bearer token",
    ),
    (
        Quirk::EchoKeyPieces,
        "echo-key-pieces",
        "hostile: pieces of the bearer token in the request id, a rate-limit header, the model, \
         the finish reason, split by whitespace across reasoning and answer, reversed and in hex",
    ),
    (
        Quirk::EchoKeyEncodedError,
        "echo-key-encoded-error",
        "hostile: HTTP 401 whose error message holds the bearer token in hex and base64",
    ),
];

impl Quirk {
    /// The stable kebab-case name.
    pub fn name(self) -> &'static str {
        CATALOGUE
            .iter()
            .find(|(q, _, _)| *q == self)
            .map(|(_, name, _)| *name)
            .unwrap_or("unknown")
    }

    /// Looks a quirk up by its stable name.
    pub fn from_name(name: &str) -> Option<Quirk> {
        CATALOGUE
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(q, _, _)| *q)
    }

    /// True for the hostile entries: they replace the whole response (see `hostile`).
    pub fn is_hostile(self) -> bool {
        matches!(
            self,
            Quirk::EndlessLine
                | Quirk::EndlessDataLines
                | Quirk::CommentFlood
                | Quirk::HugeEvent
                | Quirk::EndlessErrorBody
                | Quirk::InvalidUtf8
                | Quirk::EchoKeySplit
                | Quirk::EchoKeyBase64
                | Quirk::EchoKeyError
                | Quirk::EchoKeyPieces
                | Quirk::EchoKeyEncodedError
        )
    }

    /// True for quirks that make the request fail (they replace the profile's failure draw).
    pub fn is_fault(self) -> bool {
        matches!(
            self,
            Quirk::Truncated
                | Quirk::ErrorObject
                | Quirk::OverloadedError
                | Quirk::ResponseFailed
                | Quirk::ObjectError
                | Quirk::EventError
                | Quirk::NonJsonData
                | Quirk::Http429
                | Quirk::Http500
                | Quirk::Http400
                | Quirk::NoHeaders
                | Quirk::KeepAliveDrip
        ) || self.is_hostile()
    }
}

/// Parses a list of names separated by `sep`, ignoring blanks; `source` names where they came
/// from in the error.
pub fn parse_list(text: &str, sep: char, source: &str) -> Result<Vec<Quirk>, SimError> {
    let mut out = Vec::new();
    for name in text.split(sep).map(str::trim).filter(|n| !n.is_empty()) {
        let quirk = Quirk::from_name(name).ok_or_else(|| SimError::UnknownQuirk {
            name: name.to_string(),
            origin: source.to_string(),
        })?;
        if !out.contains(&quirk) {
            out.push(quirk);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_kebab_case_and_round_trip() {
        let mut seen = std::collections::BTreeSet::new();
        for (quirk, name, _) in CATALOGUE {
            assert!(seen.insert(*name), "{name} listed twice");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            );
            assert_eq!(Quirk::from_name(name), Some(*quirk));
            assert_eq!(quirk.name(), *name);
        }
        assert_eq!(CATALOGUE.len(), 45);
    }

    #[test]
    fn parse_list_rejects_unknown_names_and_dedups() {
        let got = parse_list(" crlf, role-first ,crlf,", ',', "x-sim-quirk").unwrap();
        assert_eq!(got, vec![Quirk::Crlf, Quirk::RoleFirst]);
        let err = parse_list("crlf+nope", '+', "model suffix").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown quirk \"nope\" in model suffix (see `sim quirks`)"
        );
    }
}
