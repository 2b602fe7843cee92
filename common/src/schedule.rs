//! What a workflow plans and the coordinator executes: a run's schedule, as ordered phases.
//!
//! A phase is one of three kinds, each a way of deciding *when* a lane sends its next request:
//! - [`PairedRounds`]: every lane gets the same request per round, released together through one
//!   gate, the next round only when every lane of this one is terminal (micro-single-task).
//! - [`OpenLoop`]: each lane sends its requests at offsets from the phase's start that the
//!   workflow planned (its own arrival process), whatever the provider does; each request
//!   carries its scheduled offset so `send_lag = actual − scheduled` can be measured.
//! - [`ClosedLoop`]: each lane keeps its slots busy; a slot sends its next request when its
//!   previous one is terminal, until a count of requests per slot or until a time.
//!
//! Requests are built when they are due, never materialised up front: paired rounds from the
//! shared plan ([`RoundPrompts`]), open and closed loops from a [`RequestSource`], which sees the
//! slot's earlier turns and may plan a think time or stop the slot ([`source`]). Every request
//! id is a pure function of the schedule version, the lane, the phase and the request's place in
//! it, so a resume plans the same ids and skips those already committed.

mod source;

pub use source::{Next, RequestContent, RequestSource, Turn};

use crate::hash::short_id;
use crate::request::ChatMessage;
use crate::rundir::{Lane, Plan, PlannedRound};
use crate::spec::Spec;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A run's (or a smoke attempt's) schedule: phases executed one after another.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The schedule version feeding every id (the spec's `benchmark.schedule_version`).
    pub version: String,
    /// 0 for a full run; N for smoke attempt N.
    pub attempt: u32,
    /// Phases in execution order.
    pub phases: Vec<Phase>,
}

/// One phase of a schedule.
#[derive(Debug, Clone)]
pub enum Phase {
    /// Barrier-paired rounds.
    PairedRounds(PairedRounds),
    /// Requests released at planned times.
    OpenLoop(LoadPhase),
    /// Slots that send the next request when one ends.
    ClosedLoop(LoadPhase),
}

/// Paired rounds: the plan (every round's lanes in launch order and their ids) and where each
/// round's messages come from.
#[derive(Debug, Clone)]
pub struct PairedRounds {
    /// The plan, written as the attempt's plan file when it is the schedule's only phase.
    pub plan: Arc<Plan>,
    /// The messages of each round, built when the round is prepared.
    pub prompts: Arc<dyn RoundPrompts>,
}

/// Where a paired round's messages come from (one message list per round, sent to every lane).
pub trait RoundPrompts: Send + Sync {
    /// Why `round` cannot be built (its item is unknown), checked before a session starts.
    fn check(&self, round: &PlannedRound) -> Result<(), String>;
    /// The messages every lane of `round` sends.
    fn messages(&self, round: &PlannedRound) -> Vec<ChatMessage>;
    /// The tool every lane of `round` offers (a workflow's tool-call variant); none by default.
    fn tool(&self, _round: &PlannedRound) -> Option<crate::tool::ToolOffer> {
        None
    }
}

impl std::fmt::Debug for dyn RoundPrompts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RoundPrompts")
    }
}

/// An open- or closed-loop phase: which lanes take part, how their requests are paced, and where
/// each request's content comes from.
#[derive(Debug, Clone)]
pub struct LoadPhase {
    /// Label for plan files and reports (`step-2-measured`).
    pub name: String,
    /// The load it applies, in the workflow's words (`poisson 16/s`, `closed c=8`): carried by
    /// each of its requests ([`crate::request::PlannedRequest::load`]) into their telemetry.
    pub load: String,
    /// Lanes taking part, in base order.
    pub lanes: Vec<Lane>,
    /// How requests are paced.
    pub pacing: Pacing,
    /// Each request's content.
    pub source: Arc<dyn RequestSource>,
}

/// How a load phase paces its requests, per lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pacing {
    /// Open loop: lane i releases request k at `offsets_ms[i][k]` (ms from the phase start, as
    /// the workflow computed them: its arrival process is its own). A lane holds at most
    /// `max_in_flight` at once: a release due while it is full waits for one to end, and its
    /// send lag says so.
    Releases {
        /// One ascending list of release offsets per lane, in base order.
        offsets_ms: Vec<Vec<f64>>,
        /// Requests one lane may have in flight at once.
        max_in_flight: u32,
    },
    /// Closed loop: `concurrency` slots per lane, each sending `per_slot` requests one after
    /// another.
    Slots {
        /// Slots per lane (requests in flight at once).
        concurrency: u32,
        /// Requests each slot sends.
        per_slot: u64,
    },
    /// Closed loop for a time: lane i keeps `users[i]` slots busy, each sending its next request
    /// when its last one ends, until `until_ms` from the phase start. How many requests that is
    /// is an outcome, so the phase plans no request list ([`LoadPhase::is_timed`]).
    Users {
        /// Slots of each lane, in base order.
        users: Vec<u32>,
        /// No request is sent at or after this offset (ms from the phase start).
        until_ms: f64,
    },
    /// Closed loop to a count: lane i keeps `users[i]` slots busy as in `Users`; the phase's
    /// sends at or after `from_ms` are counted over all its lanes together, the send after the
    /// `requests`-th closes the count, and no request is sent once `cooldown_ms` have passed
    /// since that one. Timed like `Users`: how many requests it sends is an outcome, so it plans
    /// no request list, and each request's id is still a function of its lane, slot and
    /// sequence (a resume skips the committed ones).
    UsersToCount {
        /// Slots of each lane, in base order.
        users: Vec<u32>,
        /// Sends before this offset (ms from the phase start) are not counted (the warm-up).
        from_ms: f64,
        /// Counted sends before the closing one.
        requests: u64,
        /// How long the slots go on after the closing send, ms.
        cooldown_ms: f64,
    },
}

/// Where one request of a load phase sits: its lane, slot and sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadPosition {
    /// Phase index in the schedule.
    pub phase: u32,
    /// Lane label.
    pub lane: String,
    /// Position of the lane in the phase's base order.
    pub lane_index: usize,
    /// Closed-loop slot (0 in an open loop).
    pub slot: u32,
    /// 0-based sequence number within the slot (the lane, in an open loop).
    pub sequence: u64,
}

/// `phase-` + 24 hex of sha256(schedule_version, "phase", phase index, phase name, attempt).
pub fn phase_id(schedule_version: &str, phase: u32, name: &str, attempt: u32) -> String {
    short_id(
        "phase-",
        &[
            schedule_version,
            "phase",
            &phase.to_string(),
            name,
            &attempt.to_string(),
        ],
    )
}

/// `req-` + 24 hex of sha256(schedule_version, lane, "load", phase, slot, sequence, attempt):
/// distinct for every request of a lane, however many are in flight, and the same on a resume.
pub fn load_request_id(schedule_version: &str, position: &LoadPosition, attempt: u32) -> String {
    short_id(
        "req-",
        &[
            schedule_version,
            &position.lane,
            "load",
            &position.phase.to_string(),
            &position.slot.to_string(),
            &position.sequence.to_string(),
            &attempt.to_string(),
        ],
    )
}

/// The spec's lanes in base order: providers in spec order, each in every region; the label is
/// the provider key with one region and `provider@region` with several.
pub fn lanes(spec: &Spec) -> Vec<Lane> {
    let regions = spec.region_names();
    let several = regions.len() > 1;
    let mut out = Vec::new();
    for p in &spec.providers {
        for region in &regions {
            let label = if several {
                format!("{}@{region}", p.key)
            } else {
                p.key.clone()
            };
            out.push(Lane {
                label,
                provider: p.key.clone(),
                region: region.clone(),
            });
        }
    }
    out
}

/// Every request position of a load phase (index `phase`) over `lanes` paced by `pacing`, lane by
/// lane, slot by slot: what its plan file implies, so a reader of that file rebuilds its ids (a
/// timed closed loop plans none).
pub fn positions<'a>(
    lanes: &'a [Lane],
    pacing: &'a Pacing,
    phase: u32,
) -> impl Iterator<Item = LoadPosition> + 'a {
    lanes
        .iter()
        .enumerate()
        .flat_map(move |(lane_index, lane)| {
            let (slots, per_slot) = match pacing {
                Pacing::Releases { offsets_ms, .. } => {
                    (1, offsets_ms.get(lane_index).map_or(0, |o| o.len() as u64))
                }
                Pacing::Slots {
                    concurrency,
                    per_slot,
                } => (*concurrency, *per_slot),
                Pacing::Users { .. } | Pacing::UsersToCount { .. } => (0, 0),
            };
            (0..slots).flat_map(move |slot| {
                (0..per_slot).map(move |sequence| LoadPosition {
                    phase,
                    lane: lane.label.clone(),
                    lane_index,
                    slot,
                    sequence,
                })
            })
        })
}

impl LoadPhase {
    /// Every request position of this phase (phase index `phase`), lane by lane, slot by slot;
    /// none for a phase whose source reads history (its requests are an outcome, as a timed
    /// phase's are).
    pub fn positions(&self, phase: u32) -> impl Iterator<Item = LoadPosition> + '_ {
        let planned = !self.source.reads_history();
        positions(&self.lanes, &self.pacing, phase).filter(move |_| planned)
    }

    /// Requests this phase plans (0 for a timed closed loop and for a phase whose source reads
    /// history: how many requests they send is an outcome, so they plan none).
    pub fn request_count(&self) -> usize {
        if self.source.reads_history() {
            return 0;
        }
        match &self.pacing {
            Pacing::Releases { offsets_ms, .. } => {
                offsets_ms.iter().take(self.lanes.len()).map(Vec::len).sum()
            }
            Pacing::Slots {
                concurrency,
                per_slot,
            } => {
                let per_lane = u64::from(*concurrency) * per_slot;
                usize::try_from(per_lane).unwrap_or(usize::MAX) * self.lanes.len()
            }
            Pacing::Users { .. } | Pacing::UsersToCount { .. } => 0,
        }
    }

    /// True for a timed closed loop (to a time or to a count), and for a phase whose source
    /// reads its slots' history (it may stop a slot early): its requests are whatever its slots
    /// sent before the time ran out, the count closed or the source stopped them, so it is
    /// finished when it ran to its end, not when a list is committed.
    pub fn is_timed(&self) -> bool {
        matches!(
            self.pacing,
            Pacing::Users { .. } | Pacing::UsersToCount { .. }
        ) || self.source.reads_history()
    }

    /// Requests one lane may have in flight at once: the slots of a closed loop, the open
    /// loop's bound (at least 1).
    pub fn max_in_flight(&self) -> u32 {
        match self.pacing {
            Pacing::Slots { concurrency, .. } => concurrency.max(1),
            Pacing::Releases { max_in_flight, .. } => max_in_flight.max(1),
            Pacing::Users { ref users, .. } | Pacing::UsersToCount { ref users, .. } => {
                users.iter().copied().max().unwrap_or(1).max(1)
            }
        }
    }
}

impl Schedule {
    /// Requests the schedule plans.
    pub fn request_count(&self) -> usize {
        self.phases
            .iter()
            .map(|phase| match phase {
                Phase::PairedRounds(p) => p.plan.request_count(),
                Phase::OpenLoop(l) | Phase::ClosedLoop(l) => l.request_count(),
            })
            .sum()
    }

    /// Requests one lane may have in flight at once in any phase: what the coordinator asks
    /// each probe session to allow (1 for paired rounds).
    pub fn lane_in_flight(&self) -> u32 {
        self.phases
            .iter()
            .map(|phase| match phase {
                Phase::PairedRounds(_) => 1,
                Phase::OpenLoop(l) | Phase::ClosedLoop(l) => l.max_in_flight(),
            })
            .max()
            .unwrap_or(1)
    }

    /// The schedule's only paired-rounds plan, when it has exactly one phase of that kind.
    pub fn paired_plan(&self) -> Option<&Arc<Plan>> {
        match self.phases.as_slice() {
            [Phase::PairedRounds(p)] => Some(&p.plan),
            _ => None,
        }
    }

    /// What the attempt's plan file holds: a schedule of one paired-rounds phase writes its plan
    /// as before; any other schedule writes its phases (lanes, pacing, ids of the phases).
    pub fn plan_file(&self) -> PlanFile<'_> {
        let schedule_version = self.version.as_str();
        match self.paired_plan() {
            Some(plan) => PlanFile::Rounds(plan),
            None => PlanFile::Phases(PhasesFile {
                plan_version: 2,
                attempt: self.attempt,
                schedule_version: schedule_version.to_string(),
                phases: self
                    .phases
                    .iter()
                    .enumerate()
                    .map(|(i, phase)| PhaseFile::new(schedule_version, self.attempt, i, phase))
                    .collect(),
            }),
        }
    }
}

/// The plan file of an attempt.
#[derive(Serialize)]
#[serde(untagged)]
pub enum PlanFile<'a> {
    /// One paired-rounds phase: the plan itself.
    Rounds(&'a Plan),
    /// Anything else: the phases.
    Phases(PhasesFile<'a>),
}

/// The plan file of a schedule with load phases.
#[derive(Serialize)]
pub struct PhasesFile<'a> {
    /// Layout version (2: phases).
    pub plan_version: u32,
    /// 0 for a full run; N for smoke attempt N.
    pub attempt: u32,
    /// Schedule version feeding the ids.
    pub schedule_version: String,
    /// Every phase, in order.
    pub phases: Vec<PhaseFile<'a>>,
}

impl Schedule {
    /// Phase `index` as its plan file lists it: what a schedule chosen as it runs writes for
    /// each phase it appends (`None` past the end).
    pub fn phase_file(&self, index: usize) -> Option<PhaseFile<'_>> {
        let phase = self.phases.get(index)?;
        Some(PhaseFile::new(&self.version, self.attempt, index, phase))
    }

    /// The id of every request of load phase `index` (a closed or open loop), lane by lane, slot
    /// by slot; empty for a paired phase (its ids are in its plan).
    pub fn load_request_ids(&self, index: usize) -> Vec<String> {
        let phase = u32::try_from(index).unwrap_or(u32::MAX);
        match self.phases.get(index) {
            Some(Phase::OpenLoop(l) | Phase::ClosedLoop(l)) => l
                .positions(phase)
                .map(|p| load_request_id(&self.version, &p, self.attempt))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// One phase as its plan file lists it.
#[derive(Serialize)]
pub struct PhaseFile<'a> {
    /// Phase index.
    pub phase: u32,
    /// `phase-…` id.
    pub phase_id: String,
    /// `paired_rounds`, `open_loop` or `closed_loop`.
    pub kind: &'static str,
    /// Label.
    pub name: String,
    /// Lanes in base order.
    pub lanes: Vec<Lane>,
    /// Pacing of a load phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing: Option<Pacing>,
    /// Requests planned.
    pub requests: usize,
    /// The rounds of a paired phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<&'a Plan>,
    /// The phase's source reads its slots' history ([`RequestSource::reads_history`]): a slot
    /// may stop before its planned requests (a conversation ended or failed), so `requests` is
    /// a ceiling, not a count `watch` should wait for. Written only when true, so the plan
    /// files of other phases keep their bytes, and plan files without it read as false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reads_history: bool,
}

impl<'a> PhaseFile<'a> {
    fn new(version: &str, attempt: u32, index: usize, phase: &'a Phase) -> PhaseFile<'a> {
        let phase_index = u32::try_from(index).unwrap_or(u32::MAX);
        let (kind, name, lanes, pacing, plan) = match phase {
            Phase::PairedRounds(p) => (
                "paired_rounds",
                String::from("paired-rounds"),
                p.plan.lanes.clone(),
                None,
                Some(&*p.plan),
            ),
            Phase::OpenLoop(l) => (
                "open_loop",
                l.name.clone(),
                l.lanes.clone(),
                Some(l.pacing.clone()),
                None,
            ),
            Phase::ClosedLoop(l) => (
                "closed_loop",
                l.name.clone(),
                l.lanes.clone(),
                Some(l.pacing.clone()),
                None,
            ),
        };
        let requests = match phase {
            Phase::PairedRounds(p) => p.plan.request_count(),
            Phase::OpenLoop(l) | Phase::ClosedLoop(l) => l.request_count(),
        };
        let reads_history = match phase {
            Phase::PairedRounds(_) => false,
            Phase::OpenLoop(l) | Phase::ClosedLoop(l) => l.source.reads_history(),
        };
        PhaseFile {
            phase: phase_index,
            phase_id: phase_id(version, phase_index, &name, attempt),
            kind,
            name,
            lanes,
            pacing,
            requests,
            plan,
            reads_history,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_ids_differ_per_slot_and_sequence_and_repeat_on_a_resume() {
        let at = |slot, sequence| LoadPosition {
            phase: 1,
            lane: "p".into(),
            lane_index: 0,
            slot,
            sequence,
        };
        let a = load_request_id("v", &at(0, 0), 0);
        assert_eq!(a, load_request_id("v", &at(0, 0), 0));
        assert_ne!(a, load_request_id("v", &at(1, 0), 0));
        assert_ne!(a, load_request_id("v", &at(0, 1), 0));
        assert_ne!(a, load_request_id("v", &at(0, 0), 1));
        // Python: "req-" + hashlib.sha256("\0".join(["v", "p", "load", "1", "0", "0", "0"])
        //                                  .encode()).hexdigest()[:24]
        assert_eq!(a, "req-5d9c7d62bba567867727df4c");
    }
}
