//! The executor against a raw HTTP/1.1 server on loopback, when the provider fails: HTTP errors
//! with their headers and body snippets, redirects, invalid and truncated streams, errors inside
//! a stream, refused connections and echoed secrets. Same method and timing bounds as
//! `loopback.rs`. Every case runs in every API dialect, its stream in that dialect's own framing
//! (`support/wire.rs`); the failure classes differ only where a dialect's error names its own
//! class (Anthropic's and Responses' typed errors).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::record::{ErrorType, Outcome};
use openbench_common::spec::Api;
use openbench_probe::Executor;
use support::wire::{Script, Stop, error_ending};
use support::*;

fn error_reply(status: &str, headers: &[(&str, &str)], body: &str) -> Vec<Step> {
    vec![head(status, headers), chunk(body), Step::End]
}

#[tokio::test]
async fn http_429_captures_retry_after_and_rate_limit_headers() {
    for api in Api::ALL {
        http_429_in(api).await;
    }
}

async fn http_429_in(api: Api) {
    let steps = error_reply(
        "429 Too Many Requests",
        &[
            ("Content-Type", "application/json"),
            ("Retry-After", "7"),
            ("X-RateLimit-Remaining-Requests", "0"),
            ("x-request-id", "rq-429"),
        ],
        r#"{"error":{"message":"Rate limit reached","type":"rate_limit"}}"#,
    );
    let (e, _s) = run_in(api, steps, 5_000).await;
    let r = &e.record;
    assert_eq!(
        (r.outcome, r.error_type),
        (Outcome::HttpError, Some(ErrorType::Http429)),
        "{api}"
    );
    assert_eq!(r.http_status, Some(429));
    assert_eq!(
        r.rate_limit_headers.get("retry-after").map(String::as_str),
        Some("7")
    );
    assert_eq!(
        r.rate_limit_headers
            .get("x-ratelimit-remaining-requests")
            .map(String::as_str),
        Some("0")
    );
    assert_eq!(r.provider_request_id.as_deref(), Some("rq-429"));
    assert_eq!(
        r.error_message.as_deref(),
        Some(r#"HTTP 429: {"error":{"message":"Rate limit reached","type":"rate_limit"}}"#)
    );
    assert_eq!((r.ttfa_ms, r.e2e_ms, r.answer_tokens), (None, None, None));
}

#[tokio::test]
async fn http_500_and_400_keep_a_body_snippet() {
    for api in Api::ALL {
        http_500_and_400_in(api).await;
    }
}

async fn http_500_and_400_in(api: Api) {
    let (e, _s) = run_in(
        api,
        error_reply("500 Internal Server Error", &[], "upstream exploded"),
        5_000,
    )
    .await;
    assert_eq!(
        (
            e.record.outcome,
            e.record.error_type,
            e.record.error_message.as_deref()
        ),
        (
            Outcome::HttpError,
            Some(ErrorType::Http5xx),
            Some("HTTP 500: upstream exploded")
        )
    );
    let body = format!(
        r#"{{"error":{{"message":"invalid request: {}","code":"bad"}}}}"#,
        "x".repeat(2000)
    );
    let (e, _s) = run_in(api, error_reply("400 Bad Request", &[], &body), 5_000).await;
    let r = &e.record;
    assert_eq!(
        (r.outcome, r.error_type),
        (Outcome::HttpError, Some(ErrorType::OtherHttp4xx))
    );
    let message = r.error_message.clone().unwrap();
    assert!(message.starts_with(r#"HTTP 400: {"error":{"message":"invalid request: xxx"#));
    // "HTTP 400: " + 512 characters + "…".
    assert_eq!(message.chars().count(), 10 + 512 + 1);
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    for api in Api::ALL {
        let steps = error_reply(
            "302 Found",
            &[("Location", "http://127.0.0.1:9/elsewhere")],
            "",
        );
        let (e, server) = run_in(api, steps, 5_000).await;
        let r = &e.record;
        assert_eq!(
            (r.outcome, r.error_type),
            (Outcome::HttpError, Some(ErrorType::OtherHttpStatus)),
            "{api}"
        );
        assert_eq!(
            r.error_message.as_deref(),
            Some("HTTP 302 (redirects are not followed)")
        );
        assert_eq!(server.received().len(), 1);
    }
}

/// The `event:` name a dialect's answer text comes in (none for chat and completions).
fn answer_event(api: Api) -> &'static str {
    match api {
        Api::AnthropicMessages => "event: content_block_delta\n",
        Api::OpenaiResponses => "event: response.output_text.delta\n",
        Api::OpenaiChat | Api::OpenaiCompletions => "",
    }
}

#[tokio::test]
async fn non_json_data_is_invalid_sse() {
    for api in Api::ALL {
        let steps = Script::new(api)
            .start()
            .answer("ok")
            .step(chunk(&format!(
                "{}data: this is not json\n\n",
                answer_event(api)
            )))
            .answer("never seen")
            .end();
        let (e, _s) = run_in(api, steps, 5_000).await;
        let r = &e.record;
        assert_eq!(
            (r.outcome, r.error_type),
            (Outcome::TransportError, Some(ErrorType::InvalidSse)),
            "{api}"
        );
        assert_eq!(r.answer_text, "ok", "{api}");
        assert!(
            r.error_message
                .as_deref()
                .unwrap_or("")
                .contains("this is not json"),
            "{api}"
        );
    }
}

#[tokio::test]
async fn a_stream_without_done_or_finish_is_truncated() {
    for api in Api::ALL {
        let steps = Script::new(api).start().answer("{\"cut").end();
        let (e, _s) = run_in(api, steps, 5_000).await;
        let r = &e.record;
        assert_eq!(
            (r.outcome, r.error_type),
            (Outcome::TransportError, Some(ErrorType::TruncatedStream)),
            "{api}"
        );
        assert_eq!(r.answer_text, "{\"cut");
        assert_eq!(r.e2e_ms, None);
        // A connection dropped mid-body is a transport error too.
        let steps = Script::new(api)
            .start()
            .answer("x")
            .step(Step::Close)
            .steps();
        let (e, _s) = run_in(api, steps, 5_000).await;
        assert_eq!(e.record.outcome, Outcome::TransportError, "{api}");
        assert_eq!(e.record.error_type, Some(ErrorType::Transport), "{api}");
    }
}

/// A length stop without the stream's end marker completes, flagged. (In Responses the stop
/// *is* the terminal event, `response.incomplete`.)
#[tokio::test]
async fn finish_reason_without_done_completes_and_length_is_flagged() {
    for api in Api::ALL {
        let steps = Script::new(api)
            .start()
            .answer("{\"a\": 1")
            .sleep(30)
            .answer(", \"b\"")
            .finish(Stop::Length)
            .end();
        let (e, _s) = run_in(api, steps, 5_000).await;
        let r = &e.record;
        assert_eq!(
            r.outcome,
            Outcome::Completed,
            "{api}: {:?}",
            r.error_message
        );
        assert!(r.truncated_by_length, "{api}");
        assert_eq!(r.finish_reason.as_deref(), Some("length"), "{api}");
        // o200k: {"|a|":| |1|,| "|b|" — 9 tokens; the rate spans from the first piece to the
        // last. The server writes them 30 ms apart, but how far apart they arrive depends on
        // when this client reads them (a busy machine can delay the first read), so the span
        // is checked against the events' own arrival offsets.
        assert_eq!(r.answer_tokens, Some(9));
        let (ttfa, e2e) = (r.ttfa_ms.unwrap(), r.e2e_ms.unwrap());
        let pieces: Vec<f64> = e
            .events
            .iter()
            .filter(|event| !event.answer.is_empty())
            .map(|event| event.offset_ms)
            .collect();
        assert_eq!(pieces.len(), 2, "{api}: {pieces:?}");
        assert_eq!(ttfa, pieces[0]);
        assert_eq!(e2e, pieces[1], "{api}");
        assert!(pieces[1] > pieces[0], "{api}: {pieces:?}");
        assert_eq!(
            r.output_tokens_per_second,
            Some(8.0 / ((e2e - ttfa) / 1000.0))
        );
    }
}

/// A provider error inside the stream ends it as a `stream_error` of the dialect's class, with
/// the text so far kept, and nothing after it read.
#[tokio::test]
async fn mid_stream_errors_are_stream_errors_in_every_dialect() {
    for api in Api::ALL {
        let steps = Script::new(api)
            .start()
            .answer("{\"a\"")
            .error("model overloaded")
            .done()
            .end();
        let (e, _s) = run_in(api, steps, 5_000).await;
        let r = &e.record;
        let (error_type, label) = error_ending(api);
        assert_eq!(
            (r.outcome, r.error_type),
            (Outcome::StreamError, Some(error_type)),
            "{api}"
        );
        let message = format!("{label}model overloaded");
        assert_eq!(r.error_message.as_deref(), Some(message.as_str()), "{api}");
        assert_eq!(r.answer_text, "{\"a\"");
        assert_eq!(r.e2e_ms, None);
    }
}

/// Shapes of an error only the OpenAI-style streams (chat and legacy completions) send: a bare
/// `event: error` whose payload is not the dialect's error object, and vLLM's
/// `{"object": "error"}` chunk. Anthropic's and Responses' errors are typed events, covered
/// above.
#[tokio::test]
async fn openai_style_error_events_are_stream_errors() {
    for api in [Api::OpenaiChat, Api::OpenaiCompletions] {
        let steps = Script::new(api)
            .answer("x")
            .step(chunk(
                "event: error\ndata: {\"message\":\"internal failure\"}\n\n",
            ))
            .end();
        let (e, _s) = run_in(api, steps, 5_000).await;
        let r = &e.record;
        assert_eq!(r.outcome, Outcome::StreamError, "{api}");
        assert_eq!(
            r.error_message.as_deref(),
            Some("event: error: internal failure")
        );
        assert_eq!(e.events.last().unwrap().event.as_deref(), Some("error"));

        let steps = vec![
            sse_head(),
            data(r#"{"object":"error","message":"bad gateway upstream","code":502}"#),
            Step::End,
        ];
        let (e, _s) = run_in(api, steps, 5_000).await;
        assert_eq!(e.record.outcome, Outcome::StreamError, "{api}");
    }
}

#[tokio::test]
async fn connect_refused_is_a_connect_error() {
    for api in Api::ALL {
        connect_refused_in(api).await;
    }
}

async fn connect_refused_in(api: Api) {
    // A socket bound but not listening holds the port for this test: connections are refused
    // (no other process can take the port meanwhile).
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = socket.local_addr().unwrap();
    let endpoint = api.post_url(&format!("http://{addr}/v1?key={SECRET}"));
    let adapter = openbench_common::spec::ProviderAdapter {
        api,
        ..adapter("together", &endpoint)
    };
    let exec = Executor::new(adapter, contract(20_000), &creds()).unwrap();
    let e = exec.execute(&planned("together", 2_000)).await;
    let r = &e.record;
    assert_eq!(
        (r.outcome, r.error_type),
        (Outcome::TransportError, Some(ErrorType::Connect))
    );
    let message = r.error_message.clone().unwrap();
    assert!(
        !message.contains(SECRET) && !message.contains("key="),
        "{message}"
    );
    // Refused at once: the 2 s deadline was not waited for.
    assert!(
        within(r.stream_end_ms, 0.0, 2_000.0),
        "{:?}",
        r.stream_end_ms
    );
    drop(socket);
}

#[tokio::test]
async fn secrets_echoed_by_a_provider_are_redacted_everywhere() {
    for api in Api::ALL {
        secrets_echoed_in(api).await;
    }
}

async fn secrets_echoed_in(api: Api) {
    let echo = format!(r#"{{"error":{{"message":"invalid key {SECRET}"}}}}"#);
    let (e, _s) = run_in(
        api,
        error_reply("401 Unauthorized", &[("x-request-id", SECRET)], &echo),
        5_000,
    )
    .await;
    let json = serde_json::to_string(&e).unwrap();
    assert!(!json.contains(SECRET), "{json}");
    assert_eq!(
        e.record.error_message.as_deref(),
        Some(r#"HTTP 401: {"error":{"message":"invalid key [redacted]"}}"#)
    );
    assert_eq!(e.record.provider_request_id.as_deref(), Some("[redacted]"));

    let steps = Script::new(api)
        .start()
        .answer(&format!("key is {SECRET}"))
        .finish(Stop::End)
        .end();
    let (e, _s) = run_in(api, steps, 5_000).await;
    let json = serde_json::to_string(&e).unwrap();
    assert!(!json.contains(SECRET), "{json}");
    assert_eq!(e.record.answer_text, "key is [redacted]", "{api}");
}
