//! Follow-up questions and golds on documents in the datasets' exact shapes (parts of real
//! rows), each gold written here by reading the document.

use super::*;
use openbench_tasks::scoring::{GoldRef, score_answer};

/// Parts of `ce-0004`'s agreement (the contract release), amendment included.
const CONTRACT: &str = "Extract the contract terms from the agreement below.\n\nSAAS SUBSCRIPTION \
AGREEMENT\n\nThis SaaS Subscription Agreement (the \"Agreement\") is made between Juniper Bay \
Realty, a New York company (\"Provider\"), and Crestmoor Insurance (\"Customer\"). It is effective \
as of 9 May 2026 (the \"Effective Date\") and was signed by both parties on 26 April 2026.\n\n\
1. Scope. Provider grants Customer access to the hosted Keystone HR platform.\n\n\
AMENDMENT No. 1 (dated 18 October 2026)\nThe initial term is extended to end on 12 September \
2029 instead of 6 May 2029.\n";

/// `tt-0001`'s thread with its target second of three tickets.
const TICKETS: &str = "Triage the ticket marked [TARGET]. The other tickets come from the same \
customer and are shown for context only.\n\n[CONTEXT] Ticket #69071, opened March 14, 2027, \
resolved as bug/p1\nFrom: Ximena Abernathy, Millbrook Manufacturing\nSubject: dashboard filter \
panel duplicates every entry\nSince May 1, 2027, the panel duplicates every entry.\n\n[TARGET] \
Ticket #69428\nFrom: Joaquin Whitfield, Millbrook Manufacturing\nCustomer-selected severity: \
Normal\nSubject: report scheduler could be smoother\nNothing is broken.\n\n[CONTEXT] Ticket \
#69536, opened January 22, 2027, resolved as improvement/p2\nFrom: Ximena Gunawardena, \
Millbrook Manufacturing\nSubject: time-off approval flow could be smoother\nNothing is broken.\n";

fn name(answer: &str) -> Option<Gold> {
    Some(Gold::MeetingNotes {
        answer: answer.into(),
    })
}

/// Whether `answer` is right for the follow-up's gold, as the report scores it.
fn right(asked: &FollowUp, answer: &str) -> bool {
    let gold = GoldRef::from_gold(asked.gold.as_ref().unwrap(), &[]);
    score_answer(&gold, answer).correct
}

#[test]
fn meeting_note_follow_ups_ask_lines_of_the_note_with_their_gold() {
    let note = "Read the notes.\n\nMeeting notes: X\nFacilitator: Ada Lovelace\n\
                Notes taken by:  Alan Turing \nQuestion: who?";
    let first = follow_up(MEETING_NOTES, note, 1);
    assert_eq!(first.gold, name("Alan Turing"));
    assert!(
        first.question.contains("who took the notes"),
        "{}",
        first.question
    );
    assert_eq!(follow_up(MEETING_NOTES, note, 2).gold, name("Ada Lovelace"));
    assert_eq!(follow_up(MEETING_NOTES, note, 3), first);
    // A note without the line: the unscored quote question.
    assert_eq!(follow_up(MEETING_NOTES, "no lines", 2).gold, None);
}

#[test]
fn ticket_follow_ups_ask_the_first_context_resolution_then_the_target_requester() {
    let first = follow_up(TICKET_TRIAGE, TICKETS, 1);
    assert_eq!(
        first.gold,
        Some(Gold::TicketTriage(TicketGold {
            category: Category::Bug,
            priority: Priority::P1,
        }))
    );
    assert!(
        first.question.contains("ticket #69071 resolved"),
        "{}",
        first.question
    );
    assert!(right(&first, r#"{"category": "bug", "priority": "p1"}"#));
    // The target's own triage (improvement/p3) or the other context ticket's label: wrong.
    assert!(!right(
        &first,
        r#"{"category": "improvement", "priority": "p3"}"#
    ));
    assert!(!right(
        &first,
        r#"{"category": "improvement", "priority": "p2"}"#
    ));

    let second = follow_up(TICKET_TRIAGE, TICKETS, 2);
    assert_eq!(second.gold, name("Joaquin Whitfield"));
    assert!(second.question.contains("#69428"), "{}", second.question);
    assert!(right(&second, r#"{"answer": "joaquin  whitfield"}"#));
    assert!(!right(&second, r#"{"answer": "Ximena Abernathy"}"#));
    assert_eq!(follow_up(TICKET_TRIAGE, TICKETS, 4), second);

    // A thread without a context ticket asks the quote question at odd turns.
    let alone = &TICKETS[TICKETS.find("[TARGET] Ticket").unwrap()
        ..TICKETS.find("\n\n[CONTEXT] Ticket #69536").unwrap()];
    assert_eq!(follow_up(TICKET_TRIAGE, alone, 1).gold, None);
    assert_eq!(
        follow_up(TICKET_TRIAGE, alone, 2).gold,
        name("Joaquin Whitfield")
    );
}

#[test]
fn contract_follow_ups_ask_the_provider_then_the_customer() {
    let first = follow_up(CONTRACTS, CONTRACT, 1);
    assert_eq!(first.gold, name("Juniper Bay Realty"));
    assert!(
        first
            .question
            .contains("(SaaS Subscription Agreement, effective 9 May 2026)")
            && first.question.contains("who is the Provider?"),
        "{}",
        first.question
    );
    let second = follow_up(CONTRACTS, CONTRACT, 2);
    assert_eq!(second.gold, name("Crestmoor Insurance"));
    assert!(right(&second, r#"{"answer": "Crestmoor Insurance"}"#));
    // The family's own ten-key form is not the answer asked for.
    assert!(!right(
        &second,
        r#"{"agreement_type": "saas_subscription"}"#
    ));
    assert!(!right(&second, r#"{"answer": "Juniper Bay Realty"}"#));
    // Another family, or a document of another shape: the unscored quote question.
    assert_eq!(follow_up("synthetic", CONTRACT, 1).gold, None);
    assert_eq!(follow_up(CONTRACTS, TICKETS, 1).gold, None);
}

#[test]
fn canned_follow_ups_answer_each_items_two_questions_right_and_wrong() {
    let item = |group: &str, user: &str| WorkItem {
        group: group.into(),
        item_id: "i".into(),
        system: String::new(),
        user: user.into(),
        item_hash: String::new(),
    };
    let canned = canned_follow_ups(&[
        item(TICKET_TRIAGE, TICKETS),
        item(CONTRACTS, CONTRACT),
        item("synthetic", CONTRACT),
    ]);
    assert_eq!(canned.len(), 4);
    assert_eq!(
        canned[0].user_prompt,
        follow_up(TICKET_TRIAGE, TICKETS, 1).question
    );
    assert_eq!(canned[0].correct, r#"{"category":"bug","priority":"p1"}"#);
    assert_eq!(canned[1].correct, r#"{"answer":"Joaquin Whitfield"}"#);
    assert_eq!(canned[3].correct, r#"{"answer":"Crestmoor Insurance"}"#);
    for (c, turn) in canned.iter().zip([1, 2, 1, 2]) {
        let (group, document) = if c.group == TICKET_TRIAGE {
            (TICKET_TRIAGE, TICKETS)
        } else {
            (CONTRACTS, CONTRACT)
        };
        let asked = follow_up(group, document, turn);
        assert!(right(&asked, &c.correct), "{}", c.correct);
        assert!(!right(&asked, &c.incorrect), "{}", c.incorrect);
    }
}
