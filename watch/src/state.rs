//! What `watch` has learned about a run so far, accumulated one record and one round line at a
//! time (no I/O here: [`crate::source`] feeds it from the files).
//!
//! Records count as in [`openbench_common::rundir::records`]: per request id the last committed
//! record, or the last harness record while that is all there is. A later record for a request id
//! already seen replaces the earlier one's contribution, so the figures equal those of a full
//! re-read of the file.
//!
//! A plan of load phases also keeps, per request of a load phase, what the load report's metrics
//! take from its record ([`RequestSample`]) and its answer-bearing event offsets from the events
//! file ([`AnswerEvents`], the report's own reader): the live load row is computed from them.

use crate::plan_file::{Outline, PhaseLoad};
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir::Lane;
#[cfg(doc)]
use openbench_common::rundir::RoundLine;
use openbench_report_kit::request::events::AnswerEvents;
use openbench_report_kit::request::{RequestSample, sample_of};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// How many of a lane's most recent E2E values its sparkline shows.
pub const RECENT: usize = 16;

/// A lane as the view knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneInfo {
    /// Lane label.
    pub label: String,
    /// Provider key.
    pub provider: String,
    /// Region label.
    pub region: String,
}

/// The latest non-completed record of a lane (file order), kept even once a retry supersedes it.
#[derive(Debug, Clone, PartialEq)]
pub struct LatestError {
    /// Position of the record in the results file (1-based).
    pub seq: u64,
    /// Round index.
    pub round_index: u64,
    /// Failure class (see [`failure_class`]).
    pub class: String,
    /// The record's redacted message, when it has one.
    pub message: Option<String>,
}

/// Figures of one (lane, family) cell.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cell {
    /// Requests in the plan.
    pub planned: usize,
    /// A timed closed loop also sends here, as many requests as its window allows: `planned`
    /// is not the cell's total.
    pub open_ended: bool,
    /// Counting records that are committed (completed or an operational failure).
    pub submitted: usize,
    /// Completed requests.
    pub completed: usize,
    /// Operational failures.
    pub failures: usize,
    /// Harness failures awaiting re-execution.
    pub harness_errors: usize,
    /// TTFA of completed requests, ms (ascending after [`RunState::settle`]).
    pub ttfa_ms: Vec<f64>,
    /// E2E of completed requests, ms (ascending after [`RunState::settle`]).
    pub e2e_ms: Vec<f64>,
    /// Visible-answer tokens/s of completed requests that have one (ascending after settle).
    pub tokens_per_second: Vec<f64>,
    /// Counting failures (harness included) by class.
    pub classes: BTreeMap<String, usize>,
    /// The latest error seen.
    pub latest_error: Option<LatestError>,
    /// The most recent E2E values, (seq, ms), oldest first.
    pub recent_e2e: VecDeque<(u64, f64)>,
}

/// One round line as the view keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundPoint {
    /// Round index.
    pub round_index: u64,
    /// Family index of the round (from the plan), when known.
    pub family: Option<usize>,
    /// Launch skew, ms.
    pub launch_skew_ms: f64,
    /// Release → last terminal record, ms.
    pub round_ms: f64,
    /// Coordinator overhead before the release, ms.
    pub coordinator_overhead_ms: Option<f64>,
}

/// The fields of a [`RoundLine`] the view uses, read leniently: other fields (present, absent or
/// added by a newer writer) do not make a line unreadable.
#[derive(Debug, serde::Deserialize)]
struct RoundFields {
    round_index: u64,
    #[serde(default)]
    launch_skew_ms: f64,
    #[serde(default)]
    round_ms: f64,
    #[serde(default)]
    coordinator_overhead_ms: Option<f64>,
}

/// The compact form of the record that counts for one request id.
#[derive(Debug, Clone)]
struct Kept {
    lane: usize,
    family: usize,
    seq: u64,
    outcome: Outcome,
    class: Option<String>,
    ttfa_ms: Option<f64>,
    e2e_ms: Option<f64>,
    tokens_per_second: Option<f64>,
}

/// Everything accumulated so far; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct RunState {
    /// Lanes in plan order, then any seen only in records.
    pub lanes: Vec<LaneInfo>,
    /// Families in plan order, then any seen only in records.
    pub families: Vec<String>,
    /// `cells[lane][family]`.
    pub cells: Vec<Vec<Cell>>,
    /// Round lines in file order.
    pub rounds: Vec<RoundPoint>,
    /// Rounds in the plan (phases, when [`RunState::by_phase`]).
    pub rounds_total: usize,
    /// Rounds (phases) whose every planned request is committed.
    pub rounds_done: usize,
    /// The plan is of phases: columns are phases, progress is counted in phases.
    pub by_phase: bool,
    /// Complete lines that did not parse (results and rounds files).
    pub unreadable_lines: u64,
    /// What each phase of the plan asks of its lanes, by phase index (`None`: paired rounds).
    pub phase_loads: Vec<Option<PhaseLoad>>,
    /// Per request id of a load phase: its phase and its sample (answer events left empty: they
    /// are in [`RunState::chunks`]). Only with a plan of phases.
    pub load_samples: HashMap<String, (u32, RequestSample)>,
    /// Answer-bearing chunk offsets per request id, from the events file.
    pub chunks: AnswerEvents,
    /// Per load phase, the sittings whose records it holds: more than one when the step was
    /// interrupted and resumed mid-way (its figures then mix two timelines).
    pub phase_sittings: BTreeMap<u32, BTreeSet<u32>>,
    lane_index: HashMap<String, usize>,
    family_index: HashMap<String, usize>,
    request_round: HashMap<String, usize>,
    round_family: Vec<usize>,
    round_open: Vec<usize>,
    kept: HashMap<String, Kept>,
    seq: u64,
}

impl RunState {
    /// A state for a plan's outline (lanes, columns and the request → unit map), or for lanes
    /// and families known from the lock when there is no plan yet.
    pub fn new(plan: Option<&Outline>, lanes: &[Lane], families: &[String]) -> RunState {
        let mut state = RunState::default();
        let (lanes, families) = match plan {
            Some(p) => (&p.lanes[..], &p.columns[..]),
            None => (lanes, families),
        };
        for l in lanes {
            state.lane(&l.label, &l.provider, &l.region);
        }
        for f in families {
            state.family(f);
        }
        if let Some(plan) = plan {
            state.by_phase = plan.by_phase;
            state.rounds_total = plan.units.len();
            state.phase_loads = plan.units.iter().map(|u| u.load.clone()).collect();
            for (index, unit) in plan.units.iter().enumerate() {
                let family = state.family(&unit.column);
                state.round_family.push(family);
                state.round_open.push(unit.requests.len());
                for (request_id, l) in &unit.requests {
                    let lane = state.lane(&l.label, &l.provider, &l.region);
                    state.cells[lane][family].planned += 1;
                    state.request_round.insert(request_id.clone(), index);
                }
                for l in &unit.open_ended {
                    let lane = state.lane(&l.label, &l.provider, &l.region);
                    state.cells[lane][family].open_ended = true;
                }
            }
        }
        state
    }

    /// Forgets every record (the results file started over); the plan stays.
    pub fn reset_records(&mut self) {
        for lane in &mut self.cells {
            for cell in lane.iter_mut() {
                *cell = Cell {
                    planned: cell.planned,
                    open_ended: cell.open_ended,
                    ..Cell::default()
                };
            }
        }
        self.kept.clear();
        self.load_samples.clear();
        self.phase_sittings.clear();
        self.seq = 0;
        self.unreadable_lines = 0;
        self.round_open.clear();
        let mut open = vec![0; self.round_family.len()];
        for &round in self.request_round.values() {
            open[round] += 1;
        }
        self.round_open = open;
        self.rounds_done = 0;
    }

    /// Sorts every cell's values, after a batch of records. A sorted prefix plus a short new tail
    /// sorts in about linear time, and the view's sort of a lane's cells then only merges sorted
    /// runs, so a refresh costs about a pass over the values rather than a full sort of them.
    pub fn settle(&mut self) {
        for cell in self.cells.iter_mut().flatten() {
            for values in [
                &mut cell.ttfa_ms,
                &mut cell.e2e_ms,
                &mut cell.tokens_per_second,
            ] {
                if !values.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
                    values.sort_by(f64::total_cmp);
                }
            }
        }
    }

    /// Takes one line of the events file (read only for a plan of load phases).
    pub fn events_line(&mut self, line: &str) {
        self.chunks.line(line);
    }

    /// Forgets every stream event (the events file started over).
    pub fn reset_events(&mut self) {
        self.chunks = AnswerEvents::default();
    }

    /// Forgets every round line (the rounds file started over).
    pub fn reset_rounds(&mut self) {
        self.rounds.clear();
    }

    /// Takes one line of the results file.
    pub fn results_line(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        match serde_json::from_str::<TerminalRecord>(line) {
            Ok(record) => self.record(&record),
            Err(_) => self.unreadable_lines += 1,
        }
    }

    /// Takes one line of the rounds file.
    pub fn rounds_line(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        match serde_json::from_str::<RoundFields>(line) {
            Ok(r) => self.rounds.push(RoundPoint {
                family: self.round_family.get(r.round_index as usize).copied(),
                round_index: r.round_index,
                launch_skew_ms: r.launch_skew_ms,
                round_ms: r.round_ms,
                coordinator_overhead_ms: r.coordinator_overhead_ms,
            }),
            Err(_) => self.unreadable_lines += 1,
        }
    }

    /// Takes one terminal record.
    pub fn record(&mut self, r: &TerminalRecord) {
        self.seq += 1;
        let lane = self.lane(&r.lane, &r.provider, &r.region);
        let phase_column = r
            .phase
            .filter(|_| self.by_phase)
            .and_then(|p| self.round_family.get(p as usize).copied());
        let family = match phase_column {
            Some(column) => column,
            None => self.family(&r.task_family),
        };
        let new = Kept {
            lane,
            family,
            seq: self.seq,
            outcome: r.outcome,
            class: (r.outcome != Outcome::Completed).then(|| failure_class(r)),
            ttfa_ms: r.ttfa_ms,
            e2e_ms: r.e2e_ms,
            tokens_per_second: r.output_tokens_per_second,
        };
        if let Some(class) = &new.class {
            self.cells[lane][family].latest_error = Some(LatestError {
                seq: self.seq,
                round_index: r.round_index,
                class: class.clone(),
                message: r.error_message.clone(),
            });
        }
        let committed = r.outcome.is_committed();
        let was_committed = match self.kept.get(&r.request_id) {
            None => false,
            // A harness record never replaces a committed one.
            Some(old) if old.outcome.is_committed() && !committed => return,
            Some(old) => {
                let old = old.clone();
                self.remove(&old);
                old.outcome.is_committed()
            }
        };
        self.add(&new);
        self.kept.insert(r.request_id.clone(), new);
        if let Some(phase) = r.phase.filter(|_| self.by_phase) {
            if let Some(sitting) = r.sitting {
                self.phase_sittings
                    .entry(phase)
                    .or_default()
                    .insert(sitting);
            }
            let sample = sample_of(r, Some(Vec::new()), 0, None);
            self.load_samples
                .insert(r.request_id.clone(), (phase, sample));
        }
        if committed && !was_committed {
            self.commit_round_request(&r.request_id);
        }
    }

    fn commit_round_request(&mut self, request_id: &str) {
        let Some(&round) = self.request_round.get(request_id) else {
            return;
        };
        if let Some(open) = self.round_open.get_mut(round) {
            *open = open.saturating_sub(1);
            if *open == 0 {
                self.rounds_done += 1;
            }
        }
    }

    fn add(&mut self, k: &Kept) {
        let cell = &mut self.cells[k.lane][k.family];
        match k.outcome {
            Outcome::HarnessError => cell.harness_errors += 1,
            Outcome::Completed => {
                cell.completed += 1;
                push_value(&mut cell.ttfa_ms, k.ttfa_ms);
                push_value(&mut cell.e2e_ms, k.e2e_ms);
                push_value(&mut cell.tokens_per_second, k.tokens_per_second);
                if let Some(e2e) = k.e2e_ms {
                    cell.recent_e2e.push_back((k.seq, e2e));
                    if cell.recent_e2e.len() > RECENT {
                        cell.recent_e2e.pop_front();
                    }
                }
            }
            _ => cell.failures += 1,
        }
        if k.outcome.is_committed() {
            cell.submitted += 1;
        }
        if let Some(class) = &k.class {
            *cell.classes.entry(class.clone()).or_default() += 1;
        }
    }

    fn remove(&mut self, k: &Kept) {
        let cell = &mut self.cells[k.lane][k.family];
        match k.outcome {
            Outcome::HarnessError => cell.harness_errors -= 1,
            Outcome::Completed => {
                cell.completed -= 1;
                remove_value(&mut cell.ttfa_ms, k.ttfa_ms);
                remove_value(&mut cell.e2e_ms, k.e2e_ms);
                remove_value(&mut cell.tokens_per_second, k.tokens_per_second);
                cell.recent_e2e.retain(|(seq, _)| *seq != k.seq);
            }
            _ => cell.failures -= 1,
        }
        if k.outcome.is_committed() {
            cell.submitted -= 1;
        }
        if let Some(class) = &k.class
            && let Some(n) = cell.classes.get_mut(class)
        {
            *n -= 1;
            if *n == 0 {
                cell.classes.remove(class);
            }
        }
    }

    fn lane(&mut self, label: &str, provider: &str, region: &str) -> usize {
        if let Some(&i) = self.lane_index.get(label) {
            return i;
        }
        let i = self.lanes.len();
        self.lanes.push(LaneInfo {
            label: label.to_string(),
            provider: provider.to_string(),
            region: region.to_string(),
        });
        self.cells.push(vec![Cell::default(); self.families.len()]);
        self.lane_index.insert(label.to_string(), i);
        i
    }

    fn family(&mut self, name: &str) -> usize {
        if let Some(&i) = self.family_index.get(name) {
            return i;
        }
        let i = self.families.len();
        self.families.push(name.to_string());
        for lane in &mut self.cells {
            lane.push(Cell::default());
        }
        self.family_index.insert(name.to_string(), i);
        i
    }
}

/// A failure's class: its `error_type` as the records spell it (`http_429`, `timeout`, …), else
/// its outcome (`harness_error`, …).
pub fn failure_class(r: &TerminalRecord) -> String {
    let named = match r.error_type {
        Some(t) => serde_json::to_value(t).ok(),
        None => serde_json::to_value(r.outcome).ok(),
    };
    named
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

/// Appends `value` (NaN is not a figure: dropped); [`RunState::settle`] sorts later.
fn push_value(values: &mut Vec<f64>, value: Option<f64>) {
    values.extend(value.filter(|v| !v.is_nan()));
}

/// Removes one occurrence of `value` (bit-equal) from `values`, keeping their order.
fn remove_value(values: &mut Vec<f64>, value: Option<f64>) {
    let Some(value) = value else { return };
    if let Some(i) = values.iter().position(|v| v.to_bits() == value.to_bits()) {
        values.remove(i);
    }
}

#[cfg(test)]
pub(crate) mod tests;
