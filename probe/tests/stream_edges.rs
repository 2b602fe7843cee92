//! Classification edges and split secrets, against the raw loopback server, in every API
//! dialect's own framing (`support/wire.rs`): a finish followed by a dropped connection, an
//! empty finish reason, and a key echoed in two halves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::record::{ErrorType, Execution, Outcome};
use openbench_common::spec::Api;
use support::wire::{MODEL, Script, Stop};
use support::*;

async fn run(api: Api, steps: Vec<Step>) -> Execution {
    run_in(api, steps, 5_000).await.0
}

/// A finish then a dropped connection is completed and flagged, in the dialects whose finish
/// comes before their end marker (chat's and completions' `finish_reason` before `[DONE]`,
/// Anthropic's `message_delta` before `message_stop`). A Responses stream's finish is its
/// terminal event, after which nothing is read: the drop after it is no part of the response.
#[tokio::test]
async fn a_final_finish_reason_then_a_dropped_connection_is_completed_and_flagged() {
    for api in Api::ALL {
        let steps = Script::new(api)
            .start()
            .answer("{\"a\": 1}")
            .finish(Stop::End)
            .step(Step::Close)
            .steps();
        let r = run(api, steps).await.record;
        assert_eq!(
            r.outcome,
            Outcome::Completed,
            "{api}: {:?}",
            r.error_message
        );
        assert_eq!(r.error_type, None);
        assert_eq!(r.answer_text, "{\"a\": 1}");
        assert!(r.e2e_ms.is_some());
        if api == Api::OpenaiResponses {
            assert!(!r.abrupt_end, "{api}");
            assert_eq!(r.error_message, None, "{api}");
            continue;
        }
        assert!(r.abrupt_end, "{api}");
        assert!(
            r.error_message
                .as_deref()
                .unwrap()
                .starts_with("after the final finish_reason, body read failed"),
            "{api}: {:?}",
            r.error_message
        );
    }
}

/// An empty finish reason is no finish: chat's and completions' `finish_reason: ""` and
/// Anthropic's `stop_reason: ""`. The Responses API has no finish reason field to leave empty.
#[tokio::test]
async fn an_empty_finish_reason_is_no_finish() {
    let empty = [
        (
            Api::OpenaiChat,
            r#"{"choices":[{"delta":{"content":"x"},"finish_reason":""}]}"#,
        ),
        (
            Api::OpenaiCompletions,
            r#"{"choices":[{"text":"x","finish_reason":""}]}"#,
        ),
        (
            Api::AnthropicMessages,
            r#"{"type":"message_delta","delta":{"stop_reason":""},"usage":{"output_tokens":1}}"#,
        ),
    ];
    for (api, payload) in empty {
        let steps = Script::new(api)
            .start()
            .answer("x")
            .step(data(payload))
            .end();
        let r = run(api, steps).await.record;
        assert_eq!(
            (r.outcome, r.error_type),
            (Outcome::TransportError, Some(ErrorType::TruncatedStream)),
            "{api}"
        );
        assert_eq!(r.finish_reason, None, "{api}");
        assert!(!r.abrupt_end);
    }
}

#[tokio::test]
async fn a_key_echoed_in_two_events_leaves_no_fragment_anywhere() {
    let (first, second) = SECRET.split_at(SECRET.len() / 2);
    for api in Api::ALL {
        let steps = Script::new(api)
            .start()
            .answer(&format!("key {first}"))
            .answer(&format!("{second} ok"))
            .finish(Stop::End)
            .done()
            .end();
        let e = run(api, steps).await;
        assert_eq!(e.record.answer_text, "key [redacted] ok", "{api}");
        assert_eq!(e.record.response_model.as_deref(), Some(MODEL));
        let answers: Vec<&str> = e
            .events
            .iter()
            .map(|ev| ev.answer.as_str())
            .filter(|a| !a.is_empty())
            .collect();
        assert_eq!(answers, ["key [redacted]", "[redacted] ok"], "{api}");
        let json = serde_json::to_string(&e).unwrap();
        // No piece of the key of 6 characters or more survives anywhere in the execution.
        for start in 0..=SECRET.len() - 6 {
            let piece = &SECRET[start..start + 6];
            assert!(!json.contains(piece), "{api}: {piece:?} in {json}");
        }
    }
}
