#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Every entry of the simulator's fault/quirk catalogue, driven through the real probe executor
//! over loopback, with the expected record written out by hand per entry.
//!
//! Baseline: the `plain` profile at time scale 1 answers the unknown prompt with
//! `{"answer":"simulated café"}` (27 characters) in seven 4-character pieces
//! (`{"an`, `swer`, `":"s`, `imul`, `ated`, ` caf`, `é"}`): headers at 10 ms, the first piece
//! at 40 ms, one piece every 5 ms (last at 70 ms), then a `stop` finish chunk and `[DONE]`.

mod sim_support;

use openbench_common::limits::StreamLimits;
use openbench_common::record::{Classification, ErrorType, Execution, Outcome};
use openbench_common::request::{self, ChatMessage};
use openbench_common::spec::Api;
use openbench_simulator::CATALOGUE;
use sim_support::SimCall;

use Classification::{Answer, Comment, Done, Error, Finish, Reasoning, Role, Usage};

const MODEL: &str = "zai-org/GLM-5.3-Flash";
const ANSWER: &str = r#"{"answer":"simulated café"}"#;
const REASONING: &str = "The user wants a JSON object. I will answer briefly.";
/// Seven answer events, a finish and `[DONE]`.
const BASELINE: [Classification; 9] = [
    Answer, Answer, Answer, Answer, Answer, Answer, Answer, Finish, Done,
];

/// One request through the probe: `quirks` in `x-sim-quirk` (unless empty), `model` as the
/// requested model id (a `+quirk` suffix selects quirks too). Every offset of the record is
/// checked against the test's own measure of the `execute` call (the probe's clock starts
/// after the test's and stops before it): a bound no load can break.
async fn run(
    profile: &str,
    time_scale: f64,
    model: &str,
    quirks: &str,
    deadline_ms: u64,
) -> Execution {
    let call = SimCall {
        api: Api::OpenaiChat,
        run_id: "run-catalogue",
        profile,
        time_scale,
        model,
        quirks,
        deadline_ms,
        bearer: None,
        limits: StreamLimits::default(),
        // 15 + 19 = 34 characters: the simulator reports ceil(34 / 4) = 9 prompt tokens.
        messages: vec![
            ChatMessage::text(request::Role::System, "Answer in JSON.".into()),
            ChatMessage::text(request::Role::User, "What is the answer?".into()),
        ],
    };
    let before = std::time::Instant::now();
    let execution = sim_support::execute(call).await;
    let elapsed_ms = before.elapsed().as_nanos() as f64 / 1e6;
    let r = &execution.record;
    let offsets = [
        r.headers_ms,
        r.ttfo_ms,
        r.ttfa_ms,
        r.e2e_ms,
        r.stream_end_ms,
    ]
    .into_iter()
    .flatten()
    .chain(execution.events.iter().map(|ev| ev.offset_ms));
    for offset in offsets {
        assert!(
            (0.0..=elapsed_ms).contains(&offset),
            "offset {offset} ms outside the {elapsed_ms} ms call: {r:?}"
        );
    }
    execution
}

async fn quirk(quirks: &str) -> Execution {
    run("plain", 1.0, MODEL, quirks, 5_000).await
}

fn classes(e: &Execution) -> Vec<Classification> {
    e.events.iter().map(|ev| ev.classification).collect()
}

/// o200k token counts of the answers the catalogue streams, written by hand (checked with an
/// independent o200k implementation, `bpe-openai`): `{"|answer|":"|sim|ulated| café|"}`.
fn o200k_tokens(answer: &str) -> u64 {
    match answer {
        ANSWER => 7,
        a if a == format!("\n{ANSWER}") => 8,
        other => panic!("no hand count for {other:?}"),
    }
}

/// A completed plain stream: answer, model, a TTFA of at least 40 ms and an E2E of at least
/// 70 ms (the server never writes early; [`run`] bounds every offset from above), and the
/// tokens/s of the answer's hand-counted tokens.
fn assert_completed(e: &Execution, answer: &str) {
    let r = &e.record;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error_message);
    assert_eq!(r.error_type, None);
    assert_eq!(r.http_status, Some(200));
    assert_eq!(r.answer_text, answer);
    assert!(
        r.provider_request_id
            .as_deref()
            .unwrap()
            .starts_with("sim-")
    );
    let ttfa = r.ttfa_ms.unwrap();
    let e2e = r.e2e_ms.unwrap();
    assert!(r.headers_ms.unwrap() >= 10.0, "{:?}", r.headers_ms);
    assert!(ttfa >= 40.0, "ttfa {ttfa}");
    assert!(e2e >= 70.0 && e2e >= ttfa, "e2e {e2e}");
    let n = o200k_tokens(answer);
    assert_eq!(r.answer_tokens, Some(n));
    assert_eq!(
        r.output_tokens_per_second,
        Some((n - 1) as f64 / ((e2e - ttfa) / 1000.0))
    );
}

/// A failure of the stream after two answer pieces: TTFA kept, no E2E, no speed.
fn assert_failed_mid_stream(e: &Execution, outcome: Outcome, error_type: ErrorType) {
    let r = &e.record;
    assert_eq!(r.outcome, outcome, "{:?}", r.error_message);
    assert_eq!(r.error_type, Some(error_type));
    assert_eq!(r.http_status, Some(200));
    assert_eq!(r.answer_text, r#"{"answer"#);
    assert!(r.ttfa_ms.unwrap() >= 40.0);
    assert_eq!(r.e2e_ms, None);
    assert_eq!(r.output_tokens_per_second, None);
}

/// An HTTP error: no events, no timings past the headers.
fn assert_http(e: &Execution, status: u16, error_type: ErrorType, message: &str) {
    let r = &e.record;
    assert_eq!(r.outcome, Outcome::HttpError);
    assert_eq!(r.error_type, Some(error_type));
    assert_eq!(r.http_status, Some(status));
    assert!(
        r.error_message.as_deref().unwrap().contains(message),
        "{:?}",
        r.error_message
    );
    assert!(r.headers_ms.unwrap() >= 10.0);
    assert!(e.events.is_empty());
    assert_eq!((r.ttfo_ms, r.ttfa_ms, r.e2e_ms), (None, None, None));
    assert!(r.answer_text.is_empty());
}

#[tokio::test]
async fn every_catalogue_entry_has_a_test_here() {
    // Hand-kept list of the entries this file covers; a new catalogue entry fails this test
    // until it gets its own expectations.
    let covered = [
        "role-first",
        "reasoning-in-reasoning-content",
        "reasoning-in-reasoning",
        "reasoning-in-details",
        "reasoning-content-null",
        "reasoning-content-empty",
        "whitespace-first-delta",
        "batched-events",
        "one-byte-writes",
        "utf8-split",
        "crlf",
        "multiline-data",
        "keep-alive",
        "usage-chunk",
        "no-done",
        "truncated",
        "error-object",
        "object-error",
        "event-error",
        "non-json-data",
        // The dialect quirks: tests/dialects_loopback.rs.
        "overloaded-error",
        "response-failed",
        // The tool-call quirks: tests/tool_calls_loopback.rs.
        "malformed-tool-call",
        "truncated-tool-call",
        // The agent quirk: tests/load_agents.rs.
        "agent-wrong-tool",
        "ping",
        "http-429",
        "http-500",
        "http-400",
        "no-headers",
        "keep-alive-drip",
        "wrong-model",
        "finish-length",
        "empty-answer",
        // The hostile entries: tests/simulator_hostile.rs.
        "endless-line",
        "endless-data-lines",
        "comment-flood",
        "huge-event",
        "endless-error-body",
        "invalid-utf8",
        "echo-key-split",
        "echo-key-base64",
        "echo-key-error",
        "echo-key-pieces",
        "echo-key-encoded-error",
    ];
    let listed: Vec<&str> = CATALOGUE.iter().map(|(_, name, _)| *name).collect();
    assert_eq!(listed, covered);
}

#[tokio::test]
async fn baseline_plain() {
    let e = quirk("").await;
    assert_completed(&e, ANSWER);
    assert_eq!(classes(&e), BASELINE);
    assert_eq!(e.record.response_model.as_deref(), Some(MODEL));
    assert_eq!(e.record.finish_reason.as_deref(), Some("stop"));
    assert_eq!(e.record.ttfo_ms, e.record.ttfa_ms);
    assert!(e.record.reasoning_text.is_empty());
}

#[tokio::test]
async fn role_first() {
    let e = quirk("role-first").await;
    assert_completed(&e, ANSWER);
    let mut want = vec![Role];
    want.extend(BASELINE);
    assert_eq!(classes(&e), want);
    assert_eq!(
        e.record.ttfo_ms, e.record.ttfa_ms,
        "a role chunk is not output"
    );
}

/// 52 characters of reasoning in thirteen 4-character pieces, then the baseline.
fn assert_reasoning(e: &Execution) {
    assert_completed(e, ANSWER);
    let mut want = vec![Reasoning; 13];
    want.extend(BASELINE);
    assert_eq!(classes(e), want);
    assert_eq!(e.record.reasoning_text, REASONING);
    assert!(e.record.ttfo_ms.unwrap() < e.record.ttfa_ms.unwrap());
    assert!(e.record.reasoning_tokens_before_answer.unwrap() >= 10);
}

#[tokio::test]
async fn reasoning_in_reasoning_content() {
    assert_reasoning(&quirk("reasoning-in-reasoning-content").await);
}

#[tokio::test]
async fn reasoning_in_reasoning() {
    assert_reasoning(&quirk("reasoning-in-reasoning").await);
}

#[tokio::test]
async fn reasoning_in_details() {
    assert_reasoning(&quirk("reasoning-in-details").await);
}

#[tokio::test]
async fn reasoning_content_null() {
    assert_reasoning(&quirk("reasoning-in-reasoning-content,reasoning-content-null").await);
}

#[tokio::test]
async fn reasoning_content_empty() {
    assert_reasoning(&quirk("reasoning-in-reasoning,reasoning-content-empty").await);
}

#[tokio::test]
async fn whitespace_first_delta() {
    let e = quirk("whitespace-first-delta").await;
    // "\n" is non-empty answer text: it is the TTFA event (40 ms); the last piece comes at 75 ms.
    assert_completed(&e, &format!("\n{ANSWER}"));
    let mut want = vec![Answer];
    want.extend(BASELINE);
    assert_eq!(classes(&e), want);
    assert_eq!(e.events[0].answer, "\n");
    assert_eq!(e.record.ttfa_ms, Some(e.events[0].offset_ms));
    assert!(e.record.e2e_ms.unwrap() >= 75.0);
}

#[tokio::test]
async fn batched_events() {
    let e = quirk("batched-events").await;
    assert_completed(&e, ANSWER);
    assert_eq!(classes(&e), BASELINE);
    // Three writes: pieces 1-4, pieces 5-7 + finish, [DONE].
    let at: Vec<f64> = e.events.iter().map(|ev| ev.offset_ms).collect();
    assert!(at[0..4].iter().all(|t| *t == at[0]), "{at:?}");
    assert!(at[4..8].iter().all(|t| *t == at[4]), "{at:?}");
    // The first write waits for its last piece (55 ms).
    assert!(at[0] >= 55.0, "{at:?}");
}

#[tokio::test]
async fn one_byte_writes() {
    let e = quirk("one-byte-writes").await;
    assert_completed(&e, ANSWER);
    assert_eq!(classes(&e), BASELINE);
    // The first answer event is over 150 bytes, written one byte per write at least 1 ms apart.
    let ttfa = e.record.ttfa_ms.unwrap();
    assert!(ttfa >= 40.0 + 150.0, "ttfa {ttfa}");
}

#[tokio::test]
async fn utf8_split() {
    let e = quirk("utf8-split").await;
    assert_completed(&e, ANSWER);
    assert_eq!(classes(&e), BASELINE);
    assert_eq!(e.events[6].answer, "é\"}");
}

#[tokio::test]
async fn crlf_by_model_suffix() {
    let e = run("plain", 1.0, &format!("{MODEL}+crlf"), "", 5_000).await;
    assert_completed(&e, ANSWER);
    assert_eq!(classes(&e), BASELINE);
    assert_eq!(e.record.requested_model, format!("{MODEL}+crlf"));
    assert_eq!(
        e.record.response_model.as_deref(),
        Some(MODEL),
        "the suffix is not echoed"
    );
}

#[tokio::test]
async fn multiline_data() {
    let e = quirk("multiline-data").await;
    assert_completed(&e, ANSWER);
    assert_eq!(classes(&e), BASELINE);
}

#[tokio::test]
async fn keep_alive() {
    let e = quirk("keep-alive").await;
    assert_completed(&e, ANSWER);
    let want: Vec<Classification> = BASELINE.iter().flat_map(|c| [Comment, *c]).collect();
    assert_eq!(classes(&e), want);
    assert_eq!(
        e.record.ttfa_ms,
        Some(e.events[1].offset_ms),
        "comments never count"
    );
}

#[tokio::test]
async fn usage_chunk() {
    let e = quirk("usage-chunk").await;
    assert_completed(&e, ANSWER);
    assert_eq!(
        classes(&e),
        [
            Answer, Answer, Answer, Answer, Answer, Answer, Answer, Finish, Usage, Done
        ]
    );
    let usage = e.record.usage.clone().unwrap();
    assert_eq!(usage.prompt_tokens, Some(9));
    assert_eq!(usage.completion_tokens, Some(7));
    assert_eq!(usage.total_tokens, Some(16));
}

#[tokio::test]
async fn no_done() {
    let e = quirk("no-done").await;
    assert_completed(&e, ANSWER);
    assert_eq!(classes(&e), BASELINE[..8]);
    assert_eq!(e.record.finish_reason.as_deref(), Some("stop"));
}

#[tokio::test]
async fn truncated() {
    let e = quirk("truncated").await;
    assert_failed_mid_stream(&e, Outcome::TransportError, ErrorType::TruncatedStream);
    assert_eq!(classes(&e), [Answer, Answer]);
    assert_eq!(e.record.finish_reason, None);
}

#[tokio::test]
async fn error_object() {
    let e = quirk("error-object").await;
    assert_failed_mid_stream(&e, Outcome::StreamError, ErrorType::StreamError);
    assert_eq!(classes(&e), [Answer, Answer, Error]);
    assert!(
        e.record
            .error_message
            .as_deref()
            .unwrap()
            .contains("upstream model failure (simulated)")
    );
}

#[tokio::test]
async fn object_error() {
    let e = quirk("object-error").await;
    assert_failed_mid_stream(&e, Outcome::StreamError, ErrorType::StreamError);
    assert_eq!(classes(&e), [Answer, Answer, Error]);
}

#[tokio::test]
async fn event_error() {
    let e = quirk("event-error").await;
    assert_failed_mid_stream(&e, Outcome::StreamError, ErrorType::StreamError);
    assert_eq!(classes(&e), [Answer, Answer, Error]);
    assert_eq!(e.events[2].event.as_deref(), Some("error"));
}

#[tokio::test]
async fn non_json_data() {
    let e = quirk("non-json-data").await;
    assert_failed_mid_stream(&e, Outcome::TransportError, ErrorType::InvalidSse);
    assert_eq!(classes(&e), [Answer, Answer]);
    assert!(
        e.record
            .error_message
            .as_deref()
            .unwrap()
            .contains("upstream connect error")
    );
}

#[tokio::test]
async fn http_429() {
    let e = quirk("http-429").await;
    assert_http(
        &e,
        429,
        ErrorType::Http429,
        "Rate limit reached (simulated)",
    );
    let headers = &e.record.rate_limit_headers;
    assert_eq!(headers.get("retry-after").map(String::as_str), Some("2"));
    assert_eq!(
        headers
            .get("x-ratelimit-remaining-requests")
            .map(String::as_str),
        Some("0")
    );
}

#[tokio::test]
async fn http_500() {
    let e = quirk("http-500").await;
    assert_http(
        &e,
        500,
        ErrorType::Http5xx,
        "Internal server error (simulated)",
    );
}

#[tokio::test]
async fn http_400() {
    let e = quirk("http-400").await;
    assert_http(
        &e,
        400,
        ErrorType::OtherHttp4xx,
        "Invalid request (simulated)",
    );
}

#[tokio::test]
async fn no_headers() {
    let e = run("plain", 1.0, MODEL, "no-headers", 300).await;
    let r = &e.record;
    assert_eq!(r.outcome, Outcome::Timeout);
    assert_eq!(r.error_type, Some(ErrorType::Timeout));
    assert_eq!((r.http_status, r.headers_ms), (None, None));
    assert!(e.events.is_empty());
    // Not before the deadline ([`run`] bounds it from above).
    let end = r.stream_end_ms.unwrap();
    assert!(end >= 300.0, "end {end}");
}

#[tokio::test]
async fn keep_alive_drip() {
    // Time scale 0.1: a comment every 50 ms, for 6 s; the 400 ms deadline wins.
    let e = run("plain", 0.1, MODEL, "keep-alive-drip", 400).await;
    let r = &e.record;
    assert_eq!(r.outcome, Outcome::Timeout);
    assert_eq!(r.error_type, Some(ErrorType::Timeout));
    assert_eq!(r.http_status, Some(200));
    // At most 8 comments fit in 400 ms (one per ≥ 50 ms); a deadline that restarted on each
    // read would let the drip run its 6 s.
    assert!(e.events.len() <= 8, "{} comments", e.events.len());
    assert!(classes(&e).iter().all(|c| *c == Comment));
    assert_eq!((r.ttfo_ms, r.ttfa_ms, r.e2e_ms), (None, None, None));
    let end = r.stream_end_ms.unwrap();
    assert!((400.0..6_000.0).contains(&end), "end {end}");
}

#[tokio::test]
async fn wrong_model_by_model_suffix() {
    let e = run("plain", 1.0, &format!("{MODEL}+wrong-model"), "", 5_000).await;
    assert_completed(&e, ANSWER);
    assert_eq!(
        e.record.response_model.as_deref(),
        Some("zai-org/GLM-5.3-Flash-fp8")
    );
}

#[tokio::test]
async fn finish_length() {
    let e = quirk("finish-length").await;
    // Half of 27 characters: 13, in pieces of 4, 4, 4 and 1.
    let r = &e.record;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.answer_text, r#"{"answer":"si"#);
    assert_eq!(classes(&e), [Answer, Answer, Answer, Answer, Finish, Done]);
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
    assert!(r.truncated_by_length);
    assert!(r.e2e_ms.unwrap() >= 55.0);
}

#[tokio::test]
async fn empty_answer() {
    let e = quirk("empty-answer").await;
    let r = &e.record;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(classes(&e), [Finish, Done]);
    assert_eq!(r.answer_text, "");
    assert_eq!((r.ttfo_ms, r.ttfa_ms, r.e2e_ms), (None, None, None));
    assert_eq!(r.answer_tokens, Some(0));
    assert_eq!(r.output_tokens_per_second, None);
}

#[tokio::test]
async fn zai_profile_reasoning_with_null_content() {
    // A real profile at 1/20 speed: reasoning in reasoning_content (content null), then the answer.
    let e = run("zai", 0.05, MODEL, "", 5_000).await;
    let r = &e.record;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error_message);
    assert_eq!(r.answer_text, ANSWER);
    assert!(
        r.reasoning_text.starts_with(REASONING),
        "{}",
        r.reasoning_text
    );
    let first_answer = e
        .events
        .iter()
        .position(|ev| ev.classification == Answer)
        .unwrap();
    assert!(
        first_answer > 0
            && e.events[..first_answer]
                .iter()
                .all(|ev| ev.classification == Reasoning)
    );
}
