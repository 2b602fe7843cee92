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
use openbench_common::record::TerminalRecord;
use openbench_common::rundir::{ReadStats, RunLock, lines_of};
use openbench_common::workflow::ReportOptions;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

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

/// Record lines carrying another run's `run_id` (every line is checked, superseded ones too):
/// records merged in from another run of the same spec would otherwise count as this run's.
#[derive(Debug, Clone, Default)]
pub struct Foreign {
    /// How many.
    pub count: usize,
    /// The first few: request id and reason.
    pub first: Vec<(String, String)>,
}

impl Foreign {
    /// Notes `record` when its `run_id` is not `run_id`.
    pub fn check(&mut self, record: &TerminalRecord, run_id: &str) {
        if record.run_id == run_id {
            return;
        }
        self.count += 1;
        if self.first.len() < NAMED {
            let reason = format!("run_id {:?}, this run is {run_id:?}", record.run_id);
            self.first.push((record.request_id.clone(), reason));
        }
    }
}

/// What reading the records file found besides the records: its path, its counts, and the
/// lines of other runs.
#[derive(Debug, Clone, Copy)]
pub struct RecordsRead<'a> {
    /// The records file.
    pub path: &'a PathBuf,
    /// Read counts (duplicates among them).
    pub stats: &'a ReadStats,
    /// Lines carrying another run's `run_id`.
    pub foreign: &'a Foreign,
}

/// Checks the final records against the plan (named `plan_name`) and the lock; returns what was
/// accepted, or the refusal. `observations` are sorted by round index (as `compute` sorts them).
pub fn admit(
    observations: &[impl LaneRecord],
    lanes: &LaneTable,
    (plan, plan_name): (Option<&PlanView>, &str),
    lock: &RunLock,
    read: RecordsRead<'_>,
    options: &ReportOptions,
) -> Result<Accepted, AdmissionError> {
    let RecordsRead {
        path: records,
        stats,
        foreign,
    } = read;
    let mut accepted = Accepted::default();
    let mut strays = strays(observations, lanes, plan, lock);
    let count = strays.len() + foreign.count;
    if count > 0 {
        strays.splice(0..0, foreign.first.iter().cloned());
        let first = with_lines(records, &strays[..strays.len().min(NAMED)]);
        if !options.accept_unplanned {
            return Err(AdmissionError::Unplanned {
                records: records.clone(),
                plan: if plan.is_some() {
                    plan_name.to_string()
                } else {
                    format!("no {plan_name}")
                },
                count,
                first,
            });
        }
        accepted.notes.push(format!(
            "{count} record(s) outside the plan or the run lock are counted (--accept-unplanned): \
             {first}."
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
) -> Vec<(String, String)> {
    let providers: HashSet<&str> = lock.providers.iter().map(|p| p.key.as_str()).collect();
    let mut out = Vec::new();
    let mut round: Option<(u64, HashMap<&str, &str>)> = None;
    for o in observations {
        let lane = &lanes.lanes[o.lane() as usize];
        if !providers.contains(lane.provider.as_str()) {
            out.push((
                o.request_id().to_string(),
                format!("provider {:?} is not in run-lock.json", lane.provider),
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
            None => out.push((
                o.request_id().to_string(),
                format!("round {}: not a planned request", o.round_index()),
            )),
            Some(planned_lane) if *planned_lane != lane.lane => out.push((
                o.request_id().to_string(),
                format!("lane {:?}, planned as {:?}", lane.lane, planned_lane),
            )),
            Some(_) => {}
        }
    }
    out
}

/// "request (reason)" for each stray, prefixed with the line(s) of `records` holding it (the file
/// is read again only here, on a refusal's path; unreadable, it is named without lines).
fn with_lines(records: &Path, strays: &[(String, String)]) -> String {
    let ids: HashSet<&str> = strays.iter().map(|(id, _)| id.as_str()).collect();
    let lines = lines_of(records, &ids).unwrap_or_default();
    strays
        .iter()
        .map(|(id, reason)| match lines.get(id) {
            Some(at) => {
                let at: Vec<String> = at.iter().map(u64::to_string).collect();
                format!("line {}: {id} ({reason})", at.join(", "))
            }
            None => format!("{id} ({reason})"),
        })
        .collect::<Vec<_>>()
        .join("; ")
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
