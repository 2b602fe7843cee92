//! From [`LoadResults`] to the figures every report shows: per step, one row per lane, per
//! provider (pooled over its regions, when it has several) and pooled over all lanes, each with
//! the step's [`StepMetrics`] (the `metrics` module's definitions, docs/load.md) plus what only a
//! report needs: the largest send lag, the ITL histogram, `Retry-After` of rate-limited requests,
//! (whether the row sustained the step is the metrics' own `sustained`); then the saturation
//! point of every lane and provider.

use super::{LaneLoad, LoadResults, StepResults};
use crate::metrics::saturation::{StepResult, saturation_point};
use crate::metrics::step::{FailureClass, is_measured, step_metrics};
use crate::metrics::{RequestSample, RequestTimings, StepMetrics, StepSettings};
use crate::spec::{Arrivals, StepModel};
use openbench_common::record::Outcome;
use openbench_common::stats::nearest_rank;
use openbench_report_kit::bootstrap::sample_percentile_interval;
use serde::Serialize;
use std::collections::BTreeMap;

/// Upper edges (ms, exclusive) of the ITL histogram's buckets; a last bucket holds the rest.
pub const ITL_EDGES_MS: [f64; 10] = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0];

/// Bootstrap replicates of the report's per-row intervals.
pub const REPORT_REPLICATES: usize = 1000;

/// 95% percentile-bootstrap intervals of a row's latency percentiles over its requests
/// (`openbench_report_kit::bootstrap::sample_percentile_interval`, seeded from the spec's seed
/// and `step/row/figure`); `None` under 30 values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Intervals {
    /// TTFA p50.
    pub ttfa_p50_ms: Option<(f64, f64)>,
    /// TTFA p99.
    pub ttfa_p99_ms: Option<(f64, f64)>,
    /// E2E p50.
    pub e2e_p50_ms: Option<(f64, f64)>,
    /// E2E p99.
    pub e2e_p99_ms: Option<(f64, f64)>,
}

/// Everything `load-metrics.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadMetrics {
    /// The run id.
    pub run_id: String,
    /// Whether goodput also needed a right answer.
    pub scored: bool,
    /// The rules' settings.
    pub settings: SettingsView,
    /// Lines the report states in its header.
    pub notes: Vec<String>,
    /// The steps in run order.
    pub steps: Vec<StepView>,
    /// Saturation points, lanes first then providers with several lanes, by name.
    pub saturation: Vec<Saturation>,
    /// How far the run's own measurement can be trusted (docs/validity.md); absent for a run
    /// made before it was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validity: Option<openbench_common::validity::assess::ValiditySection>,
    /// A repeated sweep's figures per repeat and across repeats (`load.repeats`); absent for a
    /// run made once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<super::repeats::RepeatedStep>,
}

/// The rules' settings as the report states them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SettingsView {
    /// SLO bounds by metric name (`ttfa_ms` → 500).
    pub slo: BTreeMap<String, f64>,
    /// Smallest achieved ÷ target rate that keeps up.
    pub sustain_fraction: f64,
    /// Smallest goodput fraction of a sustained step.
    pub goodput_threshold: f64,
}

/// One step's rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepView {
    /// 0-based step index.
    pub index: usize,
    /// `closed c=4`, `constant 2.5/s`, `poisson 8/s`.
    pub label: String,
    /// `closed`, `constant` or `poisson`.
    pub model: &'static str,
    /// Measured window start, ms from the step's start.
    pub window_start_ms: f64,
    /// Measured window end, ms from the step's start.
    pub window_end_ms: f64,
    /// Requests lost to our own machinery in the whole step (never counted against a provider).
    pub harness_failures: u64,
    /// The sittings that sent the step's requests; more than one when it was interrupted and
    /// resumed (its window then mixes two timelines).
    pub sittings: Vec<u32>,
    /// One row per lane, in the base order of `lanes`.
    pub lanes: Vec<Row>,
    /// One row per provider with several lanes (its regions pooled), by provider key.
    pub providers: Vec<Row>,
    /// All lanes pooled.
    pub pooled: Row,
    /// A conversation step's figures per turn index (absent for any other step).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<super::turns::TurnRow>,
    /// An agent step's figures per step index and per run (absent for any other step).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<super::agents::AgentView>,
    /// Which repeat of which written step this is (`load.repeats`); absent for a run made once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat: Option<crate::spec::RepeatOf>,
}

/// The figures of one lane, provider or the pool in one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Lane label, provider key, or `pooled`.
    pub name: String,
    /// The row's load: its target rate per second (open loop) or its users (closed loop).
    pub load: f64,
    /// The step's metrics over the row's requests.
    pub metrics: StepMetrics,
    /// Largest actual − scheduled send of a measured request (open loop).
    pub send_lag_max_ms: Option<f64>,
    /// Per-token ITL values per bucket of [`ITL_EDGES_MS`] (one more bucket than edges).
    pub itl_histogram: Vec<u64>,
    /// `Retry-After` of the measured rate-limited requests.
    pub retry_after: RetryAfter,
    /// Bootstrap intervals of the latency percentiles.
    pub intervals: Intervals,
    /// Task success under load (scored runs only): exactly right answers ÷ measured requests
    /// (a failed request is not a right answer).
    pub task_success: Option<f64>,
}

/// What rate-limited requests were told to wait.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetryAfter {
    /// Measured rate-limited requests.
    pub rate_limited: usize,
    /// Of those, the ones that carried a readable `Retry-After`.
    pub with_header: usize,
    /// Smallest wait, seconds.
    pub min_s: Option<f64>,
    /// Nearest-rank median wait, seconds.
    pub p50_s: Option<f64>,
    /// Largest wait, seconds.
    pub max_s: Option<f64>,
}

/// The saturation points of one lane (or provider), per kind of load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Saturation {
    /// Lane label or provider key.
    pub name: String,
    /// Among the closed-loop steps: the sustained one with the most users.
    pub closed: Option<SaturationPoint>,
    /// Among the open-loop steps: the sustained one with the highest target rate.
    pub open: Option<SaturationPoint>,
}

/// One saturation point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SaturationPoint {
    /// The step's index.
    pub step: usize,
    /// The step's label.
    pub label: String,
    /// Its load (target rate per second, or users).
    pub load: f64,
    /// The achieved rate there, per second.
    pub achieved_per_s: f64,
}

/// Computes every figure of the reports.
pub fn compute(results: &LoadResults) -> LoadMetrics {
    let steps: Vec<StepView> = results
        .steps
        .iter()
        .map(|s| step_view(s, results))
        .collect();
    let s = &results.settings;
    let saturation = saturation(&steps, s.goodput_threshold);
    let held_notes: Vec<String> = steps.iter().flat_map(held_length_notes).collect();
    let validity = super::validity::section(results, &steps);
    LoadMetrics {
        run_id: results.run_id.clone(),
        scored: results.scored,
        settings: SettingsView {
            slo: s
                .slo
                .bounds
                .iter()
                .map(|(m, b)| (m.name().to_string(), *b))
                .collect(),
            sustain_fraction: s.sustain_fraction,
            goodput_threshold: s.goodput_threshold,
        },
        notes: results
            .notes
            .iter()
            .cloned()
            .chain(results.steps.iter().filter_map(unlisted_lanes))
            .chain(held_notes)
            .collect(),
        repeats: super::repeats::repeated_steps(&steps),
        steps,
        saturation,
        validity,
    }
}

/// A note on requests of lanes a step does not list (so no row counts them); `None` when every
/// request's lane is listed.
fn unlisted_lanes(step: &StepResults) -> Option<String> {
    let mut lanes: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &step.samples {
        if !step.lanes.iter().any(|l| l.lane == s.lane) {
            *lanes.entry(&s.lane).or_default() += 1;
        }
    }
    (!lanes.is_empty()).then(|| {
        let list: Vec<String> = lanes.iter().map(|(l, n)| format!("{l} ({n})")).collect();
        format!(
            "step {}: requests of lanes the step does not list are not counted: {}",
            step.index,
            list.join(", ")
        )
    })
}

/// A note per lane of `step` whose answers mostly fell short of the held output length: the
/// server did not honour `ignore_eos`, so the step is flagged and not sustained.
fn held_length_notes(step: &StepView) -> Vec<String> {
    step.lanes
        .iter()
        .filter_map(|row| {
            let held = row.metrics.held_length.as_ref().filter(|h| h.flagged)?;
            Some(format!(
                "step {} ({}), {}: {} of {} answers fell short of the held output length \
                 (ignore_eos not honoured); flagged, not sustained, their E2E, TPOT, ITL and \
                 tokens/s left out",
                step.index, step.label, row.name, held.short, held.requests
            ))
        })
        .collect()
}

/// The model's short name.
pub fn model_name(model: &StepModel) -> &'static str {
    match model {
        StepModel::Closed { .. } => "closed",
        StepModel::Open {
            arrivals: Arrivals::Constant,
            ..
        } => "constant",
        StepModel::Open {
            arrivals: Arrivals::Poisson,
            ..
        } => "poisson",
        StepModel::Gamma { .. } => "gamma",
        StepModel::Ramp { .. } => "ramp",
        StepModel::Trace { .. } => "trace",
    }
}

fn step_view(step: &StepResults, results: &LoadResults) -> StepView {
    let row = |name: &str, lanes: &[&LaneLoad]| {
        let mine: Vec<(usize, &RequestSample)> = step
            .samples
            .iter()
            .enumerate()
            .filter(|(_, s)| lanes.iter().any(|l| l.lane == s.lane))
            .collect();
        group_row(name, step, lanes, &mine, results)
    };
    let lanes: Vec<Row> = step.lanes.iter().map(|l| row(&l.lane, &[l])).collect();
    let mut by_provider: BTreeMap<&str, Vec<&LaneLoad>> = BTreeMap::new();
    for lane in &step.lanes {
        by_provider.entry(&lane.provider).or_default().push(lane);
    }
    let providers = by_provider
        .iter()
        .filter(|(_, ls)| ls.len() > 1)
        .map(|(p, ls)| row(p, ls))
        .collect();
    let all: Vec<&LaneLoad> = step.lanes.iter().collect();
    StepView {
        index: step.index,
        label: step.model.label(),
        model: model_name(&step.model),
        window_start_ms: step.window.start_ms(),
        window_end_ms: step.window.end_ms(),
        harness_failures: step.harness_failures,
        sittings: step.sittings.clone(),
        lanes,
        providers,
        pooled: row("pooled", &all),
        turns: super::turns::turn_rows(step, results.scored),
        agent: super::agents::view(step),
        repeat: step.repeat,
    }
}

/// The row of some lanes' requests (`samples` with their indices in the step).
fn group_row(
    name: &str,
    step: &StepResults,
    lanes: &[&LaneLoad],
    samples: &[(usize, &RequestSample)],
    results: &LoadResults,
) -> Row {
    let settings = &results.settings;
    let target: Option<f64> = step.model.is_open().then(|| {
        lanes
            .iter()
            .map(|l| l.target_rate_per_s.unwrap_or(0.0))
            .sum()
    });
    let users: u32 = lanes.iter().map(|l| l.concurrency.unwrap_or(0)).sum();
    let step_settings = StepSettings {
        window: step.window,
        target_rate_per_lane: target,
        sustain_fraction: settings.sustain_fraction,
        goodput_threshold: settings.goodput_threshold,
        slo: settings.slo.clone(),
    };
    let refs: Vec<&RequestSample> = samples.iter().map(|(_, s)| *s).collect();
    let metrics = step_metrics(&refs, &step_settings, 1);
    let measured: Vec<(usize, &RequestSample)> = samples
        .iter()
        .copied()
        .filter(|(_, s)| is_measured(s, &step.window) && s.outcome != Outcome::HarnessError)
        .collect();
    let timings: Vec<RequestTimings> = measured
        .iter()
        .map(|(_, s)| RequestTimings::of(s))
        .collect();
    let send_lag_max_ms = timings
        .iter()
        .filter_map(|t| t.send_lag_ms)
        .max_by(f64::total_cmp)
        .filter(|_| target.is_some());
    let gaps = timings.iter().flat_map(|t| t.itl_ms.iter().copied());
    let load = target.unwrap_or(f64::from(users));
    let right = measured
        .iter()
        .filter(|(_, s)| s.outcome == Outcome::Completed && s.correct == Some(true))
        .count();
    // A conversation's follow-ups without a gold are not in the denominator.
    let scored = measured
        .iter()
        .filter(|(i, s)| s.correct.is_some() || step.turns.get(*i).is_none_or(|t| t.turn == 0))
        .count();
    let task_success = (results.scored && scored > 0).then(|| right as f64 / scored as f64);
    let interval = |values: Vec<f64>, p: f64, figure: &str| {
        let label = format!("{}/{name}/{figure}", step.index);
        sample_percentile_interval(&values, p, REPORT_REPLICATES, settings.seed, &label)
    };
    let ttfa = || {
        timings
            .iter()
            .filter_map(|t| t.ttfa_ms)
            .collect::<Vec<f64>>()
    };
    let e2e = || {
        timings
            .iter()
            .filter_map(|t| t.e2e_ms)
            .collect::<Vec<f64>>()
    };
    let intervals = Intervals {
        ttfa_p50_ms: interval(ttfa(), 0.5, "ttfa_p50"),
        ttfa_p99_ms: interval(ttfa(), 0.99, "ttfa_p99"),
        e2e_p50_ms: interval(e2e(), 0.5, "e2e_p50"),
        e2e_p99_ms: interval(e2e(), 0.99, "e2e_p99"),
    };
    Row {
        name: name.to_string(),
        load,
        send_lag_max_ms,
        itl_histogram: itl_histogram(gaps),
        retry_after: retry_after(&measured, &step.retry_after_s),
        intervals,
        task_success,
        metrics,
    }
}

/// Counts of `gaps` per bucket of [`ITL_EDGES_MS`]: bucket i holds gaps under edge i and at or
/// over edge i − 1; the last holds gaps of 1,000 ms and more.
pub fn itl_histogram(gaps: impl Iterator<Item = f64>) -> Vec<u64> {
    let mut counts = vec![0u64; ITL_EDGES_MS.len() + 1];
    for gap in gaps {
        let bucket = ITL_EDGES_MS
            .iter()
            .position(|edge| gap < *edge)
            .unwrap_or(ITL_EDGES_MS.len());
        counts[bucket] += 1;
    }
    counts
}

fn retry_after(measured: &[(usize, &RequestSample)], waits: &BTreeMap<usize, f64>) -> RetryAfter {
    let limited: Vec<usize> = measured
        .iter()
        .filter(|(_, s)| {
            FailureClass::of(s.outcome, s.error_type) == Some(FailureClass::RateLimited)
        })
        .map(|(i, _)| *i)
        .collect();
    let values: Vec<f64> = limited
        .iter()
        .filter_map(|i| waits.get(i).copied())
        .collect();
    RetryAfter {
        rate_limited: limited.len(),
        with_header: values.len(),
        min_s: values.iter().copied().min_by(f64::total_cmp),
        p50_s: nearest_rank(&values, 0.5),
        max_s: values.iter().copied().max_by(f64::total_cmp),
    }
}

/// The saturation point of every lane and every provider row, per kind of load.
fn saturation(steps: &[StepView], goodput_threshold: f64) -> Vec<Saturation> {
    let mut names: Vec<String> = Vec::new();
    for step in steps {
        for row in step.lanes.iter().chain(&step.providers) {
            if !names.contains(&row.name) {
                names.push(row.name.clone());
            }
        }
    }
    let point = |name: &str, closed: bool| {
        let rows: Vec<(&StepView, &Row)> = steps
            .iter()
            .filter(|s| (s.model == "closed") == closed)
            .filter_map(|s| {
                let mut rows = s.lanes.iter().chain(&s.providers);
                rows.find(|r| r.name == name).map(|r| (s, r))
            })
            .collect();
        let results: Vec<StepResult> = rows
            .iter()
            .map(|(_, r)| StepResult::of(r.load, &r.metrics))
            .collect();
        saturation_point(&results, goodput_threshold).map(|i| {
            let (step, row) = rows[i];
            SaturationPoint {
                step: step.index,
                label: step.label.clone(),
                load: row.load,
                achieved_per_s: row.metrics.rate.achieved_per_s,
            }
        })
    };
    names
        .into_iter()
        .map(|name| Saturation {
            closed: point(&name, true),
            open: point(&name, false),
            name,
        })
        .collect()
}
