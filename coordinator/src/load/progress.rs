//! Progress of load phases: what is left of one, and how many progress units a schedule has
//! and has done (one per paired round, one per load phase).

use openbench_common::schedule::{LoadPhase, Phase, Schedule, load_request_id};
use std::collections::BTreeSet;

/// Requests of load phase `index` without a committed record; for a timed phase (which plans
/// no list), 0 once it ran to its end (`finished`) and 1 before.
pub fn remaining(
    load: &LoadPhase,
    index: u32,
    version: &str,
    attempt: u32,
    committed: &BTreeSet<String>,
    finished: bool,
) -> usize {
    if load.is_timed() {
        return usize::from(!finished);
    }
    load.positions(index)
        .filter(|p| !committed.contains(&load_request_id(version, p, attempt)))
        .count()
}

/// Progress units of a schedule: every paired round, and one per load phase.
pub fn rounds_total(schedule: &Schedule) -> usize {
    schedule
        .phases
        .iter()
        .map(|phase| match phase {
            Phase::PairedRounds(p) => p.plan.rounds.len(),
            Phase::OpenLoop(_) | Phase::ClosedLoop(_) => 1,
        })
        .sum()
}

/// Progress units done: paired rounds whose every lane is committed, load phases whose every
/// request is, and timed load phases in `finished`.
pub fn rounds_done(
    schedule: &Schedule,
    version: &str,
    committed: impl Fn(&str) -> bool,
    finished: &BTreeSet<u32>,
) -> usize {
    let mut done = 0;
    for (index, phase) in schedule.phases.iter().enumerate() {
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        done += match phase {
            Phase::PairedRounds(p) => p.plan.rounds_done(&committed),
            Phase::OpenLoop(l) | Phase::ClosedLoop(l) if l.is_timed() => {
                usize::from(finished.contains(&index))
            }
            Phase::OpenLoop(l) | Phase::ClosedLoop(l) => usize::from(
                l.positions(index)
                    .all(|p| committed(&load_request_id(version, &p, schedule.attempt))),
            ),
        };
    }
    done
}

/// True when every phase of `schedule` is done: its requests committed in `records`, or, timed,
/// in `finished`.
pub fn is_done(
    schedule: &Schedule,
    records: &std::collections::BTreeMap<String, openbench_common::record::TerminalRecord>,
    finished: &BTreeSet<u32>,
) -> bool {
    let committed = |id: &str| records.get(id).is_some_and(|r| r.outcome.is_committed());
    rounds_done(schedule, &schedule.version, committed, finished) == rounds_total(schedule)
}
