//! How run B differs from run A, lane by lane (lanes matched by provider and region) and family
//! by family, with a bootstrap interval on every change (`docs/methodology.md`, "Comparing two
//! runs"): micro-single-task's `compare RUN_A RUN_B` over two run directories and the results
//! store's `history` over stored runs both compare here.
//!
//! Both runs come scored and summarised by the report's own code ([`ScoredView`]:
//! observations, lanes, `metrics::summary::summarize`'s figures); this module only matches
//! lanes, resamples rounds ([`bootstrap`]), lists what differs between the two locks
//! ([`differences`]) and renders `compare.md` and `compare.html` ([`render`]).

pub mod bootstrap;
pub mod differences;
pub mod render;
pub mod repeated;

use crate::metrics::{Observation, RunMetrics, Summary};
use openbench_common::validity::assess::Quantile;
use openbench_report_kit::repeats::RepeatInterval;
use openbench_tasks::scoring::Family;
use std::path::PathBuf;

pub use differences::Difference;

/// Bootstrap settings; the defaults are what `compare` uses without flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareOptions {
    /// Bootstrap replicates per run.
    pub replicates: usize,
    /// Seed of the resampling (same seed, same intervals).
    pub seed: u64,
}

impl Default for CompareOptions {
    fn default() -> CompareOptions {
        CompareOptions {
            replicates: 1000,
            seed: 20_261_201,
        }
    }
}

/// Confidence level of the reported intervals (percentile bootstrap, 2.5% and 97.5%).
pub const LEVEL: f64 = 0.95;

/// One compared figure, named as in `metrics.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// E2E p50, ms.
    E2eP50,
    /// E2E p95, ms.
    E2eP95,
    /// E2E p99, ms.
    E2eP99,
    /// TTFA p50, ms.
    TtfaP50,
    /// TTFA p95, ms.
    TtfaP95,
    /// TTFA p99, ms.
    TtfaP99,
    /// Tokens/s p95 floor (nearest rank at p = .05).
    TpsP95Floor,
    /// Tokens/s p99 floor (nearest rank at p = .01).
    TpsP99Floor,
    /// Correct / submitted.
    TaskSuccess,
    /// Operational failures / submitted.
    FailureRate,
}

/// How a metric's values read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds.
    Ms,
    /// Visible-answer tokens per second.
    TokensPerSecond,
    /// A rate in [0, 1], shown in percentage points.
    Rate,
}

impl Metric {
    /// Every compared metric, in table order.
    pub const ALL: [Metric; 10] = [
        Metric::E2eP50,
        Metric::E2eP95,
        Metric::E2eP99,
        Metric::TtfaP50,
        Metric::TtfaP95,
        Metric::TtfaP99,
        Metric::TpsP95Floor,
        Metric::TpsP99Floor,
        Metric::TaskSuccess,
        Metric::FailureRate,
    ];

    /// The `metrics.json` name.
    pub fn name(self) -> &'static str {
        match self {
            Metric::E2eP50 => "e2e_latency_p50",
            Metric::E2eP95 => "e2e_latency_p95",
            Metric::E2eP99 => "e2e_latency_p99",
            Metric::TtfaP50 => "ttfa_p50",
            Metric::TtfaP95 => "ttfa_p95",
            Metric::TtfaP99 => "ttfa_p99",
            Metric::TpsP95Floor => "output_tokens_per_second_p95",
            Metric::TpsP99Floor => "output_tokens_per_second_p99",
            Metric::TaskSuccess => "task_success_rate",
            Metric::FailureRate => "failure_rate",
        }
    }

    /// The label shown in the reports.
    pub fn label(self) -> &'static str {
        match self {
            Metric::E2eP50 => "E2E p50",
            Metric::E2eP95 => "E2E p95",
            Metric::E2eP99 => "E2E p99",
            Metric::TtfaP50 => "TTFA p50",
            Metric::TtfaP95 => "TTFA p95",
            Metric::TtfaP99 => "TTFA p99",
            Metric::TpsP95Floor => "tokens/s p95 floor",
            Metric::TpsP99Floor => "tokens/s p99 floor",
            Metric::TaskSuccess => "task success",
            Metric::FailureRate => "failure rate",
        }
    }

    /// The part of the distribution the metric reads: its median or its tail.
    pub fn quantile(self) -> Quantile {
        match self {
            Metric::E2eP50 | Metric::TtfaP50 => Quantile::Median,
            _ => Quantile::Tail,
        }
    }

    /// How the metric's values read.
    pub fn unit(self) -> Unit {
        match self {
            Metric::TpsP95Floor | Metric::TpsP99Floor => Unit::TokensPerSecond,
            Metric::TaskSuccess | Metric::FailureRate => Unit::Rate,
            _ => Unit::Ms,
        }
    }

    /// True when a larger value is better (tokens/s, task success).
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Metric::TpsP95Floor | Metric::TpsP99Floor | Metric::TaskSuccess
        )
    }

    /// The metric's value in a summary row (the report's own figure).
    pub fn of(self, s: &Summary) -> Option<f64> {
        match self {
            Metric::E2eP50 => s.e2e_latency_p50,
            Metric::E2eP95 => s.e2e_latency_p95,
            Metric::E2eP99 => s.e2e_latency_p99,
            Metric::TtfaP50 => s.ttfa_p50,
            Metric::TtfaP95 => s.ttfa_p95,
            Metric::TtfaP99 => s.ttfa_p99,
            Metric::TpsP95Floor => s.output_tokens_per_second_p95,
            Metric::TpsP99Floor => s.output_tokens_per_second_p99,
            Metric::TaskSuccess => s.task_success_rate,
            Metric::FailureRate => s.failure_rate,
        }
    }
}

/// The change of one metric from run A to run B.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Which metric.
    pub metric: Metric,
    /// Run A's value.
    pub a: Option<f64>,
    /// Run B's value.
    pub b: Option<f64>,
    /// B − A.
    pub delta: Option<f64>,
    /// Lower end of the 95% bootstrap interval of B − A.
    pub low: Option<f64>,
    /// Upper end.
    pub high: Option<f64>,
    /// Replicates in which both runs had the metric.
    pub replicates: usize,
    /// The larger of the two runs' own measured timing error, ms (their validity sections'
    /// `measured_error_ms`; 0 when neither measured it): a latency change no larger is noise.
    pub error_floor_ms: f64,
    /// Either run's validity section failed: a verdict rests on a run that may have measured
    /// the machine rather than the provider.
    pub validity_failed: bool,
    /// When both runs repeated their round set (`plans.repeats`): each run's mean and 95% t
    /// interval across its repeats (`a` and `b` are then the means, and there is no bootstrap
    /// interval). The change is then called only when the two are separated, load's rule
    /// ([`RepeatInterval::separated_from`]; docs/methodology.md, "Repeats of paired rounds").
    pub repeats: Option<(RepeatInterval, RepeatInterval)>,
}

impl Change {
    /// True when the evidence rules out "no change": the bootstrap interval lies wholly above
    /// or below zero, or, for two repeated runs, their across-repeat intervals are separated.
    pub fn excludes_zero(&self) -> bool {
        if let Some((a, b)) = &self.repeats {
            return a.separated_from(b);
        }
        matches!((self.low, self.high), (Some(l), Some(h)) if l > 0.0 || h < 0.0)
    }

    /// True for a latency change no larger than the runs' own measured timing error.
    pub fn within_measured_error(&self) -> bool {
        self.metric.unit() == Unit::Ms
            && self.error_floor_ms > 0.0
            && self.delta.is_some_and(|d| d.abs() <= self.error_floor_ms)
    }

    /// True when the change may be called better or worse: its interval excludes zero and it
    /// is larger than the runs' own measured error (docs/validity.md).
    pub fn is_difference(&self) -> bool {
        self.excludes_zero() && !self.within_measured_error()
    }

    /// True when B is better than A (meaningful only when [`Change::excludes_zero`]).
    pub fn is_better(&self) -> bool {
        self.delta
            .is_some_and(|d| (d > 0.0) == self.metric.higher_is_better())
    }
}

/// One (lane, family) cell, or a lane's pooled row.
#[derive(Debug, Clone, PartialEq)]
pub struct CellComparison {
    /// Family name, or `pooled`.
    pub family: String,
    /// Submitted requests in A and B.
    pub submitted: (u64, u64),
    /// Rounds of the cell in A and B (an interval needs [`bootstrap::MIN_ROUNDS`] in each).
    pub rounds: (usize, usize),
    /// One change per [`Metric::ALL`].
    pub changes: Vec<Change>,
}

/// A lane present in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneComparison {
    /// Provider key.
    pub provider: String,
    /// Region label.
    pub region: String,
    /// Name shown (run B's).
    pub display_name: String,
    /// Pooled row first, then the families in round order.
    pub cells: Vec<CellComparison>,
}

/// What `compare` found.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Run A's id and directory.
    pub run_a: (String, PathBuf),
    /// Run B's id and directory.
    pub run_b: (String, PathBuf),
    /// Configuration and dataset differences, loud ones first.
    pub differences: Vec<Difference>,
    /// Lanes (`provider@region`) only run A has.
    pub only_in_a: Vec<String>,
    /// Lanes only run B has.
    pub only_in_b: Vec<String>,
    /// Matched lanes, alphabetical by display name.
    pub lanes: Vec<LaneComparison>,
    /// The bootstrap settings used.
    pub options: CompareOptions,
    /// When both runs repeated their round set: the repeats of A and of B (every change then
    /// rests on the across-repeat intervals, not on the bootstrap).
    pub repeats: Option<(u32, u32)>,
}

impl Comparison {
    /// True when the two locks differ in an input hash (spec, dataset, adapters, tokenizer, code).
    pub fn locks_differ(&self) -> bool {
        self.differences.iter().any(|d| d.loud)
    }
}

/// A scored run as the lane comparison reads it: observations in report order, their lane table
/// and the report's metrics. `compare` builds it from a run directory, the results store's
/// history from stored records.
pub struct ScoredView<'a> {
    /// Final records.
    pub observations: &'a [Observation],
    /// Lanes of the observations.
    pub lanes: &'a crate::metrics::LaneTable,
    /// The report's metrics of those observations.
    pub metrics: &'a crate::metrics::RunMetrics,
}

impl ScoredView<'_> {
    fn lane_index(&self, provider: &str, region: &str) -> Option<u32> {
        self.lanes
            .lanes
            .iter()
            .position(|l| l.provider == provider && l.region == region)
            .map(|i| i as u32)
    }
}

/// Every lane present in both runs (matched by provider and region), in run B's order, with the
/// change of every metric from A to B in the pooled row and in each of `families`, and its
/// bootstrap interval.
pub fn compare_lanes(
    a: &ScoredView<'_>,
    b: &ScoredView<'_>,
    families: &[String],
    options: CompareOptions,
) -> Vec<LaneComparison> {
    let key = |p: &crate::metrics::ProviderMetrics| format!("{}@{}", p.provider, p.region);
    let resampler_a = bootstrap::Resampler::new(a.observations, options, 0);
    let resampler_b = bootstrap::Resampler::new(b.observations, options, 1);
    let mut lanes = Vec::new();
    for pb in &b.metrics.providers {
        let Some(pa) = a.metrics.providers.iter().find(|p| key(p) == key(pb)) else {
            continue;
        };
        let (Some(ia), Some(ib)) = (
            a.lane_index(&pa.provider, &pa.region),
            b.lane_index(&pb.provider, &pb.region),
        ) else {
            continue;
        };
        let failed = validity_failed(a.metrics, b.metrics);
        let repeated = a.metrics.repeats.as_ref().zip(b.metrics.repeats.as_ref());
        // Two repeated runs compare across their repeats: no bootstrap replicate is drawn.
        let (reps_a, reps_b) = match repeated {
            Some(_) => (Vec::new(), Vec::new()),
            None => (
                resampler_a.lane_replicates(ia, families),
                resampler_b.lane_replicates(ib, families),
            ),
        };
        let mut cells = Vec::new();
        let row = |p: &crate::metrics::ProviderMetrics, f: &str| {
            p.families.iter().find(|s| s.task_family == f).cloned()
        };
        let mut rows = vec![Some((pa.pooled.clone(), pb.pooled.clone()))];
        rows.extend(families.iter().map(|f| row(pa, f).zip(row(pb, f))));
        for (cell, pair) in rows.iter().enumerate() {
            let Some((sa, sb)) = pair else {
                continue;
            };
            let family = cell
                .checked_sub(1)
                .and_then(|i| Family::parse(&families[i]));
            let rounds = (resampler_a.rounds(family), resampler_b.rounds(family));
            let per_repeat = repeated.map(|(ra, rb)| {
                (
                    repeated::summaries(a.observations, ia, family, ra),
                    repeated::summaries(b.observations, ib, family, rb),
                )
            });
            let changes = Metric::ALL
                .iter()
                .map(|m| {
                    let mut change = match &per_repeat {
                        Some((ra, rb)) => repeated::change(*m, (sa, sb), (ra, rb)),
                        None => bootstrap::change(
                            *m,
                            (sa, sb),
                            (&reps_a[cell], &reps_b[cell]),
                            rounds.0.min(rounds.1) >= bootstrap::MIN_ROUNDS,
                        ),
                    };
                    change.error_floor_ms = error_floor(a.metrics, b.metrics, m.quantile());
                    change.validity_failed = failed;
                    change
                })
                .collect();
            cells.push(CellComparison {
                family: sb.task_family.clone(),
                submitted: (sa.submitted_count, sb.submitted_count),
                rounds,
                changes,
            });
        }
        lanes.push(LaneComparison {
            provider: pb.provider.clone(),
            region: pb.region.clone(),
            display_name: pb.display_name.clone(),
            cells,
        });
    }
    lanes
}

/// The larger of two runs' own measured timing error at `quantile`, ms (0 for runs without a
/// section): a median's change is held to the runs' median error, a tail's to their p99.
pub fn error_floor(a: &RunMetrics, b: &RunMetrics, quantile: Quantile) -> f64 {
    let error = |m: &RunMetrics| {
        m.validity
            .as_ref()
            .map_or(0.0, |v| v.measured_error_ms_at(quantile))
    };
    error(a).max(error(b))
}

/// Whether either run's validity section failed.
pub fn validity_failed(a: &RunMetrics, b: &RunMetrics) -> bool {
    let failed = |m: &RunMetrics| m.validity.as_ref().is_some_and(|v| !v.passed());
    failed(a) || failed(b)
}

/// The observations of one lane, for the resampler.
pub(crate) fn of_lane(observations: &[Observation], lane: u32) -> Vec<&Observation> {
    observations
        .iter()
        .filter(|o| o.lane == lane && !o.is_harness())
        .collect()
}

#[cfg(test)]
#[path = "validity_tests.rs"]
mod validity_tests;
