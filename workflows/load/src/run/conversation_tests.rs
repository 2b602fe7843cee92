//! Conversations as the runner asks for them: a slot's turns carry the earlier turns verbatim,
//! a conversation ends after its turns or at a failed turn, and the user opens the next.

use super::*;
use crate::run::workload::Workload;
use crate::workload::synthetic::Synthetic;
use openbench_common::record::TerminalRecord;
use std::sync::Arc;

/// Closed step 1 of 2 users, 8-token synthetic prompts, conversations of 3 turns, think time
/// uniform over 100..=200 ms; seed 7.
fn source() -> ConversationSource {
    let workload = Arc::new(Workload::Synthetic(Synthetic {
        input_tokens: LengthDist::Fixed { tokens: 8 },
        output_tokens: LengthDist::Fixed { tokens: 4 },
        shared_prefix: None,
        seed: 7,
    }));
    let base = StepSource::closed(1, 2, vec![0], workload).with_lanes(vec![0], vec![false]);
    let conversation = Conversation {
        turns: LengthDist::Fixed { tokens: 3 },
        think_ms: Some(LengthDist::Uniform { min: 100, max: 200 }),
    };
    ConversationSource::new(base, conversation, 7, 1)
}

fn at(slot: u32, sequence: u64) -> LoadPosition {
    LoadPosition {
        phase: 1,
        lane: "p@local".into(),
        lane_index: 0,
        slot,
        sequence,
    }
}

fn send(next: Next) -> (RequestContent, f64) {
    match next {
        Next::Send { content, think_ms } => (content, think_ms),
        Next::Stop => panic!("the slot stopped"),
    }
}

/// The turn `request` left with `answer` and `outcome`.
fn turn(request: RequestContent, answer: &str, outcome: Outcome) -> Turn {
    let mut record = TerminalRecord::new("2026-12-06T00:00:00Z".into(), outcome);
    record.answer_text = answer.into();
    Turn { request, record }
}

#[test]
fn later_turns_carry_every_earlier_message_and_answer_verbatim() {
    let source = source();
    let (first, wait) = send(source.next(&at(1, 0), &[]));
    assert_eq!(wait, 0.0);
    assert_eq!(first, source.base.request(&at(1, 0)));
    let history = vec![turn(first.clone(), "answer one", Outcome::Completed)];
    let (second, think) = send(source.next(&at(1, 1), &history));
    let mut expected = first.messages.clone();
    expected.push(ChatMessage::text(Role::Assistant, "answer one".into()));
    expected.push(ChatMessage::text(
        Role::User,
        follow_up("synthetic", document(&first), 1).question,
    ));
    assert_eq!(second.messages, expected);
    assert_eq!(second.item_key, format!("{}/turn-1", first.item_key));
    assert!((100.0..=200.0).contains(&think), "think {think}");
    // The same question again: the same answer (a resume rebuilds it).
    assert_eq!(
        send(source.next(&at(1, 1), &history)),
        (second.clone(), think)
    );

    let mut history = history;
    history.push(turn(second.clone(), "answer two", Outcome::Completed));
    let (third, _) = send(source.next(&at(1, 2), &history));
    assert_eq!(third.messages.len(), second.messages.len() + 2);
    assert_eq!(third.messages[..second.messages.len()], second.messages[..]);
    assert_eq!(third.item_key, format!("{}/turn-2", first.item_key));

    // After 3 turns the user opens conversation 1: the step's request for sequence 1, at once.
    history.push(turn(third, "answer three", Outcome::Completed));
    assert_eq!(
        source.standing(&at(1, 3), &history),
        Standing {
            conversation: 1,
            turn: 0
        }
    );
    let (next, wait) = send(source.next(&at(1, 3), &history));
    assert_eq!((next, wait), (source.base.request(&at(1, 1)), 0.0));
}

#[test]
fn a_failed_turn_ends_its_conversation_and_the_user_opens_the_next() {
    let source = source();
    let (first, _) = send(source.next(&at(0, 0), &[]));
    let history = vec![
        turn(first.clone(), "fine", Outcome::Completed),
        turn(first.clone(), "", Outcome::HttpError),
    ];
    let (next, wait) = send(source.next(&at(0, 2), &history));
    // Not a third turn of conversation 0 built on the failure: conversation 1's first request.
    assert_eq!(next, source.base.request(&at(0, 1)));
    assert_eq!(next.messages.len(), first.messages.len());
    assert_eq!(wait, 0.0);
}

#[test]
fn meeting_note_follow_ups_ask_lines_of_the_note_with_their_gold() {
    let note = "Read the notes.\n\nMeeting notes: X\nFacilitator: Ada Lovelace\n\
                Notes taken by:  Alan Turing \nQuestion: who?";
    let first = follow_up(MEETING_NOTES, note, 1);
    assert_eq!(first.gold.as_deref(), Some("Alan Turing"));
    assert!(
        first.question.contains("who took the notes"),
        "{}",
        first.question
    );
    assert_eq!(
        follow_up(MEETING_NOTES, note, 2).gold.as_deref(),
        Some("Ada Lovelace")
    );
    assert_eq!(follow_up(MEETING_NOTES, note, 3).gold, first.gold);
    // Other families, or a note without the line: the unscored quote question.
    assert_eq!(follow_up("ticket-triage", note, 1).gold, None);
    assert_eq!(follow_up(MEETING_NOTES, "no lines", 2).gold, None);
}
