//! Whether a conversation stays on its cache across turns.
//!
//! After the trials, each lane holds one conversation of `conversation_turns` turns (a phase of
//! its own, one release per lane at the phase's start). Turn 0 sends a new tagged prefix of
//! `prefix_tokens` and asks for a word of it; turn k re-sends turn k − 1's messages verbatim,
//! the model's answer to it, and asks for another word, `conversation_think_s` after turn
//! k − 1 ended. A conversation ends at its last turn or at a turn that did not complete.
//!
//! A provider that keeps the conversation on its cache serves turn k's repeat of turn k − 1
//! from it: turn k's **reuse** is its cached tokens ÷ turn k − 1's prompt tokens (both from
//! usage), about 1 when kept (less the provider's unit of caching: a partial last block is not
//! cached), 0 without a cache, and a fraction when the cache cannot hold the conversation.
//! The conversation **stays on its cache** when every later turn's reuse is at least ½ (the
//! hit rule of the trials); unknown when no later turn has a reuse (usage without a cached
//! count, or failed turns).

use crate::plan::{corpus_words, tagged_prefix};
use crate::section::CacheProbeSection;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::request::{ChatMessage, OutputLength, Role};
use openbench_common::schedule::{LoadPosition, Next, RequestContent, RequestSource, Turn};
use serde::{Deserialize, Serialize};

/// The group of the conversation's requests.
pub const GROUP: &str = "cache-probe-conversation";

/// The item key of turn `turn` (`conversation/turn-2`).
pub fn item_key(turn: u64) -> String {
    format!("conversation/turn-{turn}")
}

/// The turn an item key names, when it is a conversation's.
pub fn parse_item_key(key: &str) -> Option<u64> {
    key.strip_prefix("conversation/turn-")?.parse().ok()
}

/// The question of turn `turn`: a word of the prefix, so every answer is short.
fn question(turn: u64) -> String {
    format!(
        "\n\nReply with the JSON object {{\"word\": <word number {} of the text above>}}.",
        turn + 1
    )
}

/// Builds each lane's conversation from its earlier turns.
pub struct ConversationProbe {
    corpus: Vec<String>,
    run_id: String,
    prefix_chars: usize,
    max_output_tokens: u32,
    turns: u64,
    think_ms: f64,
}

impl ConversationProbe {
    /// The conversations of a run `run_id` over `corpus` under `section`.
    pub fn new(section: &CacheProbeSection, corpus: &str, run_id: &str) -> ConversationProbe {
        ConversationProbe {
            corpus: corpus_words(corpus),
            run_id: run_id.to_string(),
            prefix_chars: section.prefix_tokens as usize * 4,
            max_output_tokens: section.max_output_tokens,
            turns: u64::from(section.conversation_turns),
            think_ms: section.conversation_think_s * 1000.0,
        }
    }
}

impl RequestSource for ConversationProbe {
    /// Turn 0 on the lane: a prefix tagged with the run, the lane and `c` (no trial's tag),
    /// then the question.
    fn request(&self, at: &LoadPosition) -> RequestContent {
        let tag = format!("{} {} c", self.run_id, at.lane);
        let mut content = tagged_prefix(&self.corpus, &tag, 3, self.prefix_chars);
        content.push_str(&question(0));
        RequestContent {
            group: GROUP.to_string(),
            item_key: item_key(0),
            messages: vec![ChatMessage::text(Role::User, content)],
            tools: Vec::new(),
            output: Some(OutputLength {
                max_tokens: self.max_output_tokens,
                ignore_eos: false,
            }),
        }
    }

    fn next(&self, at: &LoadPosition, history: &[Turn]) -> Next {
        let Some(last) = history.last() else {
            return Next::Send {
                content: self.request(at),
                think_ms: 0.0,
            };
        };
        let turn = history.len() as u64;
        if turn >= self.turns || last.record.outcome != Outcome::Completed {
            return Next::Stop;
        }
        let mut content = last.request.clone();
        content.item_key = item_key(turn);
        content.messages.push(ChatMessage::text(
            Role::Assistant,
            last.record.answer_text.clone(),
        ));
        content.messages.push(ChatMessage::text(
            Role::User,
            question(turn).trim_start().to_string(),
        ));
        Next::Send {
            content,
            think_ms: self.think_ms,
        }
    }

    fn reads_history(&self) -> bool {
        true
    }
}

/// One turn of a lane's conversation, from its record's usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnFigures {
    /// 0-based turn.
    pub turn: u64,
    /// Whether it completed.
    pub completed: bool,
    /// TTFA, ms.
    pub ttfa_ms: Option<f64>,
    /// Prompt tokens (usage).
    pub prompt_tokens: Option<u64>,
    /// Cached prompt tokens (usage).
    pub cached_tokens: Option<u64>,
    /// The previous turn's prompt tokens (turn ≥ 1).
    pub previous_prompt_tokens: Option<u64>,
    /// cached ÷ previous prompt (turn ≥ 1, both known, the previous one above 0).
    pub reuse: Option<f64>,
}

/// A lane's conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationFigures {
    /// Its turns in order.
    pub turns: Vec<TurnFigures>,
    /// Every later turn reused at least half the previous turn's prompt; `None` when no later
    /// turn has a reuse.
    pub stays_on_cache: Option<bool>,
}

/// The conversation figures of one lane's conversation records (item keys
/// [`item_key`]); `None` without any.
pub fn conversation_figures(records: &[&TerminalRecord]) -> Option<ConversationFigures> {
    let mut mine: Vec<(u64, &TerminalRecord)> = records
        .iter()
        .filter_map(|r| Some((parse_item_key(&r.item_id)?, *r)))
        .collect();
    if mine.is_empty() {
        return None;
    }
    mine.sort_by_key(|(turn, _)| *turn);
    let mut turns: Vec<TurnFigures> = Vec::new();
    for (turn, r) in mine {
        let completed = r.outcome == Outcome::Completed;
        let usage = r.usage.as_ref().filter(|_| completed);
        let prompt_tokens = usage.and_then(|u| u.prompt_tokens);
        let cached_tokens = usage.and_then(|u| u.cached_tokens);
        let previous_prompt_tokens = turns
            .last()
            .filter(|p| p.turn + 1 == turn)
            .and_then(|p| p.prompt_tokens);
        let reuse = cached_tokens
            .zip(previous_prompt_tokens.filter(|p| *p > 0))
            .map(|(c, p)| c as f64 / p as f64);
        turns.push(TurnFigures {
            turn,
            completed,
            ttfa_ms: r.ttfa_ms.filter(|_| completed),
            prompt_tokens,
            cached_tokens,
            previous_prompt_tokens,
            reuse,
        });
    }
    let reuses: Vec<f64> = turns.iter().filter_map(|t| t.reuse).collect();
    let stays_on_cache = (!reuses.is_empty()).then(|| reuses.iter().all(|r| *r >= 0.5));
    Some(ConversationFigures {
        turns,
        stays_on_cache,
    })
}

/// The report's section of one lane's conversation: a line saying whether it stayed on its
/// cache, then a table of its turns.
pub fn markdown(c: &ConversationFigures) -> String {
    let verdict = match c.stays_on_cache {
        Some(true) => {
            "stays on its cache (every later turn reused at least half the previous prompt)"
        }
        Some(false) => {
            "does not stay on its cache (a later turn reused under half the previous prompt)"
        }
        None => "cache use unknown (no later turn reported cached tokens)",
    };
    let num = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let mut out = format!(
        "Conversation: {verdict}.\n\n| turn | prompt | cached | previous prompt | reuse | TTFA (ms) |\n\
         |---:|---:|---:|---:|---:|---:|\n"
    );
    for t in &c.turns {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            t.turn,
            num(t.prompt_tokens),
            num(t.cached_tokens),
            num(t.previous_prompt_tokens),
            t.reuse
                .map_or("-".to_string(), |r| format!("{:.0}%", r * 100.0)),
            t.ttfa_ms.map_or("-".to_string(), |v| format!("{v:.1}")),
        ));
    }
    out.push('\n');
    out
}

#[cfg(test)]
#[path = "conversation_tests.rs"]
mod tests;
