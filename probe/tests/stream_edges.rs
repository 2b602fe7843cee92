//! Classification edges and split secrets, against the raw loopback server: a finish followed
//! by a dropped connection, an empty `finish_reason`, and a key echoed in two halves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::record::{ErrorType, Execution, Outcome};
use openbench_probe::{Credentials, Executor};
use support::*;

async fn run(steps: Vec<Step>) -> Execution {
    let server = start(steps).await;
    let exec = Executor::new(
        adapter("together", &server.endpoint()),
        contract(20_000),
        &Credentials::from_pairs([("TEST_KEY", SECRET)]),
    )
    .unwrap();
    exec.execute(&planned("together", 5_000)).await
}

#[tokio::test]
async fn a_final_finish_reason_then_a_dropped_connection_is_completed_and_flagged() {
    let steps = vec![
        sse_head(),
        data(r#"{"choices":[{"delta":{"content":"{\"a\": 1}"},"finish_reason":"stop"}]}"#),
        Step::Close,
    ];
    let r = run(steps).await.record;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error_message);
    assert_eq!(r.error_type, None);
    assert!(r.abrupt_end);
    assert!(
        r.error_message
            .as_deref()
            .unwrap()
            .starts_with("after the final finish_reason, body read failed"),
        "{:?}",
        r.error_message
    );
    assert_eq!(r.answer_text, "{\"a\": 1}");
    assert!(r.e2e_ms.is_some());
}

#[tokio::test]
async fn an_empty_finish_reason_is_no_finish() {
    let steps = vec![
        sse_head(),
        data(r#"{"choices":[{"delta":{"content":"x"},"finish_reason":""}]}"#),
        Step::End,
    ];
    let r = run(steps).await.record;
    assert_eq!(
        (r.outcome, r.error_type),
        (Outcome::TransportError, Some(ErrorType::TruncatedStream))
    );
    assert_eq!(r.finish_reason, None);
    assert!(!r.abrupt_end);
}

#[tokio::test]
async fn a_key_echoed_in_two_events_leaves_no_fragment_anywhere() {
    let (first, second) = SECRET.split_at(SECRET.len() / 2);
    let steps = vec![
        sse_head(),
        data(&format!(
            r#"{{"choices":[{{"delta":{{"content":"key {first}"}}}}]}}"#
        )),
        data(&format!(
            r#"{{"choices":[{{"delta":{{"content":"{second} ok"}},"finish_reason":"stop"}}]}}"#
        )),
        Step::End,
    ];
    let e = run(steps).await;
    assert_eq!(e.record.answer_text, "key [redacted] ok");
    let answers: Vec<&str> = e.events.iter().map(|ev| ev.answer.as_str()).collect();
    assert_eq!(answers, ["key [redacted]", "[redacted] ok"]);
    let json = serde_json::to_string(&e).unwrap();
    // No piece of the key of 6 characters or more survives anywhere in the execution.
    for start in 0..=SECRET.len() - 6 {
        let piece = &SECRET[start..start + 6];
        assert!(!json.contains(piece), "{piece:?} in {json}");
    }
}
