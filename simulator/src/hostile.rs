//! Hostile upstreams: the catalogue entries that attack the client rather than imitate a
//! provider. Each is a lazily generated body, so the simulator itself holds almost
//! nothing however much it sends; endless bodies stop at the hang limit, on shutdown, or when the
//! client goes away.

use crate::quirk::Quirk;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use bytes::Bytes;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Bytes per write of an endless or huge body.
const WRITE_BYTES: usize = 64 * 1024;

/// Size of the `huge-event` answer chunk: 50 MB.
pub const HUGE_EVENT_BYTES: usize = 50 * 1000 * 1000;

/// The first hostile quirk among `forced`, if any: it replaces the whole response.
pub fn pick(forced: &[Quirk]) -> Option<Quirk> {
    forced.iter().copied().find(|q| q.is_hostile())
}

/// The response of a hostile quirk. `bearer` is the request's bearer token (echoed by
/// the `echo-key-*` quirks); endless bodies end at `until` or on `cancel`.
pub fn respond(quirk: Quirk, bearer: &str, until: Instant, cancel: CancellationToken) -> Response {
    let endless = |head: &'static [u8], unit: &'static [u8]| {
        stream_response(
            StatusCode::OK,
            endless_body(head, unit, until, cancel.clone()),
        )
    };
    match quirk {
        Quirk::EndlessLine => endless(b"data: {\"choices\":[{\"delta\":{\"content\":\"", b"a"),
        Quirk::EndlessDataLines => endless(b"", b"data: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"),
        Quirk::CommentFlood => endless(b"", b": keep-alive\n\n"),
        Quirk::EndlessErrorBody => {
            let body = endless_body(b"{\"error\":{\"message\":\"", b"x", until, cancel);
            let mut response = stream_response(StatusCode::INTERNAL_SERVER_ERROR, body);
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Quirk::HugeEvent => stream_response(StatusCode::OK, huge_event_body()),
        Quirk::InvalidUtf8 => {
            let bytes: Vec<u8> = [
                answer_event("ok").as_slice(),
                b"data: {\"choices\":[{\"delta\":{\"content\":\"\xff\xfe\"}}]}\n\n",
                FINISH_AND_DONE,
            ]
            .concat();
            stream_response(StatusCode::OK, Body::from(bytes))
        }
        Quirk::EchoKeySplit => {
            let half = bearer.len() / 2;
            let (first, second) = (
                bearer.get(..half).unwrap_or(""),
                bearer.get(half..).unwrap_or(""),
            );
            let bytes: Vec<u8> = [
                answer_event(&format!("your key is {first}")).as_slice(),
                answer_event(second).as_slice(),
                FINISH_AND_DONE,
            ]
            .concat();
            stream_response(StatusCode::OK, Body::from(bytes))
        }
        Quirk::EchoKeyBase64 => {
            // What a proxy that logs the request's headers back might send: `Bearer <key>`
            // encoded, so the key sits at a byte offset of 7 (not a multiple of 3) in the text.
            let encoded = STANDARD.encode(format!("Bearer {bearer}"));
            let (first, second) = encoded.split_at(encoded.len() / 2);
            let bytes: Vec<u8> = [
                answer_event(&format!("auth was {first}")).as_slice(),
                answer_event(second).as_slice(),
                FINISH_AND_DONE,
            ]
            .concat();
            stream_response(StatusCode::OK, Body::from(bytes))
        }
        Quirk::EchoKeyError => {
            let body = serde_json::json!({"error": {
                "message": format!("Incorrect API key provided: {bearer}"),
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }});
            let mut response =
                (StatusCode::UNAUTHORIZED, Body::from(body.to_string())).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Quirk::EchoKeyPieces => echo_key_pieces(bearer),
        Quirk::EchoKeyEncodedError => {
            let hex: String = bearer.bytes().map(|b| format!("{b:02x}")).collect();
            let message = format!(
                "key {hex} (upper {}) or, encoded, :{} is not valid",
                hex.to_uppercase(),
                URL_SAFE.encode(format!(":{bearer}"))
            );
            json_response(StatusCode::UNAUTHORIZED, &message)
        }
        _ => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// The `echo-key-pieces` stream: the token's first 11 characters as the request id and the
/// finish reason, a reversed piece in a rate-limit header and one in the model, its halves split
/// by whitespace between reasoning and answer, then the token in 5-character groups, reversed
/// and in hex in the answer.
fn echo_key_pieces(bearer: &str) -> Response {
    let piece = |from: usize, to: usize| bearer.get(from..to.min(bearer.len())).unwrap_or("");
    let half = bearer.len() / 2;
    let reversed: String = bearer.chars().rev().collect();
    let groups: Vec<&str> = (0..bearer.len())
        .step_by(5)
        .map(|at| piece(at, at + 5))
        .collect();
    let hex: String = bearer.bytes().map(|b| format!("{b:02x}")).collect();
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let chunk = serde_json::json!({
            "model": format!("m-{}", piece(2, 13)),
            "choices": [{"delta": delta, "finish_reason": finish}],
        });
        format!("data: {chunk}\n\n")
    };
    let answer = format!(
        " {}\nspelled {}; backwards {reversed}; hex {hex}",
        piece(half, bearer.len()),
        groups.join(" ")
    );
    let body = [
        chunk(
            serde_json::json!({"reasoning_content": format!("the key is {} ", piece(0, half))}),
            None,
        ),
        chunk(serde_json::json!({"content": answer}), None),
        chunk(serde_json::json!({}), Some(piece(0, 11))),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    let mut response = stream_response(StatusCode::OK, Body::from(body));
    for (name, value) in [
        ("x-request-id", piece(0, 11).to_string()),
        (
            "x-ratelimit-remaining-requests",
            reversed
                .get(..reversed.len().min(9))
                .unwrap_or("")
                .to_string(),
        ),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// A JSON error response whose message is `message`.
fn json_response(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({"error": {"message": message, "type": "invalid_request_error"}});
    let mut response = (status, Body::from(body.to_string())).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A finish chunk and `[DONE]`.
const FINISH_AND_DONE: &[u8] =
    b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// One answer event carrying `text`.
fn answer_event(text: &str) -> Vec<u8> {
    let chunk = serde_json::json!({"choices": [{"delta": {"content": text}}]});
    format!("data: {chunk}\n\n").into_bytes()
}

fn stream_response(status: StatusCode, body: Body) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// `head`, then `unit` repeated in writes of about [`WRITE_BYTES`] as fast as the client reads,
/// until `until` or `cancel`.
fn endless_body(
    head: &'static [u8],
    unit: &'static [u8],
    until: Instant,
    cancel: CancellationToken,
) -> Body {
    let write = Bytes::from(unit.repeat((WRITE_BYTES / unit.len()).max(1)));
    let first = (!head.is_empty()).then(|| Bytes::from_static(head));
    let stream = futures_util::stream::unfold(first, move |first| {
        let write = write.clone();
        let cancel = cancel.clone();
        async move {
            if cancel.is_cancelled() || Instant::now() >= until {
                return None;
            }
            let bytes = first.unwrap_or(write);
            Some((Ok::<Bytes, std::convert::Infallible>(bytes), None))
        }
    });
    Body::from_stream(stream)
}

/// One answer event whose content is [`HUGE_EVENT_BYTES`] of words, written in pieces, then a
/// finish and `[DONE]`.
fn huge_event_body() -> Body {
    const HEAD: &[u8] = b"data: {\"choices\":[{\"delta\":{\"content\":\"";
    const TAIL: &[u8] = b"\"}}]}\n\n";
    let piece = Bytes::from(b"word ".repeat(WRITE_BYTES / 5));
    let pieces = HUGE_EVENT_BYTES / piece.len();
    let writes = std::iter::once(Bytes::from_static(HEAD))
        .chain(std::iter::repeat_n(piece, pieces))
        .chain([
            Bytes::from_static(TAIL),
            Bytes::from_static(FINISH_AND_DONE),
        ])
        .map(Ok::<Bytes, std::convert::Infallible>);
    Body::from_stream(futures_util::stream::iter(writes))
}
