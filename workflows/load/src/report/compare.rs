//! Comparing two load runs: steps matched by their load (the same model and rate or users, in run
//! order), rows matched by lane label (plus the pooled row), and per row the change of each
//! compared figure from run A to run B with a seeded percentile-bootstrap interval.
//!
//! Within a step the requests are the independent units (METHODOLOGY §9). One replicate resamples
//! each run's measured requests of the row (harness failures excluded) uniformly with
//! replacement, as many as it has, from the stream `(seed, "compare", "a"|"b", step, row)`;
//! computes each figure from the resample as the report defines it (an ITL percentile pools the
//! gaps of the drawn requests, a request drawn twice counting twice); and takes B's minus A's. The
//! interval is the 2.5% and 97.5% nearest-rank percentiles of those changes over the replicates
//! in which both runs have the figure. A row with fewer than [`MIN_SAMPLE_VALUES`] measured
//! requests in either run gets no interval (a resample of a handful is nearly the sample itself).

use super::LoadResults;
use super::compute::{LoadMetrics, Row, StepView, compute};
use crate::metrics::step::is_measured;
use crate::metrics::{FailureClass, RequestSample, RequestTimings, Slo};
use openbench_common::record::Outcome;
use openbench_common::rng::Stream;
use openbench_common::stats::nearest_rank_in_place;
use openbench_common::validity::assess::Quantile;
use openbench_report_kit::bootstrap::MIN_SAMPLE_VALUES;
use openbench_report_kit::bootstrap::percentile_interval;
use openbench_report_kit::repeats::RepeatInterval;
use openbench_report_kit::request::is_good;
use serde::Serialize;

/// Confidence level of the intervals.
pub const LEVEL: f64 = 0.95;

/// A compared figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    /// TTFA p50, ms.
    TtfaP50,
    /// TTFA p99, ms.
    TtfaP99,
    /// ITL p50, ms.
    ItlP50,
    /// ITL p99, ms.
    ItlP99,
    /// E2E p99, ms.
    E2eP99,
    /// TPOT p50, ms.
    TpotP50,
    /// Goodput fraction of measured requests.
    GoodputFraction,
    /// Failed measured requests ÷ measured requests.
    FailureFraction,
}

impl Figure {
    /// The part of the distribution the figure reads (a median's change is held to the runs'
    /// median timing error, a tail's to their p99).
    pub fn quantile(self) -> Quantile {
        match self {
            Figure::TtfaP50 | Figure::ItlP50 | Figure::TpotP50 => Quantile::Median,
            _ => Quantile::Tail,
        }
    }

    /// Every compared figure, in table order.
    pub const ALL: [Figure; 8] = [
        Figure::TtfaP50,
        Figure::TtfaP99,
        Figure::ItlP50,
        Figure::ItlP99,
        Figure::E2eP99,
        Figure::TpotP50,
        Figure::GoodputFraction,
        Figure::FailureFraction,
    ];

    /// The label in `compare.md`.
    pub fn label(self) -> &'static str {
        match self {
            Figure::TtfaP50 => "TTFA p50",
            Figure::TtfaP99 => "TTFA p99",
            Figure::ItlP50 => "ITL p50",
            Figure::ItlP99 => "ITL p99",
            Figure::E2eP99 => "E2E p99",
            Figure::TpotP50 => "TPOT p50",
            Figure::GoodputFraction => "goodput",
            Figure::FailureFraction => "failures",
        }
    }

    /// True when a larger value is better.
    pub fn higher_is_better(self) -> bool {
        self == Figure::GoodputFraction
    }

    /// True for a fraction (shown in percentage points).
    pub fn is_fraction(self) -> bool {
        matches!(self, Figure::GoodputFraction | Figure::FailureFraction)
    }

    /// The figure as the report computed it for a row.
    pub fn of_row(self, row: &Row) -> Option<f64> {
        let m = &row.metrics;
        match self {
            Figure::TtfaP50 => m.ttfa_ms.p50,
            Figure::TtfaP99 => m.ttfa_ms.p99,
            Figure::ItlP50 => m.itl_ms.p50,
            Figure::ItlP99 => m.itl_ms.p99,
            Figure::E2eP99 => m.e2e_ms.p99,
            Figure::TpotP50 => m.tpot_ms.p50,
            Figure::GoodputFraction => (m.measured > 0).then_some(m.goodput.fraction),
            Figure::FailureFraction => (m.measured > 0)
                .then(|| m.failures.values().sum::<usize>() as f64 / m.measured as f64),
        }
    }
}

/// What one measured request contributes to the figures.
struct Unit {
    timings: RequestTimings,
    good: bool,
    failed: bool,
}

impl Unit {
    fn of(sample: &RequestSample, slo: &Slo) -> Unit {
        let timings = RequestTimings::of(sample);
        Unit {
            good: is_good(sample, &timings, slo),
            failed: FailureClass::of(sample.outcome, sample.error_type).is_some(),
            timings,
        }
    }
}

/// One value per figure, in [`Figure::ALL`] order.
type Figures = [Option<f64>; 8];

/// Every figure over one drawn population of units (a resample), as the report defines them, in
/// [`Figure::ALL`] order. Each population is gathered once and its percentiles selected in place.
fn figures_of(units: &[Unit], drawn: &[usize]) -> Figures {
    let (mut ttfa, mut e2e, mut tpot, mut gaps) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut good, mut failed) = (0usize, 0usize);
    for &i in drawn {
        let u = &units[i];
        let t = &u.timings;
        ttfa.extend(t.ttfa_ms);
        e2e.extend(t.e2e_ms);
        tpot.extend(t.tpot_ms);
        gaps.extend_from_slice(&t.itl_ms);
        good += usize::from(u.good);
        failed += usize::from(u.failed);
    }
    let share = |k: usize| (!drawn.is_empty()).then(|| k as f64 / drawn.len() as f64);
    [
        nearest_rank_in_place(&mut ttfa, 0.5),
        nearest_rank_in_place(&mut ttfa, 0.99),
        nearest_rank_in_place(&mut gaps, 0.5),
        nearest_rank_in_place(&mut gaps, 0.99),
        nearest_rank_in_place(&mut e2e, 0.99),
        nearest_rank_in_place(&mut tpot, 0.5),
        share(good),
        share(failed),
    ]
}

/// The change of one figure of one row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// Which figure.
    pub figure: Figure,
    /// Run A's value.
    pub a: Option<f64>,
    /// Run B's value.
    pub b: Option<f64>,
    /// B − A.
    pub delta: Option<f64>,
    /// Lower end of the interval of B − A.
    pub low: Option<f64>,
    /// Upper end.
    pub high: Option<f64>,
    /// Replicates in which both runs had the figure.
    pub replicates: usize,
    /// The larger of the two runs' own measured timing error, ms (0 when neither measured it):
    /// a latency change no larger is not called better or worse (docs/validity.md).
    #[serde(skip_serializing_if = "is_zero")]
    pub error_floor_ms: f64,
    /// Either run's validity section failed: its verdict is labelled so.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub validity_failed: bool,
    /// When both runs repeated the step (`load.repeats`): each run's mean and 95% t interval
    /// across its repeats (`a` and `b` are then the means). The verdict then rests on these
    /// two intervals, not on a bootstrap over requests (docs/load.md, "Repeats").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<(RepeatInterval, RepeatInterval)>,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl Change {
    /// `better` or `worse` when the interval excludes zero and a latency change is larger than
    /// the runs' own measured error (else `—`, or `— (within measured error)`), labelled when
    /// it rests on a run whose validity failed.
    ///
    /// When both runs repeated the step, the change is called only when the two runs'
    /// across-repeat intervals are separated (`— (repeat intervals overlap)` otherwise), and
    /// still never within the measured error.
    pub fn verdict(&self) -> &'static str {
        if let Some((a, b)) = &self.repeats {
            return match self.delta {
                Some(d) if a.separated_from(b) => self.called(d),
                Some(_) => "— (repeat intervals overlap)",
                None => "—",
            };
        }
        match (self.low, self.high, self.delta) {
            (Some(l), Some(h), Some(d)) if l > 0.0 || h < 0.0 => self.called(d),
            _ => "—",
        }
    }

    /// The verdict of a change `d` its interval(s) call: held to the measured error, then
    /// better or worse, labelled when a run's validity failed.
    fn called(&self, d: f64) -> &'static str {
        let latency = !self.figure.is_fraction();
        if latency && self.error_floor_ms > 0.0 && d.abs() <= self.error_floor_ms {
            return "— (within measured error)";
        }
        match (
            (d > 0.0) == self.figure.higher_is_better(),
            self.validity_failed,
        ) {
            (true, false) => "better",
            (false, false) => "worse",
            (true, true) => "better (validity failed)",
            (false, true) => "worse (validity failed)",
        }
    }
}

/// One row (lane or pooled) of a matched step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowComparison {
    /// Lane label, or `pooled`.
    pub name: String,
    /// Measured requests in A and B.
    pub measured: (usize, usize),
    /// Achieved rate per second in A and B (no interval: a count over a fixed window).
    pub achieved_per_s: (f64, f64),
    /// Whether the row sustained the step in A and in B (the report's own rule).
    pub sustained: (bool, bool),
    /// The figures' changes, in [`Figure::ALL`] order.
    pub changes: Vec<Change>,
}

/// A step of A matched with a step of B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepComparison {
    /// The shared load label.
    pub label: String,
    /// Step index in A and in B.
    pub steps: (usize, usize),
    /// Rows: lanes present in both runs (A's order), then pooled.
    pub rows: Vec<RowComparison>,
    /// Lanes of the step in only one of the runs.
    pub unmatched_lanes: Vec<String>,
    /// When both runs repeated the step: the repeats each ran (`steps` are then the written
    /// steps' positions in `load.steps`, and every figure is a mean across repeats).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<(usize, usize)>,
}

/// `compare.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Run A's id.
    pub run_a: String,
    /// Run B's id.
    pub run_b: String,
    /// Bootstrap replicates per run.
    pub replicates: usize,
    /// Seed of the resampling.
    pub seed: u64,
    /// Matched steps in A's order.
    pub steps: Vec<StepComparison>,
    /// Step labels of A with no counterpart in B (`A: …`) and of B with none in A (`B: …`).
    pub unmatched_steps: Vec<String>,
}

/// Compares B against A: step by step, or, when both runs repeated their sweep, written step by
/// written step across the repeats ([`super::compare_repeats`]).
pub fn comparison(a: &LoadResults, b: &LoadResults, replicates: usize, seed: u64) -> Comparison {
    let (ma, mb) = (compute(a), compute(b));
    if !ma.repeats.is_empty() && !mb.repeats.is_empty() {
        let (steps, unmatched_steps) = super::compare_repeats::steps(&ma, &mb);
        return Comparison {
            run_a: a.run_id.clone(),
            run_b: b.run_id.clone(),
            replicates: 0,
            seed,
            steps,
            unmatched_steps,
        };
    }
    let mut used = vec![false; b.steps.len()];
    let mut steps = Vec::new();
    let mut unmatched_steps = Vec::new();
    for (ia, step_a) in a.steps.iter().enumerate() {
        let found = (0..b.steps.len()).find(|&ib| !used[ib] && b.steps[ib].model == step_a.model);
        let Some(ib) = found else {
            unmatched_steps.push(format!("A: {}", ma.steps[ia].label));
            continue;
        };
        used[ib] = true;
        let ctx = Pair {
            a: (a, &ma, ia),
            b: (b, &mb, ib),
            replicates,
            seed,
        };
        steps.push(ctx.step());
    }
    for (ib, used) in used.iter().enumerate() {
        if !used {
            unmatched_steps.push(format!("B: {}", mb.steps[ib].label));
        }
    }
    Comparison {
        run_a: a.run_id.clone(),
        run_b: b.run_id.clone(),
        replicates,
        seed,
        steps,
        unmatched_steps,
    }
}

/// The larger of two runs' measured timing error at `quantile`, ms (0 when neither measured it).
pub(super) fn error_floor_ms(a: &LoadMetrics, b: &LoadMetrics, quantile: Quantile) -> f64 {
    let error = |m: &LoadMetrics| {
        m.validity
            .as_ref()
            .map_or(0.0, |v| v.measured_error_ms_at(quantile))
    };
    error(a).max(error(b))
}

/// Whether either run's validity failed.
pub(super) fn validity_failed(a: &LoadMetrics, b: &LoadMetrics) -> bool {
    let failed = |m: &LoadMetrics| m.validity.as_ref().is_some_and(|v| !v.passed());
    failed(a) || failed(b)
}

/// One side's view of its step.
fn view<'a>(side: (&'a LoadResults, &'a LoadMetrics, usize)) -> &'a StepView {
    &side.1.steps[side.2]
}

/// One matched pair of steps: each side's results, metrics and step position.
struct Pair<'a> {
    a: (&'a LoadResults, &'a LoadMetrics, usize),
    b: (&'a LoadResults, &'a LoadMetrics, usize),
    replicates: usize,
    seed: u64,
}

impl Pair<'_> {
    /// The larger of the two runs' measured timing error at `quantile`, ms.
    fn error_floor_ms(&self, quantile: Quantile) -> f64 {
        error_floor_ms(self.a.1, self.b.1, quantile)
    }

    /// Whether either run's validity failed.
    fn validity_failed(&self) -> bool {
        validity_failed(self.a.1, self.b.1)
    }

    fn step(&self) -> StepComparison {
        let (va, vb) = (view(self.a), view(self.b));
        let mut rows = Vec::new();
        let mut unmatched_lanes = Vec::new();
        for ra in &va.lanes {
            match vb.lanes.iter().find(|r| r.name == ra.name) {
                Some(rb) => rows.push(self.row(ra, rb, Some(&ra.name))),
                None => unmatched_lanes.push(format!("A: {}", ra.name)),
            }
        }
        for rb in &vb.lanes {
            if !va.lanes.iter().any(|r| r.name == rb.name) {
                unmatched_lanes.push(format!("B: {}", rb.name));
            }
        }
        rows.push(self.row(&va.pooled, &vb.pooled, None));
        StepComparison {
            label: va.label.clone(),
            steps: (va.index, vb.index),
            rows,
            unmatched_lanes,
            repeats: None,
        }
    }

    /// The measured units of one side's step, of `lane` or of every lane.
    fn units(side: (&LoadResults, &LoadMetrics, usize), lane: Option<&str>) -> Vec<Unit> {
        let (results, _, i) = side;
        let step = &results.steps[i];
        step.samples
            .iter()
            .filter(|s| lane.is_none_or(|l| s.lane == l))
            .filter(|s| is_measured(s, &step.window) && s.outcome != Outcome::HarnessError)
            .map(|s| Unit::of(s, &results.settings.slo))
            .collect()
    }

    fn row(&self, ra: &Row, rb: &Row, lane: Option<&str>) -> RowComparison {
        let (ua, ub) = (Self::units(self.a, lane), Self::units(self.b, lane));
        let enough = ua.len() >= MIN_SAMPLE_VALUES && ub.len() >= MIN_SAMPLE_VALUES;
        let name = lane.unwrap_or("pooled");
        let draws = |units: &[Unit], side: &str, step: usize| -> Vec<Vec<usize>> {
            if !enough {
                return Vec::new();
            }
            let mut stream = Stream::derive(self.seed, &["compare", side, &step.to_string(), name]);
            let n = units.len() as u64;
            (0..self.replicates)
                .map(|_| (0..n).map(|_| stream.below(n) as usize).collect())
                .collect()
        };
        let (da, db) = (draws(&ua, "a", self.a.2), draws(&ub, "b", self.b.2));
        let replicate_figures: Vec<(Figures, Figures)> = da
            .iter()
            .zip(&db)
            .map(|(xa, xb)| (figures_of(&ua, xa), figures_of(&ub, xb)))
            .collect();
        let changes = Figure::ALL
            .iter()
            .enumerate()
            .map(|(k, &figure)| {
                let (va, vb) = (figure.of_row(ra), figure.of_row(rb));
                let deltas: Vec<f64> = replicate_figures
                    .iter()
                    .filter_map(|(fa, fb)| Some(fb[k]? - fa[k]?))
                    .collect();
                let (low, high) = percentile_interval(&deltas, LEVEL);
                Change {
                    figure,
                    a: va,
                    b: vb,
                    delta: va.zip(vb).map(|(x, y)| y - x),
                    low,
                    high,
                    replicates: deltas.len(),
                    error_floor_ms: self.error_floor_ms(figure.quantile()),
                    validity_failed: self.validity_failed(),
                    repeats: None,
                }
            })
            .collect();
        RowComparison {
            name: name.to_string(),
            measured: (ra.metrics.measured, rb.metrics.measured),
            achieved_per_s: (
                ra.metrics.rate.achieved_per_s,
                rb.metrics.rate.achieved_per_s,
            ),
            sustained: (ra.metrics.sustained, rb.metrics.sustained),
            changes,
        }
    }
}
