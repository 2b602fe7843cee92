//! The executor against a raw HTTP/1.1 server on loopback: exact provider byte streams, exact
//! sleeps, and assertions on outcome, error type, texts, token counts and timing offsets. Each
//! case runs in every API dialect, the same events framed as that dialect's servers send them
//! (`support/wire.rs`), with the same hand-computed bounds; provider-specific shapes (Z.AI's
//! reasoning in the role chunk) keep their own dialect.
//!
//! Timing bounds hold however loaded the machine is: an offset is at least the server's sleeps
//! before the bytes that complete its event (the probe's zero precedes the request, the sleeps
//! follow it), and at most the test's own measure of the whole `execute` call. Expected token
//! counts are o200k counts written by hand (checked with an independent o200k implementation,
//! `bpe-openai`), never computed with the tokenizer under test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::record::{Classification, ErrorType, Execution, Outcome};
use openbench_common::spec::Api;
use support::wire::{MODEL, Script, Stop};
use support::*;

fn classes(e: &Execution) -> Vec<Classification> {
    e.events.iter().map(|e| e.classification).collect()
}

/// A role opening, a 300 ms gap, two answer pieces 100 ms apart, 20 ms to the finish, the usage
/// and the end, in `api`'s framing.
fn plain_stream(api: Api) -> Script {
    Script::new(api)
        .start()
        .sleep(300)
        .answer(r#"{"category": "bug","#)
        .sleep(100)
        .answer(r#" "priority": "p1"}"#)
        .sleep(20)
        .finish(Stop::End)
        .usage()
        .done()
}

/// The OpenAI chat stream of [`plain_stream`], as most tests below serve it.
fn openai_stream() -> Vec<Step> {
    plain_stream(Api::OpenaiChat).end()
}

#[tokio::test]
async fn every_dialect_completes_with_exact_timings() {
    for api in Api::ALL {
        let script = plain_stream(api);
        let (e, server, elapsed) = run_timed_in(api, script.clone().end(), 5_000).await;
        let r = &e.record;
        assert_eq!(r.outcome, Outcome::Completed, "{api}: {r:?}");
        assert_eq!(r.error_type, None);
        assert_eq!(r.http_status, Some(200));
        let answer = r#"{"category": "bug", "priority": "p1"}"#;
        assert_eq!(r.answer_text, answer, "{api}");
        assert_eq!(r.reasoning_text, "");
        // The first answer piece follows a 300 ms sleep, the second 100 ms more, the finish
        // 20 ms more; the headers come before any of them.
        assert!(within(r.ttfa_ms, 300.0, elapsed), "{api}: {:?}", r.ttfa_ms);
        assert!(
            within(r.headers_ms, 0.0, r.ttfa_ms.unwrap()),
            "{api}: {:?}",
            r.headers_ms
        );
        assert_eq!(r.ttfo_ms, r.ttfa_ms, "{api}");
        let (ttfa, e2e) = (r.ttfa_ms.unwrap(), r.e2e_ms.unwrap());
        assert!(
            within(Some(e2e), 400.0_f64.max(ttfa), elapsed),
            "{api}: {ttfa} {e2e}"
        );
        assert!(
            within(r.stream_end_ms, 420.0_f64.max(e2e), elapsed),
            "{api}: {:?}",
            r.stream_end_ms
        );
        // o200k: {" category ": " bug ", " priority ": " p 1 "} — 13 tokens.
        assert_eq!(r.answer_tokens, Some(13));
        assert_eq!(r.reasoning_tokens_before_answer, Some(0));
        assert_eq!(
            r.output_tokens_per_second,
            Some(12.0 / ((e2e - ttfa) / 1000.0))
        );
        assert_eq!(r.finish_reason.as_deref(), Some("stop"), "{api}");
        assert!(!r.truncated_by_length);
        // 31 prompt tokens (16 cached), 12 completion tokens; Anthropic reports no total.
        let usage = r.usage.clone().unwrap();
        let total = (api != Api::AnthropicMessages).then_some(43);
        assert_eq!(
            (
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.total_tokens,
                usage.cached_tokens
            ),
            (Some(31), Some(12), total, Some(16)),
            "{api}"
        );
        assert_eq!(r.response_model.as_deref(), Some(MODEL), "{api}");
        assert_eq!(r.requested_model, MODEL);
        assert_eq!(r.provider_request_id.as_deref(), Some("req-abc-123"));
        assert_eq!(
            (r.request_id.as_str(), r.round_index, r.lane.as_str()),
            ("req-1", 3, "together")
        );
        assert_eq!(classes(&e), script.classes(), "{api}");
        assert_eq!(r.event_count, script.classes().len() as u64);
        let first = script.first(Classification::Answer);
        assert_eq!(e.events[first].offset_ms, ttfa, "{api}");
        assert_eq!(e.events[first + 1].offset_ms, e2e, "{api}");

        // The request as the server received it: the dialect's path and the headers.
        let got = server.received();
        assert_eq!(got.len(), 1);
        let head = got[0].head.to_ascii_lowercase();
        let line = format!("post /v1{} http/1.1\r\n", api.path());
        assert!(head.starts_with(&line), "{api}: {head}");
        assert!(head.contains(&format!(
            "authorization: bearer {}",
            SECRET.to_ascii_lowercase()
        )));
        assert!(head.contains("accept: text/event-stream"));
        assert!(head.contains("content-type: application/json"));
        assert_eq!(
            head.contains("anthropic-version: 2023-06-01"),
            api == Api::AnthropicMessages,
            "{api}: {head}"
        );
        // Each dialect's body is pinned in probe/src/dialect/dialect_tests.rs; chat's here.
        if api != Api::OpenaiChat {
            continue;
        }
        let body: serde_json::Value = serde_json::from_slice(&got[0].body).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "model": "zai-org/GLM-5.3-Flash",
                "messages": [
                    {"role": "system", "content": "Answer in JSON."},
                    {"role": "user", "content": "Triage this ticket."}
                ],
                "stream": true, "temperature": 0.0, "top_p": 1.0,
                "presence_penalty": 0.0, "frequency_penalty": 0.0, "max_tokens": 256,
                "response_format": {"type": "json_object"}, "reasoning_effort": "low",
                "stream_options": {"include_usage": true}
            })
        );
    }
}

#[tokio::test]
async fn the_connection_is_reused_across_requests() {
    for api in Api::ALL {
        let server = start(plain_stream(api).end()).await;
        let exec = executor_in(api, &server);
        for _ in 0..3 {
            let e = exec.execute(&planned("together", 5_000)).await;
            assert_eq!(e.record.outcome, Outcome::Completed, "{api}");
        }
        assert_eq!(server.received().len(), 3);
        assert_eq!(server.connection_count(), 1, "{api}");
    }
}

/// An `http://` endpoint goes through the probe's own HTTP/1.1 transport (hyper's connection
/// polled in the request's task), not reqwest; what reaches the provider must still be, byte for
/// byte, what reqwest configured as the probe configures it sends with the same headers and
/// body: request line with the path and query, every header in the same order and case, `host`,
/// the content length and the body, in every dialect.
#[tokio::test]
async fn the_plain_transport_sends_the_bytes_reqwest_sends() {
    for api in Api::ALL {
        let server = start(plain_stream(api).end()).await;
        let mut adapter = adapter_in(api, "together", &server);
        adapter.endpoint.push_str("?api-version=2026-10-01");
        let exec =
            openbench_probe::Executor::new(adapter.clone(), contract(5_000), &creds()).unwrap();
        let e = exec.execute(&planned("together", 5_000)).await;
        assert_eq!(e.record.outcome, Outcome::Completed, "{api}");
        let ours = server.received()[0].clone();

        let client = openbench_probe::executor::provider_client()
            .build()
            .unwrap();
        let headers = openbench_probe::body::build_headers(&adapter, &creds()).unwrap();
        let mut response = client
            .post(&adapter.endpoint)
            .headers(headers)
            .body(ours.body.clone())
            .send()
            .await
            .unwrap();
        while response.chunk().await.unwrap().is_some() {}
        let theirs = server.received()[1].clone();
        assert!(
            ours.head.starts_with("POST /v1/")
                && ours.head.contains("?api-version=2026-10-01 HTTP/1.1\r\n"),
            "{api}: {}",
            ours.head
        );
        assert_eq!(ours.head, theirs.head, "{api}");
        assert_eq!(ours.body, theirs.body, "{api}");
    }
}

/// A connection idle longer than the pool's idle timeout is not reused: a server may be closing
/// it at that very moment (llama-server closes idle keep-alive connections after 5 s), and a
/// request sent on it would fail through no fault of the provider. The pause is longer than
/// the timeout, so a loaded machine only makes it longer. The pool lies below the dialect seam
/// (the same client for every dialect; reuse and resend are tested per dialect above and below),
/// so one dialect covers this 4.5 s wait.
#[tokio::test]
async fn a_connection_idle_past_the_pool_timeout_is_not_reused() {
    let server = start(openai_stream()).await;
    let exec = executor(&server);
    let first = exec.execute(&planned("together", 5_000)).await;
    assert_eq!(first.record.outcome, Outcome::Completed);
    tokio::time::sleep(
        openbench_probe::executor::POOL_IDLE_TIMEOUT + std::time::Duration::from_millis(500),
    )
    .await;
    let second = exec.execute(&planned("together", 5_000)).await;
    assert_eq!(second.record.outcome, Outcome::Completed);
    assert_eq!(server.received().len(), 2);
    assert_eq!(server.connection_count(), 2);
}

/// llama-server ends a streamed response and closes the connection ≈ 100 ms later without
/// reading what was sent meanwhile (measured: docs/methodology.md). A request sent on that
/// connection at once is lost through no fault of the provider: it goes out again on a fresh
/// connection, flagged, with the lost try on its clock.
#[tokio::test]
async fn a_request_lost_on_a_connection_the_server_is_closing_is_resent_once() {
    for api in Api::ALL {
        let steps = plain_stream(api)
            .step(Step::End)
            .sleep(200)
            .step(Step::Close);
        let server = start(steps.steps()).await;
        let exec = executor_in(api, &server);
        let first = exec.execute(&planned("together", 5_000)).await;
        assert_eq!(first.record.outcome, Outcome::Completed, "{api}");
        assert!(!first.record.resent_on_fresh_connection);
        let second = exec.execute(&planned("together", 5_000)).await;
        assert_eq!(
            second.record.outcome,
            Outcome::Completed,
            "{api}: {:?}",
            second.record.error_message
        );
        assert!(second.record.resent_on_fresh_connection, "{api}");
        // The first connection read one request; the second request was read on a second one.
        assert_eq!(server.received().len(), 2);
        assert_eq!(server.connection_count(), 2, "{api}");
        // The server's 200 ms pause before closing, less what the first request's drain
        // waited, is on the second request's clock (a busy machine only adds to it).
        assert!(
            second.record.ttfo_ms.is_some_and(|t| t >= 100.0),
            "{api}: {:?}",
            second.record.ttfo_ms
        );
        let line = serde_json::to_string(&second.record).unwrap();
        assert!(
            line.contains(r#""resent_on_fresh_connection":true"#),
            "{line}"
        );
        let line = serde_json::to_string(&first.record).unwrap();
        assert!(!line.contains("resent_on_fresh_connection"), "{line}");
    }
}

/// A connection closed before any response on a request's own new connection is the
/// provider's failure: one attempt, no resend.
#[tokio::test]
async fn a_first_request_whose_connection_closes_unanswered_is_not_resent() {
    for api in Api::ALL {
        let server = start(vec![Step::Close]).await;
        let exec = executor_in(api, &server);
        let only = exec.execute(&planned("together", 5_000)).await;
        assert_eq!(only.record.outcome, Outcome::TransportError, "{api}");
        assert!(!only.record.resent_on_fresh_connection);
        assert_eq!(server.received().len(), 1);
        assert_eq!(server.connection_count(), 1);
    }
}

#[tokio::test]
async fn every_dialect_times_reasoning_before_the_answer() {
    for api in Api::ALL {
        let script = Script::new(api)
            .start()
            .reasoning("The user")
            .sleep(50)
            .reasoning(" wants JSON.")
            .sleep(100)
            .answer(r#"{"answer":"#)
            .sleep(50)
            .answer(r#" "Tuesday"}"#)
            .finish(Stop::End)
            .usage()
            .done();
        let (e, _s, elapsed) = run_timed_in(api, script.clone().end(), 5_000).await;
        let r = &e.record;
        assert_eq!(r.outcome, Outcome::Completed, "{api}");
        assert_eq!(r.reasoning_text, "The user wants JSON.", "{api}");
        assert_eq!(r.answer_text, r#"{"answer": "Tuesday"}"#, "{api}");
        // Reasoning at once, the answer after 50 + 100 ms of sleeps, its end 50 ms later.
        let ttfa = r.ttfa_ms.unwrap();
        assert!(within(r.ttfa_ms, 150.0, elapsed), "{api}: {ttfa}");
        assert!(within(r.ttfo_ms, 0.0, ttfa), "{api}: {:?}", r.ttfo_ms);
        let first = script.first(Classification::Reasoning);
        assert_eq!(r.ttfo_ms, Some(e.events[first].offset_ms), "{api}");
        assert!(
            within(r.e2e_ms, 200.0_f64.max(ttfa), elapsed),
            "{api}: {:?}",
            r.e2e_ms
        );
        // o200k: "The| user| wants| JSON|." — 5 tokens.
        assert_eq!(r.reasoning_tokens_before_answer, Some(5), "{api}");
        assert_eq!(classes(&e), script.classes(), "{api}");
    }
}

/// Z.AI's chat shape: reasoning in the role chunk, the finish and the usage (with reasoning
/// tokens) in the last answer chunk.
#[tokio::test]
async fn zai_style_reasoning_content_then_answer() {
    let steps = vec![
        sse_head(),
        data(
            r#"{"model":"glm-5.3-flash","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"The user"}}]}"#,
        ),
        Step::Sleep(50),
        data(
            r#"{"model":"glm-5.3-flash","choices":[{"index":0,"delta":{"reasoning_content":" wants JSON."}}]}"#,
        ),
        Step::Sleep(100),
        data(
            r#"{"model":"glm-5.3-flash","choices":[{"index":0,"delta":{"content":"{\"answer\":"}}]}"#,
        ),
        Step::Sleep(50),
        data(
            r#"{"model":"glm-5.3-flash","choices":[{"index":0,"delta":{"content":" \"Tuesday\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29,"completion_tokens_details":{"reasoning_tokens":4}}}"#,
        ),
        chunk("data: [DONE]\n\n"),
        Step::End,
    ];
    let (e, _s, elapsed) = run_timed(steps, 5_000).await;
    let r = &e.record;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.reasoning_text, "The user wants JSON.");
    assert_eq!(r.answer_text, r#"{"answer": "Tuesday"}"#);
    // Reasoning at once, the answer after 50 + 100 ms of sleeps, its end 50 ms later.
    let ttfa = r.ttfa_ms.unwrap();
    assert!(within(r.ttfa_ms, 150.0, elapsed), "{ttfa}");
    assert!(within(r.ttfo_ms, 0.0, ttfa), "{:?}", r.ttfo_ms);
    assert_eq!(r.ttfo_ms, Some(e.events[0].offset_ms));
    assert!(
        within(r.e2e_ms, 200.0_f64.max(ttfa), elapsed),
        "{:?}",
        r.e2e_ms
    );
    // o200k: "The| user| wants| JSON|." — 5 tokens.
    assert_eq!(r.reasoning_tokens_before_answer, Some(5));
    assert_eq!(r.usage.as_ref().and_then(|u| u.reasoning_tokens), Some(4));
    assert_eq!(r.response_model.as_deref(), Some("glm-5.3-flash"));
    assert_eq!(
        classes(&e),
        vec![
            Classification::Reasoning,
            Classification::Reasoning,
            Classification::Answer,
            Classification::Answer,
            Classification::Done
        ]
    );
}

/// llama.cpp's framing of `script`: CRLF line endings; the opening events and the first half of
/// the answer event in one read; the answer event's `é` cut in half across reads, 40 ms apart.
fn llama_cpp_framing(script: Script) -> Vec<Step> {
    let (mut out, mut pending) = (Vec::new(), Vec::new());
    let mut cut = false;
    for step in script.end() {
        let Step::Chunk(bytes) = step else {
            out.push(step);
            continue;
        };
        let bytes = String::from_utf8(bytes).unwrap().replace('\n', "\r\n");
        let bytes = bytes.into_bytes();
        let split = bytes.windows(4).position(|w| w == b"caf\xc3");
        match split {
            Some(at) if !cut => {
                cut = true;
                pending.extend_from_slice(&bytes[..at + 3]);
                out.push(Step::Chunk(std::mem::take(&mut pending)));
                out.push(Step::Sleep(40));
                out.push(Step::Chunk(bytes[at + 3..at + 4].to_vec()));
                out.push(Step::Sleep(40));
                out.push(Step::Chunk(bytes[at + 4..].to_vec()));
            }
            _ if !cut => pending.extend_from_slice(&bytes),
            _ => out.push(Step::Chunk(bytes)),
        }
    }
    out
}

#[tokio::test]
async fn llama_cpp_style_keeps_server_timings_and_crlf_framing() {
    let timings = serde_json::json!({"prompt_n": 40, "prompt_ms": 80.5, "predicted_n": 6,
        "predicted_ms": 240.0, "predicted_per_second": 25.0});
    for api in Api::ALL {
        let script = Script::new(api)
            .start()
            .answer(r#"{"answer": "café"}"#)
            .finish(Stop::End)
            .usage()
            .timings(&timings)
            .done();
        let (e, _s, elapsed) = run_timed_in(api, llama_cpp_framing(script.clone()), 5_000).await;
        let r = &e.record;
        assert_eq!(r.outcome, Outcome::Completed, "{api}: {r:?}");
        assert_eq!(r.answer_text, "{\"answer\": \"café\"}", "{api}");
        // The answer event was completed by the read after two 40 ms pauses.
        assert!(within(r.ttfa_ms, 80.0, elapsed), "{api}: {:?}", r.ttfa_ms);
        assert_eq!(r.e2e_ms, r.ttfa_ms);
        assert_eq!(r.output_tokens_per_second, None);
        // llama.cpp's timings ride on the usage chunk (chat, completions) and on
        // `response.completed`; its Anthropic stream carries none.
        let want = (api != Api::AnthropicMessages).then(|| timings.clone());
        assert_eq!(r.server_timings, want, "{api}");
        assert_eq!(r.usage.as_ref().and_then(|u| u.completion_tokens), Some(12));
        assert_eq!(classes(&e), script.classes(), "{api}");
    }
}

#[tokio::test]
async fn deadline_is_absolute_despite_keep_alive_drip() {
    for api in Api::ALL {
        // A comment every 50 ms for 2 s: a deadline that restarted on each read would let the
        // whole drip through and end no earlier than 2 s.
        let mut script = Script::new(api).start().answer(r#"{"partial":"#);
        for _ in 0..40 {
            script = script.sleep(50).step(chunk(": keep-alive\n\n"));
        }
        let (e, _s) = run_in(api, script.end(), 400).await;
        let r = &e.record;
        assert_eq!(
            (r.outcome, r.error_type),
            (Outcome::Timeout, Some(ErrorType::Timeout)),
            "{api}"
        );
        assert!(
            within(r.stream_end_ms, 400.0, 2_000.0),
            "{api}: {:?}",
            r.stream_end_ms
        );
        assert_eq!(r.answer_text, "{\"partial\":", "{api}");
        assert_eq!(r.e2e_ms, None);
        assert_eq!(r.http_status, Some(200));
        let comments = e
            .events
            .iter()
            .filter(|e| e.classification == Classification::Comment)
            .count();
        // At most 8 comments are written within 400 ms of the request (one per ≥ 50 ms sleep).
        assert!(comments <= 8, "{api}: {comments} comments");
        assert!(
            r.error_message
                .as_deref()
                .unwrap_or("")
                .contains("400 ms deadline"),
            "{api}"
        );
    }
}

#[tokio::test]
async fn headers_that_never_come_time_out() {
    for api in Api::ALL {
        let (e, _s) = run_in(api, vec![Step::Sleep(3_000)], 300).await;
        let r = &e.record;
        assert_eq!(
            (r.outcome, r.error_type),
            (Outcome::Timeout, Some(ErrorType::Timeout)),
            "{api}"
        );
        assert_eq!(r.http_status, None);
        assert_eq!(r.headers_ms, None);
        // Not before the deadline, and not at the server's 3 s either.
        assert!(
            within(r.stream_end_ms, 300.0, 3_000.0),
            "{api}: {:?}",
            r.stream_end_ms
        );
        assert_eq!(
            r.error_message.as_deref(),
            Some("no response headers within the 300 ms deadline")
        );
    }
}

/// A server that answers each connection with `head` (status line and headers), a
/// `content-length` and `body` in one write, then closes it.
async fn whole_response_then_close(head: &str, body: &str) -> RawServer {
    let whole = format!("{head}\r\ncontent-length: {}\r\n\r\n{body}", body.len());
    start(vec![Step::Raw(whole.into_bytes()), Step::Close]).await
}

/// A server that writes its whole response in one write and closes the connection at once
/// (`connection: close`): the connection ends in the same poll that reads the head (it did on
/// every run here), and the response must still be read whole: an error answer keeps its status
/// and body, a complete stream completes; neither connection is kept. (That the ended connection
/// is not polled again is not observable here: hyper 1.12 answers a second poll harmlessly.)
#[tokio::test]
async fn a_whole_response_in_one_write_then_a_close_is_read_whole() {
    let body = r#"{"error":{"message":"Rate limit reached","type":"rate_limit"}}"#;
    let head = "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\
                connection: close";
    let server = whole_response_then_close(head, body).await;
    let exec = executor(&server);
    for _ in 0..2 {
        let e = exec.execute(&planned("together", 5_000)).await;
        assert_eq!(e.record.outcome, Outcome::HttpError);
        assert_eq!(e.record.http_status, Some(429));
        assert_eq!(e.record.error_message, Some(format!("HTTP 429: {body}")));
    }
    assert_eq!(server.connection_count(), 2);

    let events: String = openai_stream()
        .iter()
        .filter_map(|step| match step {
            Step::Chunk(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        })
        .collect();
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close";
    let server = whole_response_then_close(head, &events).await;
    let exec = executor(&server);
    for _ in 0..2 {
        let e = exec.execute(&planned("together", 5_000)).await;
        assert_eq!(e.record.outcome, Outcome::Completed, "{:?}", e.record);
        assert!(e.record.answer_tokens.unwrap_or(0) > 0, "{:?}", e.record);
    }
    assert_eq!(server.connection_count(), 2);
}
