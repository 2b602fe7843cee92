//! Redaction before every cut, over the whole response, against the raw loopback server: a key
//! echoed in an error body or an SSE error event is cut at every offset (by the error-body limit
//! and by the snippet length) and no 8-character piece of it is left in the execution; a key
//! split between reasoning and answer, or between answer and error, is removed from each; a key
//! held with surrounding whitespace is still redacted when echoed trimmed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::record::{Execution, Outcome};
use openbench_probe::classify::ERROR_SNIPPET_CHARS;
use openbench_probe::{Credentials, Executor};
use support::*;

/// Every 8-character piece of [`SECRET`] found in the execution, as JSON.
fn pieces_in(execution: &Execution) -> Vec<String> {
    let json = serde_json::to_string(execution).unwrap();
    (0..=SECRET.len() - 8)
        .map(|i| &SECRET[i..i + 8])
        .filter(|piece| json.contains(piece))
        .map(str::to_string)
        .collect()
}

async fn execute(server: &RawServer, error_body_bytes: u64, creds: &Credentials) -> Execution {
    let mut contract = contract(20_000);
    contract.limits.error_body_bytes = error_body_bytes;
    let exec = Executor::new(adapter("together", &server.endpoint()), contract, creds).unwrap();
    exec.execute(&planned("together", 5_000)).await
}

fn unauthorized(body: &str) -> Vec<Step> {
    vec![
        head("401 Unauthorized", &[("Content-Type", "application/json")]),
        chunk(body),
        Step::End,
    ]
}

#[tokio::test]
async fn a_key_in_an_error_body_cut_at_every_offset_leaves_no_piece() {
    // Cut by the error-body limit: at every byte of the key and around it.
    let body = format!("{{\"error\":\"invalid key {SECRET} for this account\"}}");
    let server = start(unauthorized(&body)).await;
    let start_at = body.find(SECRET).unwrap();
    for limit in 1..=body.len() as u64 {
        let execution = execute(&server, limit, &creds()).await;
        assert_eq!(execution.record.outcome, Outcome::HttpError);
        assert_eq!(pieces_in(&execution), Vec::<String>::new(), "limit {limit}");
        if limit as usize >= start_at + SECRET.len() {
            let message = execution.record.error_message.unwrap();
            assert!(message.contains("[redacted]"), "limit {limit}: {message}");
        }
    }
    // Cut by the snippet length: the key straddles character ERROR_SNIPPET_CHARS at every offset.
    for before in ERROR_SNIPPET_CHARS - SECRET.len()..=ERROR_SNIPPET_CHARS {
        let body = format!("{}{SECRET} and more", "é".repeat(before));
        let server = start(unauthorized(&body)).await;
        let execution = execute(&server, 64 * 1024, &creds()).await;
        let message = execution.record.error_message.clone().unwrap();
        assert_eq!(pieces_in(&execution), Vec::<String>::new(), "{message}");
        assert!(message.starts_with("HTTP 401: éé"), "{message}");
    }
}

#[tokio::test]
async fn a_key_in_an_sse_error_event_cut_at_every_offset_leaves_no_piece() {
    for before in ERROR_SNIPPET_CHARS - SECRET.len()..=ERROR_SNIPPET_CHARS {
        let text = format!("{}{SECRET}!", "x".repeat(before));
        for event in [
            format!("event: error\ndata: {text}\n\n"),
            format!("data: {{\"error\":{{\"message\":\"{text}\"}}}}\n\n"),
        ] {
            let (execution, _server) = run(vec![sse_head(), chunk(&event), Step::End], 5_000).await;
            assert_eq!(execution.record.outcome, Outcome::StreamError);
            let message = execution.record.error_message.clone().unwrap();
            assert_eq!(pieces_in(&execution), Vec::<String>::new(), "{message}");
            // Redacted whole before the cut, not cut first (then the marker fits).
            if before + "[redacted]!".len() <= ERROR_SNIPPET_CHARS {
                assert!(message.contains("[redacted]!"), "{message}");
            }
        }
    }
}

#[tokio::test]
async fn a_key_split_between_reasoning_and_answer_or_answer_and_error_is_removed_from_each() {
    let (head_part, tail_part) = SECRET.split_at(11);
    let reasoning_then_answer = vec![
        sse_head(),
        data(&format!(
            r#"{{"choices":[{{"delta":{{"reasoning_content":"the key is {head_part}"}}}}]}}"#
        )),
        data(&format!(
            r#"{{"choices":[{{"delta":{{"content":"{tail_part} done"}},"finish_reason":"stop"}}]}}"#
        )),
        chunk("data: [DONE]\n\n"),
        Step::End,
    ];
    let (execution, _server) = run(reasoning_then_answer, 5_000).await;
    let r = &execution.record;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.reasoning_text, "the key is [redacted]");
    assert_eq!(r.answer_text, "[redacted] done");
    assert_eq!(pieces_in(&execution), Vec::<String>::new());

    let answer_then_error = vec![
        sse_head(),
        data(&format!(
            r#"{{"choices":[{{"delta":{{"content":"key {head_part}"}}}}]}}"#
        )),
        chunk(&format!("event: error\ndata: {tail_part} is revoked\n\n")),
        Step::End,
    ];
    let (execution, _server) = run(answer_then_error, 5_000).await;
    let r = &execution.record;
    assert_eq!(r.outcome, Outcome::StreamError);
    assert_eq!(r.answer_text, "key [redacted]");
    assert_eq!(
        r.error_message.as_deref(),
        Some("event: error: [redacted] is revoked")
    );
    assert_eq!(pieces_in(&execution), Vec::<String>::new());
}

#[tokio::test]
async fn a_key_handed_in_with_surrounding_whitespace_is_trimmed_and_its_echo_redacted() {
    let server = start(vec![
        sse_head(),
        data(&format!(
            r#"{{"choices":[{{"delta":{{"content":"you sent {SECRET}"}},"finish_reason":"stop"}}]}}"#
        )),
        chunk("data: [DONE]\n\n"),
        Step::End,
    ])
    .await;
    let padded = Credentials::from_pairs([("TEST_KEY", format!(" {SECRET}\t"))]);
    let execution = execute(&server, 1024, &padded).await;
    assert_eq!(execution.record.answer_text, "you sent [redacted]");
    assert_eq!(pieces_in(&execution), Vec::<String>::new());
}
