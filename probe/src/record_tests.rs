use super::*;
use crate::classify::classify_event;

#[test]
fn tokens_per_second_by_hand() {
    // 11 tokens over 2.5 s after the first: 10 / 2.5 = 4.
    assert_eq!(tokens_per_second(11, 500.0, 3000.0), Some(4.0));
    // 2 tokens 250 ms apart: 1 / 0.25 = 4.
    assert_eq!(tokens_per_second(2, 100.0, 350.0), Some(4.0));
    // 101 tokens in 1.6 s: 100 / 1.6 = 62.5.
    assert_eq!(tokens_per_second(101, 1000.0, 2600.0), Some(62.5));
    assert_eq!(tokens_per_second(1, 100.0, 350.0), None);
    assert_eq!(tokens_per_second(5, 350.0, 350.0), None);
    assert_eq!(tokens_per_second(5, 400.0, 350.0), None);
}

#[test]
fn status_mapping() {
    assert_eq!(status_error_type(429), ErrorType::Http429);
    assert_eq!(status_error_type(400), ErrorType::OtherHttp4xx);
    assert_eq!(status_error_type(404), ErrorType::OtherHttp4xx);
    assert_eq!(status_error_type(500), ErrorType::Http5xx);
    assert_eq!(status_error_type(503), ErrorType::Http5xx);
    assert_eq!(status_error_type(302), ErrorType::OtherHttpStatus);
    assert_eq!(status_error_type(101), ErrorType::OtherHttpStatus);
}

fn push(state: &mut StreamState, at_ms: u64, data: &str) {
    let chunk = classify_event(None, data).unwrap();
    state.push_chunk(Duration::from_millis(at_ms), None, chunk);
}

fn ok_exchange() -> Exchange {
    Exchange {
        status: Some(200),
        headers_at: Some(Duration::from_millis(50)),
        end_at: Some(Duration::from_millis(900)),
        ..Exchange::default()
    }
}

fn reasoning_then_answer() -> StreamState {
    let mut s = StreamState::default();
    push(
        &mut s,
        100,
        r#"{"model":"m","choices":[{"delta":{"role":"assistant"}}]}"#,
    );
    s.push_comment(Duration::from_millis(150));
    push(
        &mut s,
        200,
        r#"{"choices":[{"delta":{"reasoning_content":"hello world"}}]}"#,
    );
    push(
        &mut s,
        300,
        r#"{"choices":[{"delta":{"content":"{\"a\":"}}]}"#,
    );
    push(
        &mut s,
        400,
        r#"{"choices":[{"delta":{"reasoning_content":" later"}}]}"#,
    );
    push(&mut s, 700, r#"{"choices":[{"delta":{"content":" 1}"}}]}"#);
    push(
        &mut s,
        800,
        r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
    );
    push(&mut s, 850, "[DONE]");
    s
}

#[test]
fn completed_record_derives_every_timing() {
    let state = reasoning_then_answer();
    assert!(state.finished());
    let base = TerminalRecord::new("t".into(), Outcome::Completed);
    let ex = finalize(base, state, ok_exchange(), &Ending::Completed);
    let r = &ex.record;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.ttfo_ms, Some(200.0));
    assert_eq!(r.ttfa_ms, Some(300.0));
    assert_eq!(r.e2e_ms, Some(700.0));
    assert_eq!(r.headers_ms, Some(50.0));
    assert_eq!(r.stream_end_ms, Some(900.0));
    assert_eq!(r.answer_text, "{\"a\": 1}");
    assert_eq!(r.reasoning_text, "hello world later");
    // o200k (checked with an independent implementation, `bpe-openai`): `{"a": 1}` is 6
    // tokens ({" a ": " " 1 }), "hello world" is 2.
    assert_eq!(r.answer_tokens, Some(6));
    assert_eq!(r.reasoning_tokens_before_answer, Some(2));
    // (6 − 1) tokens over E2E − TTFA = 400 ms.
    assert_eq!(r.output_tokens_per_second, Some(5.0 / 0.4));
    assert_eq!(r.response_model.as_deref(), Some("m"));
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert!(!r.truncated_by_length);
    assert_eq!(r.event_count, 8);
    assert_eq!(ex.events[1].classification, Classification::Comment);
    assert_eq!(ex.events[1].offset_ms, 150.0);
    assert_eq!(ex.events[7].classification, Classification::Done);
}

#[test]
fn failures_keep_partial_text_but_never_an_e2e() {
    let mut s = StreamState::default();
    push(
        &mut s,
        300,
        r#"{"choices":[{"delta":{"content":"partial answer"}}]}"#,
    );
    let base = TerminalRecord::new("t".into(), Outcome::Completed);
    let ending = Ending::Timeout {
        message: "late".into(),
    };
    let ex = finalize(base, s, ok_exchange(), &ending);
    let r = &ex.record;
    assert_eq!(
        (r.outcome, r.error_type),
        (Outcome::Timeout, Some(ErrorType::Timeout))
    );
    assert_eq!(r.answer_text, "partial answer");
    assert_eq!(r.ttfa_ms, Some(300.0));
    assert_eq!(r.e2e_ms, None);
    assert_eq!(r.output_tokens_per_second, None);
}

#[test]
fn length_finish_is_completed_and_flagged() {
    let mut s = StreamState::default();
    push(
        &mut s,
        300,
        r#"{"choices":[{"delta":{"content":"ab"},"finish_reason":"length"}]}"#,
    );
    let base = TerminalRecord::new("t".into(), Outcome::Completed);
    let ex = finalize(base, s, ok_exchange(), &Ending::Completed);
    assert_eq!(ex.record.outcome, Outcome::Completed);
    assert!(ex.record.truncated_by_length);
    // One answer event: E2E = TTFA, no tokens/s.
    assert_eq!(ex.record.e2e_ms, Some(300.0));
    assert_eq!(ex.record.output_tokens_per_second, None);
}

#[test]
fn http_error_parts() {
    let e = Ending::Http {
        status: 429,
        message: "HTTP 429: slow down".into(),
    };
    assert_eq!(
        e.parts(),
        (
            Outcome::HttpError,
            Some(ErrorType::Http429),
            Some("HTTP 429: slow down".into())
        )
    );
}

#[test]
fn a_stream_limit_is_its_own_outcome_naming_the_limit_and_other_transport_errors_are_not() {
    let ending = |error_type| Ending::Transport {
        error_type,
        message: "m".into(),
    };
    let outcomes: Vec<Outcome> = [
        ErrorType::LimitLineBytes,
        ErrorType::LimitEventBytes,
        ErrorType::LimitEvents,
        ErrorType::LimitAnswerBytes,
        ErrorType::InvalidSse,
        ErrorType::TruncatedStream,
        ErrorType::Transport,
    ]
    .into_iter()
    .map(|e| ending(e).parts().0)
    .collect();
    use Outcome::{StreamLimitExceeded as Limit, TransportError as Transport};
    assert_eq!(
        outcomes,
        [Limit, Limit, Limit, Limit, Transport, Transport, Transport]
    );
    assert_eq!(
        serde_json::to_string(&Limit).unwrap(),
        "\"stream_limit_exceeded\""
    );
    assert!(Limit.is_operational_failure());
}
