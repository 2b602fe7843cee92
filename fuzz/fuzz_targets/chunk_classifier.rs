//! The chunk classifier on arbitrary event names and payloads: never panics, what it keeps is
//! consistent with its classification, and its fast path for the common chunk shape gives exactly
//! what the `serde_json::Value` path gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openbench_common::record::Classification;
use openbench_probe::classify::{classify_event, classify_event_value};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (event, payload) = match text.split_once('\n') {
        Some((event, payload)) => (Some(event), payload),
        None => (None, text),
    };
    let result = classify_event(event, payload);
    assert_eq!(result, classify_event_value(event, payload));
    if let Ok(chunk) = result {
        match chunk.classification {
            Classification::Answer => {
                assert!(!chunk.answer.is_empty() && chunk.reasoning.is_empty())
            }
            Classification::Reasoning => {
                assert!(chunk.answer.is_empty() && !chunk.reasoning.is_empty())
            }
            Classification::Error => assert!(chunk.error.is_some()),
            _ => {}
        }
        assert!(chunk.finish_reason.as_deref() != Some(""));
    }
});
