//! Every API dialect's event reader on arbitrary event names and payloads (issue 39): never
//! panics, and what it keeps is consistent with its classification, as the chat classifier's
//! target asks. The first byte picks the dialect; the rest is `event-name\npayload` (no newline:
//! no event name).
#![no_main]

use libfuzzer_sys::fuzz_target;
use openbench_common::record::Classification;
use openbench_common::spec::Api;
use openbench_probe::dialect::classify;

const DIALECTS: [Api; 4] = [
    Api::OpenaiChat,
    Api::AnthropicMessages,
    Api::OpenaiResponses,
    Api::OpenaiCompletions,
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let api = DIALECTS[usize::from(pick) % DIALECTS.len()];
    let (event, payload) = match text.split_once('\n') {
        Some((event, payload)) => (Some(event), payload),
        None => (None, text),
    };
    if let Ok(chunk) = classify(api, event, payload) {
        match chunk.classification {
            Classification::Answer => {
                assert!(!chunk.answer.is_empty() && chunk.reasoning.is_empty())
            }
            Classification::Reasoning => {
                assert!(chunk.answer.is_empty() && !chunk.reasoning.is_empty())
            }
            Classification::ReasoningAndAnswer => {
                assert!(!chunk.answer.is_empty() && !chunk.reasoning.is_empty())
            }
            Classification::Error => assert!(chunk.error.is_some()),
            _ => {}
        }
        assert!(chunk.finish_reason.as_deref() != Some(""));
    }
});
