//! Where a load phase's requests come from: the seam between the coordinator, which decides
//! *when* a slot sends, and the workflow, which decides *what* it sends.
//!
//! A slot is a sequence of requests on one lane (a closed-loop user; in an open loop, each
//! release). Before each request of a slot, the coordinator asks the phase's [`RequestSource`]
//! for it with the slot's own earlier [`Turn`]s (what each asked and the record it left), and the
//! source answers [`Next::Send`] (the request, and a think time to wait before sending it) or
//! [`Next::Stop`] (this slot sends nothing more). So a slot can be a conversation: turn k carries
//! turns 0..k and their answers, and a failed turn can end it.
//!
//! The answer must be a pure function of the position and the history: a resumed sitting
//! rebuilds each slot's history from the committed records on disk (asking the source again for
//! every committed turn, in order) and so plans the same ids and the same content.

use super::LoadPosition;
use crate::record::TerminalRecord;
use crate::request::{ChatMessage, OutputLength};

/// The content of one load request, from its workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestContent {
    /// Group of the item (micro-single-task calls it the task family), for reports.
    pub group: String,
    /// Opaque key of the item the request was built from.
    pub item_key: String,
    /// The messages, in order.
    pub messages: Vec<ChatMessage>,
    /// The request's own output length, when the workflow sets one.
    pub output: Option<OutputLength>,
    /// The tools the request offers (an agent's step); empty for none. The coordinator passes
    /// them to [`crate::request::PlannedRequest::tools`].
    pub tools: Vec<crate::tool::ToolOffer>,
}

/// One earlier request of a slot, as its source sees it: what it asked and the committed record
/// it left (the visible answer in `answer_text`, `outcome` and `error_type`, `tool_calls`,
/// `usage`, timings).
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The request as it was sent.
    pub request: RequestContent,
    /// Its committed terminal record.
    pub record: TerminalRecord,
}

/// What a slot does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Send `content` once `think_ms` have passed since the slot's previous request was terminal
    /// (for the slot's first request in a sitting: since its phase started). The think time is
    /// the source's plan (a pure, seeded function), never part of the request's latency; the
    /// record keeps it (`think_ms`). An open loop's releases are its schedule: there it is 0.
    Send {
        /// The request.
        content: RequestContent,
        /// Planned wait before sending it, ms (0: at once).
        think_ms: f64,
    },
    /// The slot sends nothing more in this phase (a conversation ended, or a failed turn ended
    /// it).
    Stop,
}

/// Builds a load phase's requests on demand.
///
/// A source that ignores history implements [`RequestSource::request`] only: every slot then
/// sends what it did before the seam existed, with no think time and the same ids. A source that
/// reads history also implements [`RequestSource::next`] and returns `true` from
/// [`RequestSource::reads_history`].
pub trait RequestSource: Send + Sync {
    /// The content of the request at `position` for a slot with no history (a pure function of
    /// it, so a resume rebuilds the same request).
    fn request(&self, position: &LoadPosition) -> RequestContent;

    /// What the slot at `position` does next, given its earlier turns in this phase (in order;
    /// empty unless [`RequestSource::reads_history`]). By default: send
    /// [`RequestSource::request`] at once.
    fn next(&self, position: &LoadPosition, history: &[Turn]) -> Next {
        let _ = history;
        Next::Send {
            content: self.request(position),
            think_ms: 0.0,
        }
    }

    /// True when [`RequestSource::next`] reads the history. The coordinator then keeps each
    /// slot's turns, rebuilds them from the committed records on a resume, and ends a slot for
    /// the sitting at a turn that left no committed record (a harness record: that turn is sent
    /// again on the resume, so no later turn may be built on it). Such a phase may stop its
    /// slots early, so it is finished when it ran to its end, like a timed one
    /// ([`super::LoadPhase::is_timed`]).
    fn reads_history(&self) -> bool {
        false
    }
}

impl std::fmt::Debug for dyn RequestSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestSource")
    }
}
