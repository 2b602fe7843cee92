//! Every API dialect's event reader on arbitrary event names and payloads (issue 39), and the one
//! fold that turns a stream of them into a record with its tool calls: never panics, and what it
//! keeps is consistent with its classification. The first byte picks the dialect; the rest is a
//! stream of events separated by a blank line, each `event-name\npayload` (no newline: no event
//! name), stamped 1 ms apart.
//!
//! Tool-call invariants (docs/methodology.md §3b):
//! - an event that ends a call adds no argument text (the whole arguments some end events
//!   repeat are never counted twice);
//! - every argument fragment an event carried is in exactly one reconstructed call: the calls'
//!   argument bytes add up to the fragments' (a fragment is never dropped nor added twice);
//! - no more calls than distinct call indices the events named;
//! - the first tool-call time exists exactly when some event carried a name or a fragment, and
//!   is no later than the last;
//! - a judged call is `malformed_tool_call` only when some call's arguments are not JSON, and
//!   unjudged calls of a completed, unclipped stream are all JSON (or empty);
//! - a Responses stream that completes with a function call as its last output finishes
//!   `tool_calls` unless it hit the ceiling.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openbench_common::record::{Classification, ErrorType, Outcome, TerminalRecord};
use openbench_common::spec::Api;
use openbench_common::tool::ToolCallError;
use openbench_probe::dialect::{classify, settle_finish};
use openbench_probe::record::{Ending, Exchange, StreamState, finalize};
use std::collections::BTreeSet;
use std::time::Duration;

const DIALECTS: [Api; 4] = [
    Api::OpenaiChat,
    Api::AnthropicMessages,
    Api::OpenaiResponses,
    Api::OpenaiCompletions,
];

/// A ceiling the fuzzer can reach with a small `output_tokens`.
const CEILING: u64 = 16;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let api = DIALECTS[usize::from(pick) % DIALECTS.len()];
    let mut state = StreamState::default();
    let (mut fragment_bytes, mut indices, mut tool_text) = (0usize, BTreeSet::new(), false);
    for (k, block) in text.split("\n\n").enumerate() {
        let (event, payload) = match block.split_once('\n') {
            Some((event, payload)) => (Some(event), payload),
            None => (None, block),
        };
        let Ok(chunk) = classify(api, event, payload) else {
            continue;
        };
        check_chunk(&chunk);
        for part in &chunk.tool_parts {
            fragment_bytes += part.arguments.len();
            indices.insert(part.index);
            tool_text |= part.has_text();
        }
        state.push_chunk(Duration::from_millis(k as u64 + 1), None, chunk);
    }
    let ended_in_tool_call = state.ended_in_tool_call();
    let over_ceiling = state.output_tokens().is_some_and(|n| n >= CEILING);
    let completed_stop = state.finish_reason.as_deref() == Some("stop");
    settle_finish(api, &mut state, Some(CEILING));
    let ending = if state.finished() {
        Ending::Completed
    } else {
        Ending::Transport {
            error_type: ErrorType::TruncatedStream,
            message: "truncated".into(),
        }
    };
    let exchange = Exchange {
        status: Some(200),
        ..Exchange::default()
    };
    let base = TerminalRecord::new("fuzz".into(), Outcome::Completed);
    let r = finalize(base, state, exchange, &ending).record;

    let call_bytes: usize = r.tool_calls.iter().map(|c| c.arguments.len()).sum();
    assert_eq!(
        call_bytes, fragment_bytes,
        "a fragment was dropped or doubled"
    );
    assert!(r.tool_calls.len() <= indices.len());
    assert_eq!(r.ttf_tool_call_ms.is_some(), tool_text);
    if let (Some(first), Some(last)) = (r.ttf_tool_call_ms, r.tool_call_e2e_ms) {
        assert!(first <= last);
    }
    let all_json = r.tool_calls.iter().all(|c| is_json(&c.arguments));
    match r.tool_call_error {
        Some(ToolCallError::MalformedToolCall) => assert!(!all_json),
        Some(ToolCallError::TruncatedToolCall) => assert!(!r.tool_calls.is_empty()),
        None => assert!(r.tool_calls.is_empty() || all_json),
    }
    if api == Api::OpenaiResponses && completed_stop {
        let want = if over_ceiling {
            "length"
        } else if ended_in_tool_call {
            "tool_calls"
        } else {
            "stop"
        };
        assert_eq!(r.finish_reason.as_deref(), Some(want));
    }
    assert!(r.finish_reason.as_deref() != Some(""));
});

/// What one kept chunk carries agrees with its class.
fn check_chunk(chunk: &openbench_probe::classify::Chunk) {
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
        Classification::ToolCall => {
            assert!(chunk.tool_parts.iter().any(|p| p.has_text()));
            assert!(chunk.answer.is_empty());
        }
        _ => {}
    }
    // An event that ends a call (Anthropic's `content_block_stop`, Responses' `.done` events,
    // whose `arguments` repeat the whole call) never adds argument text again.
    assert!(
        chunk
            .tool_parts
            .iter()
            .all(|p| !p.closes || p.arguments.is_empty())
    );
    assert!(chunk.finish_reason.as_deref() != Some(""));
}

/// One JSON value, or empty (a call without input).
fn is_json(text: &str) -> bool {
    text.trim().is_empty() || serde_json::from_str::<serde_json::Value>(text).is_ok()
}
