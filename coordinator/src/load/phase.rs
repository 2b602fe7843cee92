//! What every lane task of a load phase shares, and how a slot asks its source for its next
//! request: the phase's identity and clocks, each lane's target, and the replay of a slot's
//! committed turns (so a resumed slot's history, ids and content are the ones it had).

use crate::lane_guard::LaneGuard;
use crate::replicas::ReplicaLink;
use openbench_common::record::{Execution, TerminalRecord};
use openbench_common::request::{PlannedRequest, RequestIdentity};
use openbench_common::rundir::Lane;
use openbench_common::schedule::{
    LoadPosition, Next, RequestContent, RequestSource, Turn, load_request_id,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// What every lane task of a phase shares.
pub(super) struct Shared {
    pub version: String,
    pub run_id: String,
    pub attempt: u32,
    pub index: u32,
    /// The phase's load, carried by every request into its spans and metrics.
    pub load: String,
    pub deadline_ms: u64,
    pub wait: Duration,
    pub source: Arc<dyn RequestSource>,
    /// Request ids already committed (skipped).
    pub committed: BTreeSet<String>,
    /// The committed records of this phase, by request id: kept only when the source reads
    /// history, to rebuild each slot's turns.
    pub records: BTreeMap<String, TerminalRecord>,
    /// Offset 0 of the phase (an open loop's first release; the release lead after the phase
    /// began, so that release too can be handed over early).
    pub start: Instant,
    /// `start` on the coordinator's wall clock.
    pub start_wall: SystemTime,
    /// How early an open-loop request is handed to its probe (zero for closed loops).
    pub lead: Duration,
    /// The sitting's number, stamped on every record.
    pub sitting: u32,
}

/// One lane of the phase: where its requests go.
#[derive(Clone)]
pub(super) struct LaneTarget {
    pub lane: Lane,
    pub lane_index: usize,
    /// Its region's probe, or each of its replicas, which share its requests
    /// ([`crate::replicas`]).
    pub probes: Arc<[ReplicaLink]>,
    pub model: String,
    /// Backs the lane off, and stops it, when its requests fail at connection level.
    pub guard: Arc<LaneGuard>,
}

/// A slot's next request to send.
pub(super) struct Outgoing {
    pub request: PlannedRequest,
    /// What it asks, kept for the slot's history when the source reads it.
    pub content: Option<RequestContent>,
    /// The think time its source planned before it.
    pub think: Duration,
    /// The same, in ms, for its record (`None`: none planned).
    pub think_ms: Option<f64>,
}

/// One slot's walk through its sequence numbers: where it is and the turns it has had.
pub(super) struct SlotCursor {
    pub slot: u32,
    /// The next sequence number to ask for.
    pub sequence: u64,
    /// The sequence number it may not reach.
    pub end: u64,
    /// Its turns so far (kept only when the source reads history).
    pub history: Vec<Turn>,
}

impl SlotCursor {
    /// A slot at its first request, sending at most `end` requests.
    pub fn new(slot: u32, sequence: u64, end: u64) -> SlotCursor {
        SlotCursor {
            slot,
            sequence,
            end,
            history: Vec::new(),
        }
    }
}

impl Shared {
    /// The slot's next request to send, or `None` when it has none (its end is reached or its
    /// source stopped it). Committed requests on the way are skipped; when the source reads
    /// history, each is asked for again and joins the history with its committed record, so a
    /// resume rebuilds the turns (and from them the ids and content) the slot had.
    pub fn next_request(&self, target: &LaneTarget, cursor: &mut SlotCursor) -> Option<Outgoing> {
        let reads = self.source.reads_history();
        while cursor.sequence < cursor.end {
            let position = LoadPosition {
                phase: self.index,
                lane: target.lane.label.clone(),
                lane_index: target.lane_index,
                slot: cursor.slot,
                sequence: cursor.sequence,
            };
            let request_id = load_request_id(&self.version, &position, self.attempt);
            let committed = self.committed.contains(&request_id);
            if committed && !reads {
                cursor.sequence += 1;
                continue;
            }
            let Next::Send { content, think_ms } = self.source.next(&position, &cursor.history)
            else {
                return None;
            };
            if committed {
                let record = self.records.get(&request_id)?.clone();
                cursor.history.push(Turn {
                    request: content,
                    record,
                });
                cursor.sequence += 1;
                continue;
            }
            // A think time no clock can reach ends the slot, as an unreachable release does.
            let think = Duration::try_from_secs_f64(think_ms.max(0.0) / 1000.0).ok()?;
            let request = self.planned(target, &position, request_id, content.clone());
            return Some(Outgoing {
                request,
                content: reads.then_some(content),
                think,
                think_ms: (think_ms > 0.0).then_some(think_ms),
            });
        }
        None
    }

    /// Notes the end of the slot's request `sent` (its `execution`): the slot moves on, and a
    /// source that reads history gets the turn. False when the slot must stop for the sitting:
    /// its source reads history and the turn left no committed record (it is sent again on the
    /// resume, so no later turn may be built on it).
    pub fn settle(
        &self,
        cursor: &mut SlotCursor,
        sent: Option<RequestContent>,
        execution: &Execution,
    ) -> bool {
        cursor.sequence += 1;
        let Some(request) = sent else {
            return true;
        };
        if !execution.record.outcome.is_committed() {
            return false;
        }
        cursor.history.push(Turn {
            request,
            record: execution.record.clone(),
        });
        true
    }

    fn planned(
        &self,
        target: &LaneTarget,
        position: &LoadPosition,
        request_id: String,
        content: RequestContent,
    ) -> PlannedRequest {
        let lane = &target.lane;
        PlannedRequest {
            identity: RequestIdentity {
                run_id: self.run_id.clone(),
                // A load request is named by its phase, not a round.
                round_id: String::new(),
                request_id,
                round_index: u64::from(self.index),
                attempt: self.attempt,
                task_family: content.group,
                item_id: content.item_key,
                provider: lane.provider.clone(),
                region: lane.region.clone(),
                lane: lane.label.clone(),
                phase: Some(self.index),
                slot: Some(position.slot),
                sequence: Some(position.sequence),
            },
            messages: content.messages,
            deadline_ms: self.deadline_ms,
            output: content.output,
            load: Some(self.load.clone()),
            tool: None,
            tools: content.tools,
        }
    }
}
