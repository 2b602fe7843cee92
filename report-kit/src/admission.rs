//! Which records a report may count. A record whose request is not in the plan, whose provider is
//! not in the run lock, whose lane or round differs from the plan's for its request, or a second
//! committed record of one request was not written by this run's coordinator: counting it would
//! change the figures silently. `report` refuses them, naming them, unless the user accepts them
//! explicitly ([`ReportOptions`]); what was accepted is then stated in the report's header.
//!
//! Any workflow's report admits its records here: it reads only a record's request, round and
//! lane ([`LaneRecord`]).

use crate::observe::{LaneRecord, LaneTable};
use crate::plan_view::PlanView;
use openbench_common::rundir::{ReadStats, RunLock};
use openbench_common::workflow::ReportOptions;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// How many offending records an error or a header names.
const NAMED: usize = 5;

/// Records the report refused, naming them and how to accept them.
#[derive(Debug, thiserror::Error)]
pub enum AdmissionError {
    /// Records outside the plan or the run lock.
    #[error(
        "{records}: {count} record(s) outside the plan ({plan}) or the run lock: {first}; \
         refusing to count them (pass --accept-unplanned to count them anyway)"
    )]
    Unplanned {
        /// The records file.
        records: PathBuf,
        /// The plan file (or "no plan file").
        plan: String,
        /// How many.
        count: usize,
        /// The first few, each with its reason.
        first: String,
    },
    /// Requests with more than one committed record.
    #[error(
        "{records}: {count} extra committed record(s) for request(s) {first}; a request has one \
         committed record; refusing to choose (pass --accept-duplicates to count the last one)"
    )]
    Duplicates {
        /// The records file.
        records: PathBuf,
        /// Extra committed records.
        count: u64,
        /// The first few request ids.
        first: String,
    },
}

/// What a report accepted that it would otherwise refuse, for its header (empty: nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accepted {
    /// One sentence per accepted kind.
    pub notes: Vec<String>,
}

/// Checks the final records against the plan and the lock; returns what was accepted, or the
/// refusal. `observations` are sorted by round index (as a report sorts them).
pub fn admit(
    observations: &[impl LaneRecord],
    lanes: &LaneTable,
    plan: Option<&PlanView>,
    lock: &RunLock,
    stats: &ReadStats,
    files: (&PathBuf, &str),
    options: &ReportOptions,
) -> Result<Accepted, AdmissionError> {
    let (records, plan_name) = files;
    let mut accepted = Accepted::default();
    let strays = strays(observations, lanes, plan, lock);
    if !strays.is_empty() {
        let first = strays
            .iter()
            .take(NAMED)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ");
        if !options.accept_unplanned {
            return Err(AdmissionError::Unplanned {
                records: records.clone(),
                plan: if plan.is_some() {
                    plan_name.to_string()
                } else {
                    format!("no {plan_name}")
                },
                count: strays.len(),
                first,
            });
        }
        accepted.notes.push(format!(
            "{} record(s) outside the plan or the run lock are counted (--accept-unplanned): \
             {first}.",
            strays.len()
        ));
    }
    if stats.committed_duplicates > 0 {
        let first = stats.duplicate_ids.join(", ");
        if !options.accept_duplicates {
            return Err(AdmissionError::Duplicates {
                records: records.clone(),
                count: stats.committed_duplicates,
                first,
            });
        }
        accepted.notes.push(format!(
            "{} extra committed record(s) were found for request(s) {first}; the last record of \
             each request is counted (--accept-duplicates).",
            stats.committed_duplicates
        ));
    }
    Ok(accepted)
}

/// Every record that the plan or the lock does not account for, with the reason. Without a plan
/// file only the lock is checked. Walks the plan one round at a time, so memory stays at one
/// round's lanes however long the plan is.
fn strays(
    observations: &[impl LaneRecord],
    lanes: &LaneTable,
    plan: Option<&PlanView>,
    lock: &RunLock,
) -> Vec<String> {
    let providers: HashSet<&str> = lock.providers.iter().map(|p| p.key.as_str()).collect();
    let mut out = Vec::new();
    let mut round: Option<(u64, HashMap<&str, &str>)> = None;
    for o in observations {
        let lane = &lanes.lanes[o.lane() as usize];
        if !providers.contains(lane.provider.as_str()) {
            out.push(format!(
                "{} (provider {:?} is not in run-lock.json)",
                o.request_id(),
                lane.provider
            ));
            continue;
        }
        let Some(plan) = plan else { continue };
        if round
            .as_ref()
            .is_none_or(|(index, _)| *index != o.round_index())
        {
            round = Some((o.round_index(), planned_round(plan, o.round_index())));
        }
        let planned = round.as_ref().and_then(|(_, r)| r.get(o.request_id()));
        match planned {
            None => out.push(format!(
                "{} (round {}: not a planned request)",
                o.request_id(),
                o.round_index()
            )),
            Some(planned_lane) if *planned_lane != lane.lane => out.push(format!(
                "{} (lane {:?}, planned as {:?})",
                o.request_id(),
                lane.lane,
                planned_lane
            )),
            Some(_) => {}
        }
    }
    out
}

/// Request id → lane label of the plan's round `index`; empty when the plan has no such round.
fn planned_round(plan: &PlanView, index: u64) -> HashMap<&str, &str> {
    let found = plan
        .rounds
        .binary_search_by_key(&index, |r| r.round_index)
        .ok()
        .or_else(|| plan.rounds.iter().position(|r| r.round_index == index));
    found
        .map(|i| {
            plan.rounds[i]
                .requests
                .iter()
                .map(|l| (&*l.request_id, &*l.lane))
                .collect()
        })
        .unwrap_or_default()
}
