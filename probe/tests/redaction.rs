//! Redaction before every cut, over the whole response, against the raw loopback server, in
//! every API dialect (each stream in that dialect's own framing, `support/wire.rs`): a key
//! echoed in an error body or an SSE error event is cut at every offset (by the error-body limit
//! and by the snippet length) and no 8-character piece of it is left in the execution; a key
//! split between reasoning and answer, or between answer and error, is removed from each; a key
//! held with surrounding whitespace is still redacted when echoed trimmed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::record::{ErrorType, Execution, Outcome};
use openbench_common::spec::Api;
use openbench_probe::classify::ERROR_SNIPPET_CHARS;
use openbench_probe::{Credentials, Executor};
use support::wire::{Script, Stop, error_ending};
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

async fn execute(
    api: Api,
    server: &RawServer,
    error_body_bytes: u64,
    creds: &Credentials,
) -> Execution {
    let mut contract = contract(20_000);
    contract.limits.error_body_bytes = error_body_bytes;
    let exec = Executor::new(adapter_in(api, "together", server), contract, creds).unwrap();
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
    for api in Api::ALL {
        error_body_cut_in(api).await;
    }
}

async fn error_body_cut_in(api: Api) {
    // Cut by the error-body limit: at every byte of the key and around it.
    let body = format!("{{\"error\":\"invalid key {SECRET} for this account\"}}");
    let server = start(unauthorized(&body)).await;
    let start_at = body.find(SECRET).unwrap();
    for limit in 1..=body.len() as u64 {
        let execution = execute(api, &server, limit, &creds()).await;
        assert_eq!(execution.record.outcome, Outcome::HttpError, "{api}");
        assert_eq!(
            pieces_in(&execution),
            Vec::<String>::new(),
            "{api}: limit {limit}"
        );
        if limit as usize >= start_at + SECRET.len() {
            let message = execution.record.error_message.unwrap();
            assert!(message.contains("[redacted]"), "limit {limit}: {message}");
        }
    }
    // Cut by the snippet length: the key straddles character ERROR_SNIPPET_CHARS at every offset.
    for before in ERROR_SNIPPET_CHARS - SECRET.len()..=ERROR_SNIPPET_CHARS {
        let body = format!("{}{SECRET} and more", "é".repeat(before));
        let server = start(unauthorized(&body)).await;
        let execution = execute(api, &server, 64 * 1024, &creds()).await;
        let message = execution.record.error_message.clone().unwrap();
        assert_eq!(pieces_in(&execution), Vec::<String>::new(), "{message}");
        assert!(message.starts_with("HTTP 401: éé"), "{message}");
    }
}

/// The key at every offset around the snippet's end, in each dialect's own error event, and
/// in a bare `event: error` whose payload is not JSON: an OpenAI-style stream reads that as the
/// provider's error text; Anthropic's and Responses' typed streams as an `invalid_sse` payload,
/// whose snippet is redacted the same way.
#[tokio::test]
async fn a_key_in_an_sse_error_event_cut_at_every_offset_leaves_no_piece() {
    for api in Api::ALL {
        let openai = matches!(api, Api::OpenaiChat | Api::OpenaiCompletions);
        for before in ERROR_SNIPPET_CHARS - SECRET.len()..=ERROR_SNIPPET_CHARS {
            let text = format!("{}{SECRET}!", "x".repeat(before));
            let typed = Script::new(api).error(&text).end();
            let bare = vec![
                sse_head(),
                chunk(&format!("event: error\ndata: {text}\n\n")),
                Step::End,
            ];
            let bare_outcome = if openai {
                (Outcome::StreamError, Some(ErrorType::StreamError))
            } else {
                (Outcome::TransportError, Some(ErrorType::InvalidSse))
            };
            let typed_outcome = (Outcome::StreamError, Some(error_ending(api).0));
            for (steps, outcome) in [(typed, typed_outcome), (bare, bare_outcome)] {
                let (execution, _server) = run_in(api, steps, 5_000).await;
                let r = &execution.record;
                assert_eq!((r.outcome, r.error_type), outcome, "{api}");
                let message = r.error_message.clone().unwrap();
                assert_eq!(pieces_in(&execution), Vec::<String>::new(), "{message}");
                // Redacted whole before the cut, not cut first (then the marker fits).
                if before + "[redacted]!".len() <= ERROR_SNIPPET_CHARS {
                    assert!(message.contains("[redacted]!"), "{api}: {message}");
                }
            }
        }
    }
}

#[tokio::test]
async fn a_key_split_between_reasoning_and_answer_or_answer_and_error_is_removed_from_each() {
    let (head_part, tail_part) = SECRET.split_at(11);
    for api in Api::ALL {
        let reasoning_then_answer = Script::new(api)
            .start()
            .reasoning(&format!("the key is {head_part}"))
            .answer(&format!("{tail_part} done"))
            .finish(Stop::End)
            .done()
            .end();
        let (execution, _server) = run_in(api, reasoning_then_answer, 5_000).await;
        let r = &execution.record;
        assert_eq!(r.outcome, Outcome::Completed, "{api}");
        assert_eq!(r.reasoning_text, "the key is [redacted]", "{api}");
        assert_eq!(r.answer_text, "[redacted] done", "{api}");
        assert_eq!(pieces_in(&execution), Vec::<String>::new(), "{api}");

        let answer_then_error = Script::new(api)
            .start()
            .answer(&format!("key {head_part}"))
            .error(&format!("{tail_part} is revoked"))
            .end();
        let (execution, _server) = run_in(api, answer_then_error, 5_000).await;
        let r = &execution.record;
        assert_eq!(r.outcome, Outcome::StreamError, "{api}");
        assert_eq!(r.answer_text, "key [redacted]", "{api}");
        let message = format!("{}[redacted] is revoked", error_ending(api).1);
        assert_eq!(r.error_message.as_deref(), Some(message.as_str()), "{api}");
        assert_eq!(pieces_in(&execution), Vec::<String>::new(), "{api}");
    }
}

#[tokio::test]
async fn a_key_handed_in_with_surrounding_whitespace_is_trimmed_and_its_echo_redacted() {
    for api in Api::ALL {
        let steps = Script::new(api)
            .start()
            .answer(&format!("you sent {SECRET}"))
            .finish(Stop::End)
            .done()
            .end();
        let server = start(steps).await;
        let padded = Credentials::from_pairs([("TEST_KEY", format!(" {SECRET}\t"))]);
        let execution = execute(api, &server, 1024, &padded).await;
        assert_eq!(execution.record.answer_text, "you sent [redacted]", "{api}");
        assert_eq!(pieces_in(&execution), Vec::<String>::new(), "{api}");
    }
}
