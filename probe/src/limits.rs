//! Applying `request.limits` to a stream as it is read (METHODOLOGY §4, "Stream limits").
//!
//! The decoder refuses long lines and large events itself ([`crate::sse`]); this module counts
//! events and kept text against the same limits and says how a request that passed one ends.
//! A chunk that would pass a limit is not kept: what was read before it is.

use crate::classify::Chunk;
use crate::record::{Ending, StreamState};
use openbench_common::limits::{GRPC_MESSAGE_LIMIT_BYTES, StreamLimits};
use openbench_common::record::{ErrorType, Execution};

/// The ending of a stream that already holds `limits.events` events and is about to get one
/// more (comments count).
pub fn over_events(state: &StreamState, limits: &StreamLimits) -> Option<Ending> {
    (state.events.len() as u64 >= limits.events).then(|| Ending::Transport {
        error_type: ErrorType::LimitEvents,
        message: format!(
            "more than {} events (comments included) in one response",
            limits.events
        ),
    })
}

/// The ending of a stream whose answer or reasoning text would pass `limits.answer_bytes` with
/// `chunk` added.
pub fn over_text(state: &StreamState, chunk: &Chunk, limits: &StreamLimits) -> Option<Ending> {
    let over = |held: usize, more: usize| (held.saturating_add(more)) as u64 > limits.answer_bytes;
    let which = if over(state.answer_len(), chunk.answer.len()) {
        "answer"
    } else if over(state.reasoning_len(), chunk.reasoning.len()) {
        "reasoning"
    } else if over(state.tool_len(), chunk.tool_call.len()) {
        "tool-call"
    } else {
        return None;
    };
    Some(Ending::Transport {
        error_type: ErrorType::LimitAnswerBytes,
        message: format!(
            "{which} text longer than the {}-byte limit",
            limits.answer_bytes
        ),
    })
}

/// The most bytes an execution's JSON may take in an `Execute` answer: the message limit less
/// room for the rest of the message.
pub const RECORD_WITHIN_BYTES: usize = GRPC_MESSAGE_LIMIT_BYTES - 64 * 1024;

/// The execution as JSON of at most `max_bytes`. The stream limits keep every execution far
/// below the gRPC message limit (`StreamLimits::worst_case_record_bytes`); should one still be
/// larger, the last events are left out (and then the texts), and the record's `error_message`
/// says so: the record always crosses the hop instead of failing as a harness error.
pub fn encode_within(execution: &mut Execution, max_bytes: usize) -> serde_json::Result<String> {
    let json = serde_json::to_string(&*execution)?;
    if json.len() <= max_bytes {
        return Ok(json);
    }
    let total = execution.events.len();
    let mut keep = total;
    let mut json = json;
    while json.len() > max_bytes && keep > 0 {
        keep /= 2;
        execution.events.truncate(keep);
        json = serde_json::to_string(&*execution)?;
    }
    let mut note = format!(
        "{} of {total} events left out: the execution was over the {max_bytes}-byte message limit",
        total - keep
    );
    if json.len() > max_bytes {
        execution.record.answer_text.clear();
        execution.record.reasoning_text.clear();
        note.push_str("; answer and reasoning texts left out too");
    }
    let message = execution
        .record
        .error_message
        .get_or_insert_with(String::new);
    if !message.is_empty() {
        message.push_str("; ");
    }
    message.push_str(&note);
    serde_json::to_string(&*execution)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::classify_json;
    use std::time::Duration;

    fn answer(text: &str) -> Chunk {
        classify_json(&serde_json::json!({"choices": [{"delta": {"content": text}}]}))
    }

    #[test]
    fn the_event_limit_counts_comments_and_allows_exactly_the_limit() {
        let limits = StreamLimits {
            events: 3,
            ..StreamLimits::default()
        };
        let mut state = StreamState::default();
        for _ in 0..3 {
            assert_eq!(over_events(&state, &limits), None);
            state.push_comment(Duration::ZERO);
        }
        let ending = over_events(&state, &limits).unwrap();
        assert!(matches!(
            ending,
            Ending::Transport {
                error_type: ErrorType::LimitEvents,
                ..
            }
        ));
    }

    #[test]
    fn an_execution_over_the_message_limit_sheds_events_and_says_so() {
        let mut state = StreamState::default();
        for _ in 0..100 {
            state.push_chunk(Duration::ZERO, None, answer(&"x".repeat(1000)));
        }
        let record = openbench_common::record::TerminalRecord::new(
            String::new(),
            openbench_common::record::Outcome::Completed,
        );
        let mut execution = crate::record::finalize(
            record,
            state,
            crate::record::Exchange::default(),
            &Ending::Completed,
        );
        let small = serde_json::to_string(&execution).unwrap();
        assert!(small.len() > 200_000);
        // Under the limit: unchanged.
        assert_eq!(encode_within(&mut execution, 1 << 20).unwrap(), small);
        // Over it: fits, keeps the record, names the loss.
        let json = encode_within(&mut execution, 150_000).unwrap();
        assert!(json.len() <= 150_000, "{}", json.len());
        assert_eq!(execution.events.len(), 25);
        assert_eq!(execution.record.event_count, 100);
        assert_eq!(
            execution.record.error_message.as_deref(),
            Some("75 of 100 events left out: the execution was over the 150000-byte message limit")
        );
    }

    #[test]
    fn no_session_limits_can_make_a_record_the_message_cut_applies_to() {
        // An in-process caller gets the execution uncut (service.rs): equal to what a network
        // caller decodes only because the largest limits a session may set stay within the cut.
        let worst = openbench_common::limits::MAX_LIMITS.worst_case_record_bytes();
        assert!(worst <= RECORD_WITHIN_BYTES as u64, "{worst}");
    }

    #[test]
    fn long_event_names_and_finish_reasons_are_kept_cut_to_32_characters() {
        let long = "é".repeat(40);
        let chunk =
            classify_json(&serde_json::json!({"choices": [{"delta": {}, "finish_reason": long}]}));
        let mut state = StreamState::default();
        state.push_chunk(Duration::ZERO, Some("n".repeat(33)), chunk);
        let event = &state.events[0];
        assert_eq!(event.event.as_deref(), Some("n".repeat(32).as_str()));
        assert_eq!(
            event.finish_reason.as_deref(),
            Some("é".repeat(32).as_str())
        );
        assert_eq!(
            state.finish_reason.as_deref(),
            Some("é".repeat(32).as_str())
        );
    }

    #[test]
    fn answer_text_may_reach_the_limit_but_not_pass_it() {
        let limits = StreamLimits {
            answer_bytes: 6,
            ..StreamLimits::default()
        };
        let mut state = StreamState::default();
        state.push_chunk(Duration::ZERO, None, answer("abcd"));
        assert_eq!(over_text(&state, &answer("ef"), &limits), None);
        let ending = over_text(&state, &answer("efg"), &limits).unwrap();
        assert_eq!(
            ending,
            Ending::Transport {
                error_type: ErrorType::LimitAnswerBytes,
                message: "answer text longer than the 6-byte limit".into(),
            }
        );
    }
}
