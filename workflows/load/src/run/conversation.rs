//! A closed step's users holding conversations (`conversation:` on a `closed` step).
//!
//! A user (a closed-loop slot) holds one conversation after another until the step's time or
//! count runs out. Conversation c of a slot opens with the step's own request for sequence c
//! (the workload's prompt, so users and conversations ask different documents); each later turn
//! re-sends every earlier message and the model's answers verbatim and asks one follow-up that
//! only the earlier context answers (the document is not repeated). A conversation ends after its
//! drawn number of turns, or at its first turn that did not complete (no further request in it):
//! the user then opens the next conversation at once. Everything is a pure function of the
//! position and the slot's history, so a resume rebuilds the same conversations.

use super::follow_up::follow_up;
use super::workload::StepSource;
use crate::spec::{Conversation, LengthDist};
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::request::{ChatMessage, Role};
use openbench_common::rng::Stream;
use openbench_common::schedule::{LoadPosition, Next, RequestContent, RequestSource, Turn};
use openbench_common::tokenizer::count_tokens;
use std::collections::HashMap;

/// Marks a follow-up turn's item key (`KEY/turn-2`): it has no gold and is not scored.
pub const TURN_MARK: &str = "/turn-";

/// The first user message of `content` (the document a conversation is about).
pub fn document(content: &RequestContent) -> &str {
    content
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map_or("", |m| m.content.as_str())
}

/// A step's request source when its users hold conversations.
#[derive(Debug, Clone)]
pub struct ConversationSource {
    /// The step's own source: conversation c's first turn is its request for sequence c.
    base: StepSource,
    /// The spec's conversations.
    conversation: Conversation,
    /// The section's seed.
    seed: u64,
    /// The step's index (keys the draws).
    step: usize,
    /// An open loop: each release (slot) is one conversation, which stops when it ends.
    open: bool,
}

/// Where a slot stands in its conversations after its history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    /// The conversation the next request belongs to (0-based, per slot).
    pub conversation: u64,
    /// Its turn (0: the next request opens it).
    pub turn: u64,
}

impl ConversationSource {
    /// Conversations over `base`'s requests.
    pub fn new(
        base: StepSource,
        conversation: Conversation,
        seed: u64,
        step: usize,
    ) -> ConversationSource {
        ConversationSource {
            base,
            conversation,
            seed,
            step,
            open: false,
        }
    }

    /// The same conversations in an open loop: release k (slot k) opens one, with the step's
    /// request for release k, and the slot stops when it ends (no next conversation).
    pub fn open(mut self) -> ConversationSource {
        self.open = true;
        self
    }

    /// Turns of conversation `c` of the slot at `at`: drawn from the stream (seed,
    /// `conversation-turns`, step, lane, slot, c).
    pub fn turns(&self, at: &LoadPosition, c: u64) -> u64 {
        u64::from(self.draw(&self.conversation.turns, "conversation-turns", at, c))
    }

    /// Think time before the request at `at` (a later turn), ms: drawn from the stream (seed,
    /// `think`, step, lane, slot, sequence); 0 without `think_ms`.
    pub fn think_ms(&self, at: &LoadPosition) -> f64 {
        self.conversation
            .think_ms
            .as_ref()
            .map_or(0.0, |d| f64::from(self.draw(d, "think", at, at.sequence)))
    }

    fn draw(&self, dist: &LengthDist, what: &str, at: &LoadPosition, n: u64) -> u32 {
        let keys = [
            what.to_string(),
            self.step.to_string(),
            at.lane.clone(),
            at.slot.to_string(),
            n.to_string(),
        ];
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        dist.draw(&mut Stream::derive(self.seed, &keys))
    }

    /// Where the slot at `at` stands after `history`: a conversation ends after its drawn
    /// turns or at a turn that did not complete.
    pub fn standing(&self, at: &LoadPosition, history: &[Turn]) -> Standing {
        let mut now = Standing {
            conversation: 0,
            turn: 0,
        };
        for turn in history {
            let ended = turn.record.outcome != Outcome::Completed
                || now.turn + 1 >= self.turns(at, now.conversation);
            now = if ended {
                Standing {
                    conversation: now.conversation + 1,
                    turn: 0,
                }
            } else {
                Standing {
                    turn: now.turn + 1,
                    ..now
                }
            };
        }
        now
    }
}

/// What one record of a conversation step sent, rebuilt by [`ConversationSource::replay`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Its turn within its conversation.
    pub turn: u64,
    /// o200k tokens of every message it sent (the context length).
    pub context_tokens: u64,
}

impl ConversationSource {
    /// What every record of phase `phase` sent, by request id: each slot's turns replayed in
    /// sequence order as a resume rebuilds them (`lane_index` gives a lane label's place).
    pub fn replay(
        &self,
        phase: u32,
        lane_index: impl Fn(&str) -> Option<usize>,
        records: &[&TerminalRecord],
    ) -> HashMap<String, Sent> {
        let mut out = HashMap::new();
        for slot in super::slot_replay::slots_in_order(phase, lane_index, records) {
            let mut history: Vec<Turn> = Vec::new();
            for (at, r) in slot {
                let turn = self.standing(&at, &history).turn;
                let Next::Send { content, .. } = self.next(&at, &history) else {
                    break;
                };
                let context_tokens = content
                    .messages
                    .iter()
                    .map(|m| count_tokens(&m.content) as u64)
                    .sum();
                out.insert(
                    r.request_id.clone(),
                    Sent {
                        turn,
                        context_tokens,
                    },
                );
                history.push(Turn {
                    request: content,
                    record: (*r).clone(),
                });
            }
        }
        out
    }
}

impl RequestSource for ConversationSource {
    fn request(&self, at: &LoadPosition) -> RequestContent {
        self.base.request(at)
    }

    fn next(&self, at: &LoadPosition, history: &[Turn]) -> Next {
        let now = self.standing(at, history);
        let last = history.last().filter(|_| now.turn > 0);
        let Some(last) = last else {
            if self.open {
                // Release k's conversation: the step's request for release k, at its release;
                // once it ended, the slot stops.
                if now.conversation > 0 {
                    return Next::Stop;
                }
                return Next::Send {
                    content: self.base.request(&super::slot_replay::release_opening(at)),
                    think_ms: 0.0,
                };
            }
            // A new conversation: the step's request for its number, after the ramp for the
            // user's first one.
            let opening = LoadPosition {
                sequence: now.conversation,
                ..at.clone()
            };
            let think_ms = if at.sequence == 0 {
                self.base.wait_ms(at)
            } else {
                0.0
            };
            return Next::Send {
                content: self.base.request(&opening),
                think_ms,
            };
        };
        let mut content = last.request.clone();
        let key = match content.item_key.find(TURN_MARK) {
            Some(cut) => &content.item_key[..cut],
            None => &content.item_key[..],
        };
        content.item_key = format!("{key}{TURN_MARK}{}", now.turn);
        content.messages.push(ChatMessage::text(
            Role::Assistant,
            last.record.answer_text.clone(),
        ));
        let question = follow_up(&content.group, document(&content), now.turn).question;
        content
            .messages
            .push(ChatMessage::text(Role::User, question));
        Next::Send {
            content,
            think_ms: self.think_ms(at),
        }
    }

    fn reads_history(&self) -> bool {
        true
    }
}

#[cfg(test)]
#[path = "conversation_tests.rs"]
mod tests;
