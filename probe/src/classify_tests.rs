use super::*;
use serde_json::json;

fn of(data: &str) -> Chunk {
    classify_event(None, data).unwrap()
}

#[test]
fn role_only_first_chunk_with_null_content_is_role() {
    let c = of(
        r#"{"id":"x","model":"m1","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}"#,
    );
    assert_eq!(c.classification, Classification::Role);
    assert_eq!(c.model.as_deref(), Some("m1"));
    assert_eq!((c.answer.as_str(), c.reasoning.as_str()), ("", ""));
}

#[test]
fn role_with_empty_content_is_still_role_and_empty_delta_is_empty() {
    let c = of(r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#);
    assert_eq!(c.classification, Classification::Role);
    let c = of(r#"{"choices":[{"delta":{}}]}"#);
    assert_eq!(c.classification, Classification::EmptyDelta);
    let c = of(r#"{"choices":[{"delta":{"content":"","reasoning_content":""}}]}"#);
    assert_eq!(c.classification, Classification::EmptyDelta);
}

#[test]
fn answer_as_string_and_as_blocks() {
    let c = of(r#"{"choices":[{"delta":{"content":"{\"a"}}]}"#);
    assert_eq!(
        (c.classification, c.answer.as_str()),
        (Classification::Answer, "{\"a")
    );
    let c = of(
        r#"{"choices":[{"delta":{"content":[{"type":"text","text":"he"},{"type":"image"},{"type":"text","text":"llo"}]}}]}"#,
    );
    assert_eq!(
        (c.classification, c.answer.as_str()),
        (Classification::Answer, "hello")
    );
}

#[test]
fn reasoning_takes_the_first_non_empty_source() {
    // zai-style reasoning_content.
    let c = of(r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#);
    assert_eq!(
        (c.classification, c.reasoning.as_str()),
        (Classification::Reasoning, "think")
    );
    // Empty reasoning_content falls through to reasoning.
    let c = of(
        r#"{"choices":[{"delta":{"reasoning_content":"","reasoning":"r2","reasoning_details":[{"text":"no"}]}}]}"#,
    );
    assert_eq!(c.reasoning, "r2");
    // reasoning_details texts are concatenated.
    let c = of(
        r#"{"choices":[{"delta":{"reasoning_details":[{"type":"reasoning.text","text":"a"},{"text":"b"}]}}]}"#,
    );
    assert_eq!(c.reasoning, "ab");
    // Both in one chunk.
    let c = of(r#"{"choices":[{"delta":{"reasoning":"r","content":"a"}}]}"#);
    assert_eq!(c.classification, Classification::ReasoningAndAnswer);
}

#[test]
fn finish_only_usage_only_and_metadata() {
    let c = of(r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#);
    assert_eq!(c.classification, Classification::Finish);
    assert_eq!(c.finish_reason.as_deref(), Some("stop"));
    // A finish chunk with usage stays a finish chunk, and keeps the usage.
    let c =
        of(r#"{"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":3}}"#);
    assert_eq!(c.classification, Classification::Finish);
    assert_eq!(c.usage.and_then(|u| u.prompt_tokens), Some(3));
    let c = of(
        r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}},"timings":{"predicted_n":5}}"#,
    );
    assert_eq!(c.classification, Classification::Usage);
    assert_eq!(
        c.usage,
        Some(Usage {
            prompt_tokens: Some(10),
            completion_tokens: Some(5),
            total_tokens: Some(15),
            cached_tokens: Some(4),
            cache_write_tokens: None,
            reasoning_tokens: Some(2),
        })
    );
    assert_eq!(c.timings, Some(json!({"predicted_n": 5})));
    let c = of(r#"{"id":"x","object":"chat.completion.chunk"}"#);
    assert_eq!(c.classification, Classification::Metadata);
    // A final chunk with content and finish_reason is an answer with a finish reason.
    let c = of(r#"{"choices":[{"delta":{"content":"}"},"finish_reason":"stop"}]}"#);
    assert_eq!(c.classification, Classification::Answer);
    assert_eq!(c.finish_reason.as_deref(), Some("stop"));
}

#[test]
fn done_errors_and_invalid_payloads() {
    assert_eq!(of("[DONE]").classification, Classification::Done);
    let c = of(r#"{"error":{"message":"overloaded","code":503}}"#);
    assert_eq!(c.classification, Classification::Error);
    assert_eq!(c.error.as_deref(), Some("overloaded"));
    let c = of(r#"{"object":"error","message":"bad things","type":"internal"}"#);
    assert_eq!(
        (c.classification, c.error.as_deref()),
        (Classification::Error, Some("bad things"))
    );
    // `error: null` is not an error.
    let c = of(r#"{"error":null,"choices":[{"delta":{"content":"x"}}]}"#);
    assert_eq!(c.classification, Classification::Answer);
    let c = classify_event(Some("error"), "upstream died").unwrap();
    assert_eq!(c.classification, Classification::Error);
    assert_eq!(c.error.as_deref(), Some("upstream died"));
    let c = classify_event(Some("error"), r#"{"error":{"message":"boom"}}"#).unwrap();
    assert_eq!(c.error.as_deref(), Some("boom"));
    let err = classify_event(None, "hello there").unwrap_err();
    assert_eq!(err.data, "hello there");
    assert!(
        err.to_string().starts_with("data payload is not JSON"),
        "{err}"
    );
}

#[test]
fn an_empty_finish_reason_is_no_finish() {
    let c = of(r#"{"choices":[{"delta":{},"finish_reason":""}]}"#);
    assert_eq!(c.classification, Classification::EmptyDelta);
    assert_eq!(c.finish_reason, None);
}

/// Payloads of the common chunk shape and near misses of it: both paths must agree on each, and
/// the fast path must take the common ones (or the optimisation is silently gone).
const COMMON: &[&str] = &[
    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#,
    r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"zai-org/GLM-5.3-Flash","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}"#,
    r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}"#,
    r#"{"choices":[{"delta":{"reasoning_content":"","reasoning":"r\u00e9\n"}}]}"#,
    r#"{"choices":[{"delta":{"content":"{\"a\":\"b\\\"\"}","reasoning_content":"think"}}]}"#,
    r#"{"model":"","choices":[{"delta":{"role":"assistant","content":""},"finish_reason":""}]}"#,
    r#"{"choices":[{"delta":null,"finish_reason":null}]}"#,
    r#"{"choices":[]}"#,
    r#"{"choices":null,"model":"m"}"#,
    r#"{}"#,
    r#"  {"choices":[{"delta":{"refusal":null,"content":"x"}},{"delta":{}}]}  "#,
];

const NEAR_MISSES: &[&str] = &[
    r#"{"object":"error","message":"boom"}"#,
    r#"{"error":null,"choices":[{"delta":{"content":"x"}}]}"#,
    r#"{"choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":1}}"#,
    r#"{"choices":[{"delta":{"content":[{"text":"a"}]}}]}"#,
    r#"{"choices":[{"delta":{"reasoning_details":[{"text":"a"}]}}]}"#,
    r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
    r#"{"model":"a","model":"b","choices":[]}"#,
    r#"{"model":7,"choices":[{"delta":{"role":1}}]}"#,
    r#"{"choices":[{"delta":{"content":5}}]}"#,
    r#"{"choices":[{"delta":"text"}]}"#,
    r#"{"choices":[7,{"delta":{}}]}"#,
    r#"{"choices":{"delta":{}}}"#,
    r#"{"created":1e400,"choices":[]}"#,
    r#"{"created":-1,"choices":[]}"#,
    r#"{"id":"\ud800","choices":[]}"#,
    r#"{"extra":"\ud800","choices":[]}"#,
    r#"{"extra":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"#,
    r#"{"choices":[{"delta":{"content":"x"},"logprobs":{"content":[]}}]}"#,
    r#"{"choices":[{"delta":{"content":"x"}}],"timings":{"predicted_ms":1.5}}"#,
    r#"{"choices":[{"delta":{"content":"x"}}]"#,
    r#"{"choices":[{"delta":{"content":"x"}}]} trailing"#,
    "[DONE]",
    "",
    "not json",
];

#[test]
fn the_common_shape_takes_the_fast_path_and_near_misses_do_not() {
    for data in COMMON {
        assert!(common_shape::classify_common(data).is_some(), "{data}");
    }
    for data in NEAR_MISSES {
        assert!(common_shape::classify_common(data).is_none(), "{data}");
    }
}

#[test]
fn both_paths_give_the_same_result_for_every_payload() {
    let seeds =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/chunk_classifier");
    let mut payloads: Vec<(Option<String>, String)> = COMMON
        .iter()
        .chain(NEAR_MISSES)
        .map(|d| (None, d.to_string()))
        .collect();
    for entry in std::fs::read_dir(&seeds).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        // The fuzz target's input convention: an optional event name, a newline, the payload.
        match text.split_once('\n') {
            Some((event, payload)) => payloads.push((Some(event.into()), payload.into())),
            None => payloads.push((None, text)),
        }
    }
    assert!(payloads.len() > 60, "{} payloads", payloads.len());
    for (event, data) in &payloads {
        for event in [event.as_deref(), None, Some("message"), Some("error")] {
            assert_eq!(
                classify_event(event, data),
                classify_event_value(event, data),
                "event {event:?}, data {data}"
            );
        }
    }
}
