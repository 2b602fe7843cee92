//! The follow-up questions a conversation asks after its first turn, with their exact golds.
//!
//! Every task family asks about facts of the document its first turn sent (never repeated in
//! the question), so only the earlier context answers them: a meeting note's note-taker and
//! facilitator, a ticket thread's earlier resolution and the target ticket's requester, a
//! contract's Provider and Customer. Each gold is read from the document itself, so it is a pure
//! function of the dataset; any other document (or one without the line) gets the unscored
//! quote question.

use openbench_common::workflow::{CannedAnswer, WorkItem};
use openbench_tasks::dataset::canned::wrong_answer;
use openbench_tasks::dataset::{Category, Gold, Priority, TicketGold};

/// The meeting-notes family (`meeting-notes-lookup`).
pub const MEETING_NOTES: &str = "meeting-notes-lookup";
/// The ticket-triage family.
pub const TICKET_TRIAGE: &str = "ticket-triage";
/// The contract-extraction family.
pub const CONTRACTS: &str = "contract-terms-extraction";

/// The follow-up a conversation asks at turn `turn` (≥ 1), and its gold when it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowUp {
    /// The question, as the user message.
    pub question: String,
    /// The exact answer, read from the conversation's first message (the document): a
    /// name is a `{"answer": …}` gold (scored as a meeting note's answer is), a ticket's
    /// resolution a ticket gold.
    pub gold: Option<Gold>,
}

/// The instruction closing a question answered with a name, whatever the family's own form.
const NAME_FORM: &str = "This time answer with only a JSON object {\"answer\": \"<full name>\"}.";

/// The follow-up at turn `turn` (≥ 1) of a conversation whose turn 0 was `group`'s `document`
/// (its first user message). Odd and even turns ask different facts:
/// - meeting note: who took the notes (`Notes taken by:`), who facilitated (`Facilitator:`),
///   "in the same JSON form";
/// - ticket thread: how the first `[CONTEXT]` ticket was resolved (its `resolved as C/P`, in
///   the same JSON form), who opened the `[TARGET]` ticket (its `From:` name);
/// - contract: who the Provider is, who the Customer is (the names of the opening sentence).
///
/// Any other document, or one without the fact, is asked to quote the sentence the previous
/// answer rests on, which has no gold.
pub fn follow_up(group: &str, document: &str, turn: u64) -> FollowUp {
    let odd = turn % 2 == 1;
    let asked = match group {
        MEETING_NOTES => meeting_note(document, odd),
        TICKET_TRIAGE => ticket(document, odd),
        CONTRACTS => contract(document, odd),
        _ => None,
    };
    asked.unwrap_or_else(|| FollowUp {
        question: format!(
            "Follow-up {turn}: without repeating the question, quote word for word the one \
             sentence of the document above that your previous answer rests on."
        ),
        gold: None,
    })
}

fn meeting_note(document: &str, odd: bool) -> Option<FollowUp> {
    let (line, asked) = if odd {
        ("Notes taken by:", "who took the notes of this meeting")
    } else {
        ("Facilitator:", "who facilitated this meeting")
    };
    let answer = document
        .lines()
        .find_map(|l| l.strip_prefix(line))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())?;
    let title = document
        .lines()
        .find_map(|l| l.strip_prefix("Meeting notes:"))
        .map_or("", str::trim);
    Some(FollowUp {
        question: format!(
            "A follow-up about the same meeting notes ({title}): {asked}? Answer in the same \
             JSON form."
        ),
        gold: Some(Gold::MeetingNotes { answer }),
    })
}

/// A ticket thread: `[CONTEXT] Ticket #N, opened …, resolved as C/P` lines, and a
/// `[TARGET] Ticket #N` line followed by `From: NAME, CUSTOMER`.
fn ticket(document: &str, odd: bool) -> Option<FollowUp> {
    if odd {
        let (number, label) = document.lines().find_map(|l| {
            let rest = l.strip_prefix("[CONTEXT] Ticket #")?;
            let (number, _) = rest.split_once(',')?;
            let (_, label) = rest.rsplit_once(", resolved as ")?;
            Some((number, label))
        })?;
        let (category, priority) = label.trim().split_once('/')?;
        let gold = TicketGold {
            category: Category::parse(category)?,
            priority: Priority::parse(priority)?,
        };
        return Some(FollowUp {
            question: format!(
                "A follow-up about the same tickets: how was ticket #{number} resolved? Answer \
                 with its category and priority in the same JSON form."
            ),
            gold: Some(Gold::TicketTriage(gold)),
        });
    }
    let mut lines = document.lines();
    let number = lines
        .find_map(|l| l.strip_prefix("[TARGET] Ticket #"))?
        .trim();
    let from = lines.next()?.strip_prefix("From:")?;
    let name = from.split_once(',').map_or(from, |(name, _)| name).trim();
    (!name.is_empty()).then(|| FollowUp {
        question: format!(
            "A follow-up about the same tickets: who opened ticket #{number}, the one marked \
             [TARGET]? {NAME_FORM}"
        ),
        gold: Some(Gold::MeetingNotes {
            answer: name.to_string(),
        }),
    })
}

/// A contract's opening sentence: `This TITLE (the "Agreement") is made between PROVIDER, a …
/// ("Provider"), and CUSTOMER ("Customer"). It is effective as of DATE (the "Effective Date")`.
fn contract(document: &str, odd: bool) -> Option<FollowUp> {
    let title = between(document, "This ", " (the \"Agreement\")")?;
    let effective = between(document, "effective as of ", " (the \"Effective Date\")")?;
    let (party, name) = if odd {
        ("Provider", between(document, "is made between ", ", a ")?)
    } else {
        (
            "Customer",
            between(document, "(\"Provider\"), and ", " (\"Customer\")")?,
        )
    };
    let name = name.trim();
    (!name.is_empty()).then(|| FollowUp {
        question: format!(
            "A follow-up about the same agreement ({title}, effective {effective}): who is the \
             {party}? {NAME_FORM}"
        ),
        gold: Some(Gold::MeetingNotes {
            answer: name.to_string(),
        }),
    })
}

/// The text of `text` between the first `start` and the next `end` after it.
fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let (_, rest) = text.split_once(start)?;
    rest.split_once(end).map(|(inside, _)| inside)
}

/// The simulator's canned answers to the follow-ups (`answer_from_gold`), so a simulated
/// conversation can answer them right: for each item of a family with follow-ups, its two
/// questions with their gold and a schema-valid wrong answer (the family's canned wrong one).
pub fn canned_follow_ups(items: &[WorkItem]) -> Vec<CannedAnswer> {
    items
        .iter()
        .flat_map(|item| {
            (1..=2).filter_map(|turn| {
                let asked = follow_up(&item.group, &item.user, turn);
                let gold = asked.gold?;
                Some(CannedAnswer {
                    group: item.group.clone(),
                    user_prompt: asked.question,
                    correct: gold.to_json().to_string(),
                    incorrect: wrong_answer(&gold).to_string(),
                })
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "follow_up_tests.rs"]
mod tests;
