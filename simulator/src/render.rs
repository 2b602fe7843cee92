//! From draft to bytes: chunk JSON, SSE framing, keep-alive comments and the write-level quirks
//! (batching, byte-by-byte writes, a UTF-8 character split across writes).

use crate::answer::AnswerKind;
use crate::dialect::{self, Rendered, Tracker};
use crate::draft::{Draft, Event, Outline, Payload, draft};
use crate::profile::Profile;
use crate::quirk::Quirk;
use crate::request::SimRequest;
use crate::rng::Draws;
use crate::sse::{Chunker, Framing, Label};
use openbench_common::spec::Api;
use openbench_common::workflow::CannedAnswer;
use serde_json::{Value, json};

/// Simulated milliseconds a hanging response lasts (`no-headers`, `keep-alive-drip`).
pub const HANG_MS: f64 = 60_000.0;
/// Simulated milliseconds between comments of a `keep-alive-drip`.
pub const DRIP_EVERY_MS: f64 = 500.0;
/// Real milliseconds between the pieces of a split write (`one-byte-writes`, `utf8-split`).
pub const SPLIT_GAP_MS: f64 = 1.0;

/// One network write.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    /// Target time from request receipt, ms (simulated unless the replay is exact).
    pub at_ms: f64,
    /// Real ms that must pass since the previous write, whatever `at_ms` says.
    pub min_gap_ms: f64,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// What they carry.
    pub label: Label,
    /// Output tokens in them (one per reasoning or answer chunk), for a shared token rate.
    pub tokens: u32,
}

/// What the response looks like on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// A non-2xx status with a JSON body.
    Error {
        /// HTTP status.
        status: u16,
        /// Extra headers (`retry-after`, rate-limit headers).
        headers: Vec<(&'static str, String)>,
        /// JSON body.
        body: String,
    },
    /// Headers never come, until the hang limit.
    Hang,
    /// A 200 event stream; `drip` adds keep-alive comments until the hang limit after the writes.
    Stream {
        /// The writes in order.
        writes: Vec<Write>,
        /// Keep dripping comments after the writes.
        drip: bool,
    },
}

/// Everything the server needs to answer one request: the bytes and when to write them.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// `sim-…` request id header.
    pub request_id: String,
    /// Time of the response headers from request receipt, ms.
    pub headers_at_ms: f64,
    /// The response.
    pub shape: Shape,
    /// True in schedule mode: times are real milliseconds, never scaled.
    pub exact: bool,
    /// The answer kind drawn (for logs and tests).
    pub answer_kind: AnswerKind,
}

/// Drafts and renders the response to one request.
pub fn respond(
    profile: &Profile,
    request: &SimRequest,
    answers: &[CannedAnswer],
    draws: &mut Draws,
) -> Replay {
    render(&draft(profile, request, answers, draws))
}

/// Renders a draft into writes.
pub fn render(draft: &Draft) -> Replay {
    let shape = match &draft.outline {
        Outline::HttpError(q) => http_error(*q, draft.api),
        Outline::Hang => Shape::Hang,
        Outline::Drip => Shape::Stream {
            writes: Vec::new(),
            drip: true,
        },
        Outline::Stream(events) => Shape::Stream {
            writes: to_writes(draft, events),
            drip: false,
        },
    };
    Replay {
        request_id: format!("sim-{}", draft.id_hex),
        headers_at_ms: if matches!(shape, Shape::Hang) {
            HANG_MS
        } else {
            draft.headers_at_ms
        },
        shape,
        exact: draft.exact,
        answer_kind: draft.answer_kind,
    }
}

/// The response of an HTTP-error quirk, in the dialect's error shape (Anthropic's
/// `{"type":"error","error":{…}}`, OpenAI's `{"error":{…}}`).
fn http_error(quirk: Quirk, api: Api) -> Shape {
    let error = |message: &str, kind: &str| {
        let error = json!({"message": message, "type": anthropic_type(api, kind)});
        if api == Api::AnthropicMessages {
            json!({"type": "error", "error": error})
        } else {
            json!({"error": error})
        }
    };
    match quirk {
        Quirk::Http429 => {
            let mut body = error("Rate limit reached (simulated)", "rate_limit_error");
            body["error"]["code"] = json!("rate_limit_exceeded");
            Shape::Error {
                status: 429,
                headers: vec![
                    ("retry-after", "2".to_string()),
                    ("x-ratelimit-limit-requests", "60".to_string()),
                    ("x-ratelimit-remaining-requests", "0".to_string()),
                ],
                body: body.to_string(),
            }
        }
        Quirk::Http400 => {
            let mut body = error("Invalid request (simulated)", "invalid_request_error");
            body["error"]["param"] = json!("response_format");
            Shape::Error {
                status: 400,
                headers: Vec::new(),
                body: body.to_string(),
            }
        }
        _ => Shape::Error {
            status: 500,
            headers: Vec::new(),
            body: error("Internal server error (simulated)", "server_error").to_string(),
        },
    }
}

/// An error type in the dialect's vocabulary: Anthropic says `api_error` where OpenAI says
/// `server_error`.
fn anthropic_type(api: Api, kind: &str) -> &str {
    match (api, kind) {
        (Api::AnthropicMessages, "server_error") => "api_error",
        _ => kind,
    }
}

/// The events one drafted payload becomes in the draft's dialect (none for a payload the
/// dialect has no event for, such as a role chunk in Anthropic's stream).
fn events(draft: &Draft, chunker: &Chunker, payload: &Payload, t: &mut Tracker) -> Vec<Rendered> {
    if let Some(events) = crate::tool_call::events(draft, chunker, payload, t) {
        return events;
    }
    match draft.api {
        Api::OpenaiChat => vec![event_data(draft, chunker, payload)],
        Api::AnthropicMessages => dialect::anthropic(draft, payload, t),
        Api::OpenaiResponses => dialect::responses(draft, payload, t),
        Api::OpenaiCompletions => match payload {
            Payload::Role => Vec::new(),
            Payload::Reasoning(piece) => vec![(
                Label::Reasoning,
                None,
                dialect::completion_chunk(draft, "", Some(piece), None),
            )],
            Payload::Answer(piece) => vec![(
                Label::Answer,
                None,
                dialect::completion_chunk(draft, piece, None, None),
            )],
            Payload::Finish(reason) => vec![(
                Label::Finish,
                None,
                dialect::completion_chunk(draft, "", None, Some(reason)),
            )],
            _ => vec![event_data(draft, chunker, payload)],
        },
    }
}

/// The label, optional `event:` name and `data` of one event.
fn event_data(
    draft: &Draft,
    chunker: &Chunker,
    payload: &Payload,
) -> (Label, Option<&'static str>, String) {
    let message = "upstream model failure (simulated)";
    match payload {
        Payload::Role => (Label::Role, None, chunker.chunk(json!({"role": "assistant", "content": null}), None)),
        Payload::Reasoning(piece) => (Label::Reasoning, None, chunker.chunk(reasoning_delta(draft, piece), None)),
        Payload::Answer(piece) => (Label::Answer, None, chunker.chunk(json!({"content": piece}), None)),
        Payload::Finish(reason) => (Label::Finish, None, chunker.chunk(json!({}), Some(reason))),
        Payload::Usage { prompt_tokens, completion_tokens, cached_tokens } => {
            (Label::Usage, None, chunker.usage(*prompt_tokens, *completion_tokens, *cached_tokens))
        }
        Payload::Done => (Label::Done, None, "[DONE]".to_string()),
        Payload::Fault(Quirk::ObjectError) => (
            Label::Error,
            None,
            json!({"object": "error", "message": message, "type": "InternalServerError", "code": 500}).to_string(),
        ),
        Payload::Fault(Quirk::OverloadedError) => (
            Label::Error,
            Some("error"),
            json!({"error": {"message": "Overloaded (simulated)", "type": "overloaded_error"}})
                .to_string(),
        ),
        Payload::Fault(Quirk::EventError | Quirk::ResponseFailed) => (
            Label::Error,
            Some("error"),
            json!({"error": {"message": message, "type": "server_error"}}).to_string(),
        ),
        Payload::Fault(Quirk::NonJsonData) => (
            Label::Garbage,
            None,
            "upstream connect error or disconnect/reset before headers".to_string(),
        ),
        Payload::Fault(_) => (
            Label::Error,
            None,
            json!({"error": {"message": message, "type": "server_error", "code": 502}}).to_string(),
        ),
    }
}

/// A reasoning delta in the draft's field, with `content` null, empty or absent.
fn reasoning_delta(draft: &Draft, piece: &str) -> Value {
    let mut delta = match draft.reasoning_field {
        Quirk::ReasoningInReasoning => json!({"reasoning": piece}),
        Quirk::ReasoningInDetails => {
            json!({"reasoning_details": [{"type": "reasoning.text", "text": piece}]})
        }
        _ => json!({"reasoning_content": piece}),
    };
    if draft.has(Quirk::ReasoningContentNull) {
        delta["content"] = Value::Null;
    } else if draft.has(Quirk::ReasoningContentEmpty) {
        delta["content"] = json!("");
    }
    delta
}

/// Frames events into writes, adding keep-alive comments and applying the write-level quirks.
fn to_writes(draft: &Draft, events: &[Event]) -> Vec<Write> {
    let chunker = Chunker {
        id: format!("chatcmpl-{}", draft.id_hex),
        created: draft.created,
        model: draft.model.clone(),
    };
    let framing = Framing {
        crlf: draft.has(Quirk::Crlf),
        multiline: draft.has(Quirk::MultilineData),
    };
    let keep_alive = draft.has(Quirk::KeepAlive) || draft.has(Quirk::Ping);
    let ping = dialect::keep_alive(draft.api, draft);
    let mut tracker = Tracker::default();
    let mut writes = Vec::new();
    let opening = dialect::opening(draft.api, draft, &mut tracker);
    if let Some(write) = one_write(framing, draft.headers_at_ms, &opening) {
        writes.push(write);
    }
    let mut previous = draft.headers_at_ms;
    for event in events {
        if keep_alive {
            let bytes = match &ping {
                Some((_, name, data)) => framing.event(*name, data),
                None => framing.comment(),
            };
            writes.push(Write {
                at_ms: (previous + event.at_ms) / 2.0,
                min_gap_ms: 0.0,
                bytes,
                label: Label::Comment,
                tokens: 0,
            });
        }
        previous = event.at_ms;
        let rendered = self::events(draft, &chunker, &event.payload, &mut tracker);
        if let Some(write) = one_write(framing, event.at_ms, &rendered) {
            writes.push(write);
        }
    }
    if draft.has(Quirk::BatchedEvents) {
        writes = batch(writes, 4);
    }
    let first_answer = writes.iter().position(|w| w.label == Label::Answer);
    if let (true, Some(i)) = (draft.has(Quirk::OneByteWrites), first_answer) {
        let w = writes.remove(i);
        let bytes = w.bytes.iter().enumerate().map(|(k, b)| Write {
            at_ms: w.at_ms,
            min_gap_ms: if k == 0 { 0.0 } else { SPLIT_GAP_MS },
            bytes: vec![*b],
            label: Label::Fragment,
            tokens: if k == 0 { w.tokens } else { 0 },
        });
        writes.splice(i..i, bytes);
    }
    if draft.has(Quirk::Utf8Split) {
        split_utf8(&mut writes);
    }
    writes
}

/// One write of `events` at `at_ms`, labelled by its last event; `None` for no events.
fn one_write(framing: Framing, at_ms: f64, events: &[Rendered]) -> Option<Write> {
    let label = events.last()?.0;
    Some(Write {
        at_ms,
        min_gap_ms: 0.0,
        bytes: events
            .iter()
            .flat_map(|(_, name, data)| framing.event(*name, data))
            .collect(),
        label,
        tokens: u32::from(matches!(label, Label::Reasoning | Label::Answer)),
    })
}

/// Merges every `n` consecutive writes into one, timed at the last of them.
fn batch(writes: Vec<Write>, n: usize) -> Vec<Write> {
    writes
        .chunks(n)
        .map(|group| Write {
            at_ms: group.last().map_or(0.0, |w| w.at_ms),
            min_gap_ms: 0.0,
            bytes: group.iter().flat_map(|w| w.bytes.iter().copied()).collect(),
            label: if group.len() == 1 {
                group[0].label
            } else {
                Label::Batch
            },
            tokens: group.iter().map(|w| w.tokens).sum(),
        })
        .collect()
}

/// Splits the first write holding a multi-byte character right after that character's first byte.
fn split_utf8(writes: &mut Vec<Write>) {
    for i in 0..writes.len() {
        if let Some(at) = writes[i].bytes.iter().position(|b| *b >= 0xC0) {
            let tail = writes[i].bytes.split_off(at + 1);
            let label = writes[i].label;
            writes[i].label = Label::Fragment;
            writes.insert(
                i + 1,
                Write {
                    at_ms: writes[i].at_ms,
                    min_gap_ms: SPLIT_GAP_MS,
                    bytes: tail,
                    label,
                    tokens: 0,
                },
            );
            return;
        }
    }
}
