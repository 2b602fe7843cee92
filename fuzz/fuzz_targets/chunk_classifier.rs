//! The chunk classifier on arbitrary event names and payloads: never panics, and what it keeps
//! is consistent with its classification.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openbench_common::record::Classification;
use openbench_probe::classify::classify_event;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (event, payload) = match text.split_once('\n') {
        Some((event, payload)) => (Some(event), payload),
        None => (None, text),
    };
    if let Ok(chunk) = classify_event(event, payload) {
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
