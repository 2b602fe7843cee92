//! The view model: every figure `watch` shows, computed from a [`RunState`] and the user's
//! choices (sort, family and region filters) by a pure function, so it is tested without a
//! terminal. The TUI, the plain-text view and the `--once` JSON all show this.
//!
//! Percentiles are nearest-rank (METHODOLOGY §6, [`openbench_common::stats`]) over the requests
//! that count so far: latency over completed requests, tokens/s over completed requests that have
//! a tokens/s value, whose "p95" is the floor at p = 0.05.
//!
//! A run of load phases also has a load row ([`LoadView`]) for its current step: each lane's
//! target against its achieved rate and its live ITL, computed with the load report's own
//! definitions (`openbench_report_kit::request`) over the records and events written so far.

use crate::plan_file::{Target, rate_per_s};
use crate::source::Header;
use crate::state::{Cell, RoundPoint, RunState};
use openbench_common::record::Outcome;
use openbench_common::rundir::{RunMode, RunStatus};
use openbench_common::stats::rank_index;
use openbench_report_kit::request::{Distribution, RequestTimings};
use serde::Serialize;
use std::collections::BTreeMap;

/// How many round lines the ETA's pace is taken from.
const ETA_ROUNDS: usize = 50;
/// Bins of the E2E histogram.
pub const HISTOGRAM_BINS: usize = 12;

/// What the lanes table is ordered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    /// Plan (base) order.
    Lane,
    /// Share of the lane's planned requests done, most done first.
    Progress,
    /// TTFA p50, fastest first (lanes without a value last).
    TtfaP50,
    /// E2E p50, fastest first.
    E2eP50,
    /// E2E p99, fastest first.
    E2eP99,
    /// Tokens/s p50, fastest first.
    TokensPerSecond,
    /// Failures (operational + harness), most first.
    Failures,
}

impl SortKey {
    /// Every key, in the order the `s` key cycles through them.
    pub const ALL: [SortKey; 7] = [
        SortKey::Lane,
        SortKey::Progress,
        SortKey::TtfaP50,
        SortKey::E2eP50,
        SortKey::E2eP99,
        SortKey::TokensPerSecond,
        SortKey::Failures,
    ];

    /// The key after this one.
    pub fn next(self) -> SortKey {
        let i = SortKey::ALL.iter().position(|k| *k == self).unwrap_or(0);
        SortKey::ALL[(i + 1) % SortKey::ALL.len()]
    }

    /// Its name on screen.
    pub fn label(self) -> &'static str {
        match self {
            SortKey::Lane => "lane",
            SortKey::Progress => "progress",
            SortKey::TtfaP50 => "TTFA p50",
            SortKey::E2eP50 => "E2E p50",
            SortKey::E2eP99 => "E2E p99",
            SortKey::TokensPerSecond => "tok/s p50",
            SortKey::Failures => "failures",
        }
    }
}

/// The user's choices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ViewOptions {
    /// Sort key of the lanes table.
    pub sort: SortKey,
    /// Reverse the sort.
    pub reverse: bool,
    /// Only this task family (lanes, failures, histogram and rounds).
    pub family: Option<String>,
    /// Only lanes in this region.
    pub region: Option<String>,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions {
            sort: SortKey::Lane,
            reverse: false,
            family: None,
            region: None,
        }
    }
}

/// Nearest-rank p50/p95/p99 of one population.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Values in the population.
    pub n: usize,
    /// p50.
    pub p50: Option<f64>,
    /// p95.
    pub p95: Option<f64>,
    /// p99.
    pub p99: Option<f64>,
}

/// One row of the lanes table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaneView {
    /// Lane label.
    pub lane: String,
    /// Provider key.
    pub provider: String,
    /// Region label.
    pub region: String,
    /// Planned requests.
    pub planned: usize,
    /// A timed closed loop sends on this lane too, so `planned` is a floor, not its total.
    pub open_ended: bool,
    /// Committed requests (completed + operational failures).
    pub submitted: usize,
    /// Completed requests.
    pub completed: usize,
    /// Operational failures.
    pub failures: usize,
    /// Harness failures awaiting re-execution.
    pub harness_errors: usize,
    /// TTFA percentiles, ms.
    pub ttfa_ms: Percentiles,
    /// E2E percentiles, ms.
    pub e2e_ms: Percentiles,
    /// Running TTFA p50, ms (kept under its earlier name).
    pub ttfa_p50_ms: Option<f64>,
    /// Running E2E p50, ms (kept under its earlier name).
    pub e2e_p50_ms: Option<f64>,
    /// Tokens/s p50.
    pub tokens_per_second_p50: Option<f64>,
    /// Tokens/s p95 floor (p = 0.05).
    pub tokens_per_second_p95_floor: Option<f64>,
    /// The most recent E2E values, ms, oldest first.
    pub recent_e2e_ms: Vec<f64>,
    /// The latest error: `round N class: message`.
    pub latest_error: Option<String>,
}

/// The round timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundsView {
    /// Round lines shown (of the family filter).
    pub lines: usize,
    /// Launch skew percentiles over those lines, ms.
    pub launch_skew_ms: Percentiles,
    /// Round durations, ms.
    pub round_ms: Percentiles,
    /// The most recent launch skews, ms, oldest first (at most 240).
    pub recent_skew_ms: Vec<f64>,
    /// The last round line shown.
    pub last: Option<LastRound>,
}

/// The last round line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LastRound {
    /// Round index.
    pub round_index: u64,
    /// Launch skew, ms.
    pub launch_skew_ms: f64,
    /// Release → last record, ms.
    pub round_ms: f64,
    /// Coordinator overhead, ms.
    pub coordinator_overhead_ms: Option<f64>,
}

/// One bin of the E2E histogram: `[lo, hi)` (the last bin also holds everything above).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bin {
    /// Lower edge, ms.
    pub lo_ms: f64,
    /// Upper edge, ms.
    pub hi_ms: f64,
    /// Values in the bin.
    pub count: usize,
}

/// The current step of a run of load phases: the highest phase index that has a record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadView {
    /// Phase index (the load workflow's step index).
    pub phase: u32,
    /// Its name in the plan (`step-2 poisson 8/s`).
    pub name: String,
    /// Its lanes shown (the region filter applies), in base order.
    pub lanes: Vec<LoadLaneView>,
    /// The sittings that sent its requests so far; more than one when it was interrupted and
    /// resumed mid-step (its achieved rate then spans the pause).
    pub sittings: Vec<u32>,
}

/// One lane of the current load step, over its records written so far (warm-up and cool-down
/// included: `watch` does not know the measured window; harness failures left out, as the
/// report leaves them out).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadLaneView {
    /// Lane label.
    pub lane: String,
    /// Open loop: the rate its releases ask for, per second ([`Target::RatePerS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_per_s: Option<f64>,
    /// Closed loop: its users.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub users: Option<u32>,
    /// Its requests of the step recorded so far.
    pub requests: usize,
    /// (n − 1) ÷ (last − first actual send) of those requests, per second: the same estimator
    /// as an open loop's target, over the sends.
    pub achieved_per_s: Option<f64>,
    /// ITL gaps so far: every gap between consecutive answer-bearing events of each completed
    /// request (the report's `RequestTimings::itl_ms`), pooled.
    pub itl_gaps: usize,
    /// Nearest-rank ITL p50, ms.
    pub itl_p50_ms: Option<f64>,
    /// Nearest-rank ITL p99, ms.
    pub itl_p99_ms: Option<f64>,
}

/// Everything on screen.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct View {
    /// Run id.
    pub run_id: String,
    /// What last ran.
    pub mode: RunMode,
    /// Manifest status.
    pub status: Option<RunStatus>,
    /// Smoke attempt shown (0 for a full run).
    pub attempt: u32,
    /// The choices this view was built with.
    pub options: ViewOptions,
    /// Rounds whose every lane is committed (whole run, filters aside).
    pub rounds_done: usize,
    /// Rounds in the plan.
    pub rounds_total: usize,
    /// The plan is of phases: `rounds_done` and `rounds_total` count phases (absent otherwise).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_phase: bool,
    /// Committed requests (whole run).
    pub requests_done: usize,
    /// Requests in the plan.
    pub requests_total: usize,
    /// Operational failures (whole run).
    pub failures: usize,
    /// Harness failures awaiting re-execution (whole run).
    pub harness_errors: usize,
    /// Seconds left at the pace of the last rounds.
    pub eta_s: Option<f64>,
    /// Lines that did not parse.
    pub unreadable_lines: u64,
    /// Families known.
    pub families: Vec<String>,
    /// Regions known.
    pub regions: Vec<String>,
    /// Lanes shown, sorted.
    pub lanes: Vec<LaneView>,
    /// Counting failures of the lanes shown, by class.
    pub failure_classes: BTreeMap<String, usize>,
    /// E2E histogram of the lanes shown.
    pub e2e_histogram: Vec<Bin>,
    /// The round timeline.
    pub rounds: RoundsView,
    /// The simulator's time scale when the run targets the embedded simulator: its times are
    /// that fraction of the profiles' (absent for real providers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulator_time_scale: Option<f64>,
    /// The current load step (runs of load phases only; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadView>,
    /// A problem met while refreshing (shown, not fatal: the next refresh tries again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

impl View {
    /// Builds the view of `state` under `options`.
    pub fn build(header: &Header, state: &RunState, options: &ViewOptions) -> View {
        let family = options
            .family
            .as_ref()
            .and_then(|f| state.families.iter().position(|x| x == f));
        let in_family = |i: usize| options.family.is_none() || family == Some(i);
        let mut lanes = Vec::new();
        let mut failure_classes = BTreeMap::new();
        let mut all_e2e = Vec::new();
        for (lane_index, info) in state.lanes.iter().enumerate() {
            if options.region.as_ref().is_some_and(|r| *r != info.region) {
                continue;
            }
            let cells: Vec<&Cell> = state.cells[lane_index]
                .iter()
                .enumerate()
                .filter(|(i, _)| in_family(*i))
                .map(|(_, c)| c)
                .collect();
            for cell in &cells {
                for (class, n) in &cell.classes {
                    *failure_classes.entry(class.clone()).or_insert(0) += n;
                }
                all_e2e.extend_from_slice(&cell.e2e_ms);
            }
            lanes.push(lane_view(info, &cells));
        }
        sort_lanes(&mut lanes, options.sort, options.reverse);
        let (mut totals, mut failures, mut harness) = (0, 0, 0);
        for lane in &state.cells {
            for cell in lane {
                totals += cell.planned;
                failures += cell.failures;
                harness += cell.harness_errors;
            }
        }
        let requests_done = state
            .cells
            .iter()
            .flatten()
            .map(|c| c.submitted)
            .sum::<usize>();
        let mut regions: Vec<String> = Vec::new();
        for l in &state.lanes {
            if !regions.contains(&l.region) {
                regions.push(l.region.clone());
            }
        }
        let rounds: Vec<&RoundPoint> = state
            .rounds
            .iter()
            .filter(|r| options.family.is_none() || r.family.is_some_and(|f| family == Some(f)))
            .collect();
        View {
            run_id: header.run_id.clone(),
            mode: header.mode,
            status: header.status,
            attempt: header.attempt,
            options: options.clone(),
            rounds_done: state.rounds_done,
            rounds_total: state.rounds_total,
            by_phase: state.by_phase,
            requests_done,
            requests_total: totals,
            failures,
            harness_errors: harness,
            eta_s: eta(
                &state.rounds,
                state.rounds_total.saturating_sub(state.rounds_done),
            ),
            unreadable_lines: state.unreadable_lines,
            families: state.families.clone(),
            regions,
            lanes,
            failure_classes,
            e2e_histogram: histogram(&mut all_e2e, HISTOGRAM_BINS),
            rounds: rounds_view(&rounds),
            load: load_view(state, options),
            simulator_time_scale: header.simulator_time_scale,
            notice: None,
        }
    }
}

fn lane_view(info: &crate::state::LaneInfo, cells: &[&Cell]) -> LaneView {
    let gather = |pick: fn(&Cell) -> &Vec<f64>| -> Vec<f64> {
        cells.iter().flat_map(|c| pick(c).iter().copied()).collect()
    };
    let ttfa = percentiles(gather(|c| &c.ttfa_ms));
    let e2e = percentiles(gather(|c| &c.e2e_ms));
    let mut tps = gather(|c| &c.tokens_per_second);
    sort(&mut tps);
    let mut recent: Vec<(u64, f64)> = cells
        .iter()
        .flat_map(|c| c.recent_e2e.iter().copied())
        .collect();
    recent.sort_by_key(|(seq, _)| *seq);
    let recent: Vec<f64> = recent[recent.len().saturating_sub(crate::state::RECENT)..]
        .iter()
        .map(|(_, v)| *v)
        .collect();
    let latest_error = cells
        .iter()
        .filter_map(|c| c.latest_error.as_ref())
        .max_by_key(|e| e.seq)
        .map(|e| match &e.message {
            Some(m) => format!("round {} {}: {m}", e.round_index, e.class),
            None => format!("round {} {}", e.round_index, e.class),
        });
    let sum = |pick: fn(&Cell) -> usize| cells.iter().map(|c| pick(c)).sum::<usize>();
    LaneView {
        lane: info.label.clone(),
        provider: info.provider.clone(),
        region: info.region.clone(),
        planned: sum(|c| c.planned),
        open_ended: cells.iter().any(|c| c.open_ended),
        submitted: sum(|c| c.submitted),
        completed: sum(|c| c.completed),
        failures: sum(|c| c.failures),
        harness_errors: sum(|c| c.harness_errors),
        ttfa_p50_ms: ttfa.p50,
        e2e_p50_ms: e2e.p50,
        ttfa_ms: ttfa,
        e2e_ms: e2e,
        tokens_per_second_p50: at(&tps, 0.5),
        tokens_per_second_p95_floor: at(&tps, 0.05),
        recent_e2e_ms: recent,
        latest_error,
    }
}

/// The load row of the current step: the highest phase with a record, when the plan says what
/// it asks of its lanes.
fn load_view(state: &RunState, options: &ViewOptions) -> Option<LoadView> {
    let phase = state.load_samples.values().map(|(p, _)| *p).max()?;
    let plan = state.phase_loads.get(phase as usize)?.as_ref()?;
    let region_of = |label: &str| {
        state
            .lanes
            .iter()
            .find(|l| l.label == label)
            .map(|l| l.region.as_str())
    };
    let lanes = plan
        .lanes
        .iter()
        .filter(|(label, _)| {
            options
                .region
                .as_ref()
                .is_none_or(|r| region_of(label) == Some(r.as_str()))
        })
        .map(|(label, target)| load_lane(state, phase, label, *target))
        .collect();
    Some(LoadView {
        phase,
        name: plan.name.clone(),
        lanes,
        sittings: state
            .phase_sittings
            .get(&phase)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default(),
    })
}

/// One lane's row of the current step.
fn load_lane(state: &RunState, phase: u32, label: &str, target: Target) -> LoadLaneView {
    let mut sent = Vec::new();
    let mut gaps = Vec::new();
    for (request_id, (p, sample)) in &state.load_samples {
        if *p != phase || sample.lane != label || sample.outcome == Outcome::HarnessError {
            continue;
        }
        sent.push(sample.sent_ms);
        let mut sample = sample.clone();
        sample.answer_events_ms = state.chunks.of(request_id);
        sample.read_groups = state.chunks.groups(request_id);
        gaps.extend(RequestTimings::of(&sample).itl_ms);
    }
    sort(&mut sent);
    let itl = Distribution::of(&gaps);
    LoadLaneView {
        lane: label.to_string(),
        target_per_s: match target {
            Target::RatePerS(rate) => rate,
            Target::Users(_) => None,
        },
        users: match target {
            Target::Users(n) => Some(n),
            Target::RatePerS(_) => None,
        },
        requests: sent.len(),
        achieved_per_s: rate_per_s(&sent),
        itl_gaps: itl.count,
        itl_p50_ms: itl.p50,
        itl_p99_ms: itl.p99,
    }
}

/// Ascending, NaN dropped.
fn sort(values: &mut Vec<f64>) {
    values.retain(|v| !v.is_nan());
    values.sort_by(f64::total_cmp);
}

/// Nearest-rank value of an ascending population.
fn at(sorted: &[f64], p: f64) -> Option<f64> {
    (!sorted.is_empty()).then(|| sorted[rank_index(sorted.len(), p)])
}

fn percentiles(mut values: Vec<f64>) -> Percentiles {
    sort(&mut values);
    Percentiles {
        n: values.len(),
        p50: at(&values, 0.5),
        p95: at(&values, 0.95),
        p99: at(&values, 0.99),
    }
}

fn sort_lanes(lanes: &mut [LaneView], key: SortKey, reverse: bool) {
    // Missing values sort last whatever the direction; ties keep plan order (stable sort).
    let value = |l: &LaneView| -> Option<f64> {
        match key {
            SortKey::Lane => Some(0.0),
            SortKey::Progress => Some(-(l.submitted as f64 / l.planned.max(1) as f64)),
            SortKey::TtfaP50 => l.ttfa_ms.p50,
            SortKey::E2eP50 => l.e2e_ms.p50,
            SortKey::E2eP99 => l.e2e_ms.p99,
            SortKey::TokensPerSecond => l.tokens_per_second_p50.map(|v| -v),
            SortKey::Failures => Some(-((l.failures + l.harness_errors) as f64)),
        }
    };
    lanes.sort_by(|a, b| match (value(a), value(b)) {
        (Some(x), Some(y)) if reverse => y.total_cmp(&x),
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    if key == SortKey::Lane && reverse {
        lanes.reverse();
    }
}

/// `bins` equal-width bins from the minimum to the p99 (the last bin also holds the tail above
/// it, so one outlier does not squash the rest).
fn histogram(values: &mut Vec<f64>, bins: usize) -> Vec<Bin> {
    sort(values);
    let (Some(&lo), Some(hi)) = (values.first(), at(values, 0.99)) else {
        return Vec::new();
    };
    let width = ((hi - lo) / bins as f64).max(f64::MIN_POSITIVE);
    let mut out: Vec<Bin> = (0..bins)
        .map(|i| Bin {
            lo_ms: lo + width * i as f64,
            hi_ms: lo + width * (i + 1) as f64,
            count: 0,
        })
        .collect();
    for v in values.iter() {
        let i = (((v - lo) / width) as usize).min(bins - 1);
        out[i].count += 1;
    }
    out
}

fn rounds_view(rounds: &[&RoundPoint]) -> RoundsView {
    let skews: Vec<f64> = rounds.iter().map(|r| r.launch_skew_ms).collect();
    RoundsView {
        lines: rounds.len(),
        launch_skew_ms: percentiles(skews.clone()),
        round_ms: percentiles(rounds.iter().map(|r| r.round_ms).collect()),
        recent_skew_ms: skews[skews.len().saturating_sub(240)..].to_vec(),
        last: rounds.last().map(|r| LastRound {
            round_index: r.round_index,
            launch_skew_ms: r.launch_skew_ms,
            round_ms: r.round_ms,
            coordinator_overhead_ms: r.coordinator_overhead_ms,
        }),
    }
}

/// Seconds left at the pace of the last [`ETA_ROUNDS`] round lines (round time plus coordinator
/// overhead) times the rounds not yet done; 0 when none is left, `None` before any round line.
fn eta(rounds: &[RoundPoint], remaining: usize) -> Option<f64> {
    if remaining == 0 {
        return Some(0.0);
    }
    let recent = &rounds[rounds.len().saturating_sub(ETA_ROUNDS)..];
    if recent.is_empty() {
        return None;
    }
    let total: f64 = recent
        .iter()
        .map(|r| r.round_ms + r.coordinator_overhead_ms.unwrap_or(0.0))
        .sum();
    Some(total / recent.len() as f64 * remaining as f64 / 1000.0)
}

#[cfg(test)]
mod tests;
