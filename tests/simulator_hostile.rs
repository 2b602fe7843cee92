#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The hostile entries of the simulator's catalogue, each driven through the real probe executor
//! over loopback: every one ends as its own outcome and error type well before the
//! deadline, keeping what was read up to the limit and no secret. The rest of the catalogue is in
//! `simulator_catalogue.rs`.

mod sim_support;

use openbench_common::limits::StreamLimits;
use openbench_common::record::{Classification, ErrorType, Execution, Outcome};
use openbench_common::request::{ChatMessage, Role};
use openbench_common::spec::Api;
use sim_support::SimCall;

const MODEL: &str = "zai-org/GLM-5.3-Flash";
const DEADLINE_MS: u64 = 4_000;
const KEY: &str = "sk-SENTINEL-7f3a9c-0123456789abcdef";

/// One request with `quirks` in `x-sim-quirk` against the `plain` profile, a bearer key and
/// `limits`.
async fn run_with(quirks: &str, limits: StreamLimits) -> Execution {
    run_in(Api::OpenaiChat, quirks, limits).await
}

/// [`run_with`] in the API dialect `api` (Anthropic's key goes in `x-api-key`).
async fn run_in(api: Api, quirks: &str, limits: StreamLimits) -> Execution {
    sim_support::execute(SimCall {
        api,
        run_id: "run-hostile",
        profile: "plain",
        time_scale: 1.0,
        model: MODEL,
        quirks,
        deadline_ms: DEADLINE_MS,
        bearer: Some(KEY),
        limits,
        messages: vec![ChatMessage::text(Role::User, "What is the answer?".into())],
    })
    .await
}

async fn run(quirks: &str) -> Execution {
    run_with(quirks, StreamLimits::default()).await
}

/// Ended by a limit (not the deadline) as a transport error of `error_type`.
fn assert_limited(e: &Execution, error_type: ErrorType) {
    assert_ended(e, Outcome::StreamLimitExceeded, error_type);
}

fn assert_ended(e: &Execution, outcome: Outcome, error_type: ErrorType) {
    let r = &e.record;
    assert_eq!(r.outcome, outcome, "{:?}", r.error_message);
    assert_eq!(r.error_type, Some(error_type), "{:?}", r.error_message);
    assert_eq!(r.http_status, Some(200));
    assert!(r.stream_end_ms.unwrap() < DEADLINE_MS as f64, "{r:?}");
}

#[tokio::test]
async fn endless_line_stops_at_the_line_limit() {
    let e = run("endless-line").await;
    assert_limited(&e, ErrorType::LimitLineBytes);
    assert!(e.events.is_empty());
    assert_eq!(
        e.record.error_message.as_deref(),
        Some("SSE line 1 is longer than the 1048576-byte line limit")
    );
}

#[tokio::test]
async fn endless_data_lines_stop_at_the_event_limit() {
    let e = run("endless-data-lines").await;
    assert_limited(&e, ErrorType::LimitEventBytes);
    assert!(e.events.is_empty());
}

#[tokio::test]
async fn a_comment_flood_stops_at_the_event_limit_keeping_every_comment_read() {
    let e = run("comment-flood").await;
    assert_limited(&e, ErrorType::LimitEvents);
    assert_eq!(e.events.len(), 10_000);
    assert_eq!(e.record.event_count, 10_000);
    assert!(
        e.events
            .iter()
            .all(|ev| ev.classification == Classification::Comment)
    );
}

#[tokio::test]
async fn every_dialect_stops_a_flood_at_the_event_limit_and_a_long_line_at_the_line_limit() {
    let limits = StreamLimits {
        events: 50,
        ..StreamLimits::default()
    };
    for api in Api::ALL {
        let e = run_in(api, "comment-flood", limits).await;
        assert_limited(&e, ErrorType::LimitEvents);
        assert_eq!(e.events.len(), 50, "{api}");
        let e = run_in(api, "endless-line", StreamLimits::default()).await;
        assert_limited(&e, ErrorType::LimitLineBytes);
    }
}

#[tokio::test]
async fn a_50_mb_event_stops_at_the_line_limit() {
    let e = run("huge-event").await;
    assert_limited(&e, ErrorType::LimitLineBytes);
    assert!(e.events.is_empty());
    assert_eq!(e.record.answer_text, "");
}

#[tokio::test]
async fn an_endless_error_body_is_read_up_to_its_limit_only() {
    let e = run("endless-error-body").await;
    let r = &e.record;
    assert_eq!(
        (r.outcome, r.error_type, r.http_status),
        (Outcome::HttpError, Some(ErrorType::Http5xx), Some(500))
    );
    let message = r.error_message.as_deref().unwrap();
    // `HTTP 500: ` + a 512-character snippet + `…`.
    let snippet = format!("{{\"error\":{{\"message\":\"{}", "x".repeat(512 - 21));
    assert_eq!(message, format!("HTTP 500: {snippet}…"));
    assert!(r.stream_end_ms.unwrap() < DEADLINE_MS as f64);
}

#[tokio::test]
async fn invalid_utf8_is_invalid_sse_keeping_the_event_before_it() {
    let e = run("invalid-utf8").await;
    assert_ended(&e, Outcome::TransportError, ErrorType::InvalidSse);
    assert_eq!(e.record.answer_text, "ok");
    assert_eq!(
        e.record.error_message.as_deref(),
        Some("SSE line 3 is not valid UTF-8 (46 bytes)")
    );
}

#[tokio::test]
async fn a_key_echoed_split_across_two_events_is_stored_nowhere() {
    let e = run("echo-key-split").await;
    assert_eq!(e.record.outcome, Outcome::Completed);
    assert_eq!(e.record.answer_text, "your key is [redacted]");
    let answers: Vec<&str> = e.events.iter().map(|ev| ev.answer.as_str()).collect();
    assert_eq!(answers, ["your key is [redacted]", "[redacted]", "", ""]);
    let json = serde_json::to_string(&e).unwrap();
    for start in 0..=KEY.len() - 6 {
        let piece = &KEY[start..start + 6];
        assert!(!json.contains(piece), "{piece:?} in {json}");
    }
}

#[tokio::test]
async fn the_answer_limit_comes_from_the_contract_and_keeps_the_text_before_it() {
    // The plain answer comes in 4-byte pieces: two fit in 8 bytes, the third would not.
    let limits = StreamLimits {
        answer_bytes: 8,
        ..StreamLimits::default()
    };
    let e = run_with("", limits).await;
    assert_limited(&e, ErrorType::LimitAnswerBytes);
    assert_eq!(e.record.answer_text, r#"{"answer"#);
    assert_eq!(e.events.len(), 2);
}

#[tokio::test]
async fn a_key_echoed_base64_inside_its_header_and_split_is_stored_nowhere() {
    use base64::Engine;
    let e = run("echo-key-base64").await;
    assert_eq!(e.record.outcome, Outcome::Completed);
    assert!(
        e.record.answer_text.starts_with("auth was ")
            && e.record.answer_text.contains("[redacted]"),
        "{}",
        e.record.answer_text
    );
    // Past its first 10 characters the encoding of `Bearer <key>` depends on the key alone.
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("Bearer {KEY}"));
    let inner = &encoded[10..encoded.len() - 4];
    let json = serde_json::to_string(&e).unwrap();
    for start in 0..=inner.len() - 8 {
        let piece = &inner[start..start + 8];
        assert!(!json.contains(piece), "{piece:?} in {json}");
    }
}

#[tokio::test]
async fn a_key_quoted_in_an_error_body_is_stored_nowhere() {
    let e = run("echo-key-error").await;
    let r = &e.record;
    assert_eq!(
        (r.outcome, r.error_type, r.http_status),
        (Outcome::HttpError, Some(ErrorType::OtherHttp4xx), Some(401))
    );
    let message = r.error_message.as_deref().unwrap();
    assert!(
        message.contains("Incorrect API key provided: [redacted]"),
        "{message}"
    );
    let json = serde_json::to_string(&e).unwrap();
    for start in 0..=KEY.len() - 6 {
        let piece = &KEY[start..start + 6];
        assert!(!json.contains(piece), "{piece:?} in {json}");
    }
}

#[tokio::test]
async fn a_key_quoted_in_an_error_body_is_stored_nowhere_in_any_dialect() {
    for api in Api::ALL {
        let e = run_in(api, "echo-key-error", StreamLimits::default()).await;
        let r = &e.record;
        assert_eq!(
            (r.outcome, r.http_status),
            (Outcome::HttpError, Some(401)),
            "{api}"
        );
        let message = r.error_message.as_deref().unwrap();
        assert!(message.contains("[redacted]"), "{api}: {message}");
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(key_pieces_in(&json), Vec::<String>::new(), "{api}");
    }
}

/// Every 6-character piece of [`KEY`], as written and reversed, found in `json`.
fn key_pieces_in(json: &str) -> Vec<String> {
    let reversed: String = KEY.chars().rev().collect();
    [KEY, reversed.as_str()]
        .iter()
        .flat_map(|k| (0..=k.len() - 6).map(move |i| k[i..i + 6].to_string()))
        .filter(|p| json.contains(p.as_str()))
        .collect()
}

#[tokio::test]
async fn pieces_of_a_key_in_every_streamed_field_are_stored_nowhere() {
    let e = run("echo-key-pieces").await;
    let r = &e.record;
    assert_eq!(r.outcome, Outcome::Completed, "{r:?}");
    assert_eq!(r.finish_reason.as_deref(), Some("[redacted]"));
    assert_eq!(r.provider_request_id.as_deref(), Some("[redacted]"));
    assert_eq!(
        r.rate_limit_headers
            .get("x-ratelimit-remaining-requests")
            .map(String::as_str),
        Some("[redacted]")
    );
    assert_eq!(r.response_model.as_deref(), Some("m-[redacted]"));
    assert_eq!(r.reasoning_text, "the key is [redacted]");
    assert_eq!(
        r.answer_text,
        "[redacted]\nspelled [redacted]; backwards [redacted]; hex [redacted]"
    );
    let json = serde_json::to_string(&e).unwrap();
    let hex: String = KEY.bytes().map(|b| format!("{b:02x}")).collect();
    assert!(!json.contains(&hex[..12]), "{json}");
    assert_eq!(key_pieces_in(&json), Vec::<String>::new());
}

#[tokio::test]
async fn a_key_in_hex_and_base64_in_an_error_body_is_stored_nowhere() {
    use base64::Engine;
    let e = run("echo-key-encoded-error").await;
    let r = &e.record;
    assert_eq!(r.http_status, Some(401));
    // `:` before the key: the first base64 group mixes it in and is all that is kept.
    let lead = &base64::engine::general_purpose::URL_SAFE.encode(format!(":{KEY}"))[..4];
    let message = r.error_message.as_deref().unwrap();
    assert!(
        message.contains(&format!(
            "key [redacted] (upper [redacted]) or, encoded, :{lead}[redacted]"
        )),
        "{message}"
    );
    assert_eq!(key_pieces_in(message), Vec::<String>::new());
}
