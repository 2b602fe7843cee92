//! Issue 36, class 4, against the raw loopback server: pieces of the key in every field a
//! provider controls — the first 11 characters as `finish_reason` and `x-request-id`, a
//! reversed piece in a rate-limit header and in the model, the key's halves split by
//! whitespace across reasoning and answer, the key spelled in 5-character groups, and the key's
//! hex in a 401 body — leave no 6-character piece of it, nor its reversed, hex or base64 form,
//! anywhere in the execution.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use openbench_common::record::{Execution, Outcome};
use support::*;

/// Every 6-character window of `text` (by bytes: the test keys are ASCII).
fn windows(text: &str, width: usize) -> Vec<String> {
    (0..=text.len().saturating_sub(width))
        .map(|i| text[i..i + width].to_string())
        .collect()
}

/// What a leak of [`SECRET`] would look like: its 6-character pieces as written and reversed,
/// their hex in both cases, and 8-character pieces of its base64 (both alphabets, behind 0, 1
/// and 2 bytes) past the first group.
fn forms() -> Vec<String> {
    let reversed: String = SECRET.chars().rev().collect();
    let mut forms = windows(SECRET, 6);
    forms.extend(windows(&reversed, 6));
    for piece in windows(SECRET, 6) {
        let hex: String = piece.bytes().map(|b| format!("{b:02x}")).collect();
        forms.push(hex.to_uppercase());
        forms.push(hex);
    }
    for prefix in ["", ":", "::"] {
        for engine in [&STANDARD, &URL_SAFE] {
            let encoded = engine.encode(format!("{prefix}{SECRET}"));
            let inner = &encoded[if prefix.is_empty() { 0 } else { 4 }..encoded.len() - 4];
            forms.extend(windows(inner, 8));
        }
    }
    forms
}

/// The forms of the key found in the execution, as JSON.
fn leaks(execution: &Execution) -> Vec<String> {
    let json = serde_json::to_string(execution).unwrap();
    forms().into_iter().filter(|f| json.contains(f)).collect()
}

#[tokio::test]
async fn pieces_of_a_key_in_every_streamed_field_are_redacted() {
    let first = &SECRET[..11];
    let reversed: String = SECRET.chars().rev().collect();
    let (head_part, tail_part) = SECRET.split_at(12);
    let groups: Vec<&str> = (0..SECRET.len())
        .step_by(5)
        .map(|at| &SECRET[at..(at + 5).min(SECRET.len())])
        .collect();
    let steps = vec![
        head(
            "200 OK",
            &[
                ("Content-Type", "text/event-stream"),
                ("x-request-id", first),
                ("x-ratelimit-remaining-requests", &reversed[2..10]),
            ],
        ),
        data(&format!(
            r#"{{"model":"m/{}","choices":[{{"delta":{{"reasoning_content":"the key is {head_part} "}}}}]}}"#,
            &SECRET[3..9]
        )),
        data(&format!(
            r#"{{"choices":[{{"delta":{{"content":"\n{tail_part}; spelled {}"}}}}]}}"#,
            groups.join(" ")
        )),
        data(&format!(
            r#"{{"choices":[{{"delta":{{}},"finish_reason":"{first}"}}]}}"#
        )),
        chunk("data: [DONE]\n\n"),
        Step::End,
    ];
    let (execution, _server) = run(steps, 5_000).await;
    let r = &execution.record;
    assert_eq!(r.outcome, Outcome::Completed, "{r:?}");
    assert_eq!(r.finish_reason.as_deref(), Some("[redacted]"));
    assert_eq!(r.provider_request_id.as_deref(), Some("[redacted]"));
    assert_eq!(
        r.rate_limit_headers
            .get("x-ratelimit-remaining-requests")
            .map(String::as_str),
        Some("[redacted]")
    );
    assert_eq!(r.response_model.as_deref(), Some("m/[redacted]"));
    assert_eq!(r.reasoning_text, "the key is [redacted]");
    assert_eq!(r.answer_text, "[redacted]; spelled [redacted]");
    let finishes: Vec<_> = execution
        .events
        .iter()
        .filter_map(|e| e.finish_reason.as_deref())
        .collect();
    assert_eq!(finishes, ["[redacted]"]);
    assert_eq!(leaks(&execution), Vec::<String>::new());
}

#[tokio::test]
async fn a_key_in_hex_or_base64_in_an_error_body_is_redacted() {
    let hex: String = SECRET.bytes().map(|b| format!("{b:02x}")).collect();
    let body = format!(
        r#"{{"error":"key {hex} / {} / {} rejected"}}"#,
        hex.to_uppercase(),
        URL_SAFE.encode(format!("::{SECRET}"))
    );
    let steps = vec![
        head("401 Unauthorized", &[("Content-Type", "application/json")]),
        chunk(&body),
        Step::End,
    ];
    let (execution, _server) = run(steps, 5_000).await;
    let r = &execution.record;
    assert_eq!(r.outcome, Outcome::HttpError);
    let message = r.error_message.as_deref().unwrap();
    // The base64's first group mixes in the two colons: it alone is kept.
    let lead = &URL_SAFE.encode(format!("::{SECRET}"))[..4];
    assert_eq!(
        message,
        format!(
            r#"HTTP 401: {{"error":"key [redacted] / [redacted] / {lead}[redacted] rejected"}}"#
        )
    );
    assert_eq!(leaks(&execution), Vec::<String>::new());
}
