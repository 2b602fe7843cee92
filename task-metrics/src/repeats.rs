//! A repeated paired run's headline figures (`plans.repeats`, docs/methodology.md, "Repeats of
//! paired rounds"): per lane, each repeat's task success, TTFA p50/p99, E2E p50/p99 and tokens/s
//! p50, summarised by the report's own code ([`crate::metrics::summary::summarize`]) over that
//! repeat's submitted records, then their mean and 95% Student t interval
//! (`openbench_report_kit::repeats`: a run holds a handful of repeats, too few for the round
//! bootstrap). `compare` of two repeated runs reads the same per-repeat summaries
//! ([`repeat_summaries`]) for every compared metric.

use crate::metrics::summary::{Summary, summarize};
use crate::metrics::{Observation, PlanView, ProviderMetrics};
use openbench_common::rundir::repeat_of;
use openbench_report_kit::repeats::{RepeatInterval, repeat_interval};
use openbench_tasks::scoring::Family;
use serde::{Deserialize, Serialize};

/// A headline figure reported across repeats, named as in `metrics.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepeatFigure {
    /// Correct ÷ submitted.
    TaskSuccessRate,
    /// TTFA p50, ms.
    TtfaP50,
    /// TTFA p99, ms.
    TtfaP99,
    /// E2E p50, ms.
    #[serde(rename = "e2e_latency_p50")]
    E2eLatencyP50,
    /// E2E p99, ms.
    #[serde(rename = "e2e_latency_p99")]
    E2eLatencyP99,
    /// Visible-answer tokens/s median.
    #[serde(rename = "output_tokens_per_second_p50")]
    OutputTokensPerSecondP50,
}

impl RepeatFigure {
    /// Every figure, in table order.
    pub const ALL: [RepeatFigure; 6] = [
        RepeatFigure::TaskSuccessRate,
        RepeatFigure::TtfaP50,
        RepeatFigure::TtfaP99,
        RepeatFigure::E2eLatencyP50,
        RepeatFigure::E2eLatencyP99,
        RepeatFigure::OutputTokensPerSecondP50,
    ];

    /// The `metrics.json` name (also the store's `figure`).
    pub fn name(self) -> &'static str {
        match self {
            RepeatFigure::TaskSuccessRate => "task_success_rate",
            RepeatFigure::TtfaP50 => "ttfa_p50",
            RepeatFigure::TtfaP99 => "ttfa_p99",
            RepeatFigure::E2eLatencyP50 => "e2e_latency_p50",
            RepeatFigure::E2eLatencyP99 => "e2e_latency_p99",
            RepeatFigure::OutputTokensPerSecondP50 => "output_tokens_per_second_p50",
        }
    }

    /// The figure in one summary row.
    pub fn of(self, s: &Summary) -> Option<f64> {
        match self {
            RepeatFigure::TaskSuccessRate => s.task_success_rate,
            RepeatFigure::TtfaP50 => s.ttfa_p50,
            RepeatFigure::TtfaP99 => s.ttfa_p99,
            RepeatFigure::E2eLatencyP50 => s.e2e_latency_p50,
            RepeatFigure::E2eLatencyP99 => s.e2e_latency_p99,
            RepeatFigure::OutputTokensPerSecondP50 => s.output_tokens_per_second_p50,
        }
    }
}

/// One figure of one lane over the repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatValues {
    /// Which figure.
    pub figure: RepeatFigure,
    /// Each repeat's value, in repeat order (`None`: that repeat had no population).
    pub per_repeat: Vec<Option<f64>>,
    /// Mean and 95% t interval over the repeats that had a value; `None` under two.
    pub across: Option<RepeatInterval>,
}

/// One lane's headline figures over the repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneRepeats {
    /// Lane label.
    pub lane: String,
    /// Name shown in reports.
    pub display_name: String,
    /// Every figure, in [`RepeatFigure::ALL`] order.
    pub figures: Vec<RepeatValues>,
}

/// `metrics.json`'s `repeats`: the run's passes and every lane's figures over them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedRepeats {
    /// Passes over the round set.
    pub repeats: u32,
    /// Rounds in the whole plan (each repeat holds `rounds / repeats`).
    pub rounds: u64,
    /// Lanes in the metrics' order.
    pub lanes: Vec<LaneRepeats>,
}

impl PairedRepeats {
    /// The lane labelled `lane`.
    pub fn lane(&self, lane: &str) -> Option<&LaneRepeats> {
        self.lanes.iter().find(|l| l.lane == lane)
    }
}

impl LaneRepeats {
    /// The values of `figure`.
    pub fn figure(&self, figure: RepeatFigure) -> Option<&RepeatValues> {
        self.figures.iter().find(|f| f.figure == figure)
    }
}

/// The summary of each repeat of lane `lane` (an index into the observations' lane table):
/// its submitted records of round repeat r (of `repeats`, in a plan of `rounds` rounds), and
/// of `family` only when one is given.
pub fn repeat_summaries(
    observations: &[Observation],
    lane: u32,
    family: Option<Family>,
    (repeats, rounds): (u32, u64),
) -> Vec<Summary> {
    let mut by_repeat: Vec<Vec<&Observation>> = vec![Vec::new(); repeats.max(1) as usize];
    for o in observations
        .iter()
        .filter(|o| o.lane == lane && !o.is_harness())
        .filter(|o| family.is_none_or(|f| o.family == f))
    {
        let r = repeat_of(Some(repeats), rounds as usize, o.round_index) as usize;
        if let Some(bucket) = by_repeat.get_mut(r) {
            bucket.push(o);
        }
    }
    let name = family.map_or("pooled", Family::as_str);
    by_repeat
        .iter()
        .map(|obs| summarize(name, obs, family, None))
        .collect()
}

/// The values of `figure` over `summaries` (one per repeat) and their t interval.
pub fn values(figure: RepeatFigure, summaries: &[Summary]) -> RepeatValues {
    let per_repeat: Vec<Option<f64>> = summaries.iter().map(|s| figure.of(s)).collect();
    let had: Vec<f64> = per_repeat.iter().flatten().copied().collect();
    RepeatValues {
        figure,
        per_repeat,
        across: repeat_interval(&had),
    }
}

/// The repeats section of a run whose plan ran its round set more than once; `None` for a run
/// made once (its `metrics.json` keeps its bytes). `lane_of` maps a lane label to its index in
/// the observations' lane table.
pub fn of_run(
    plan: &PlanView,
    observations: &[Observation],
    providers: &[ProviderMetrics],
    lane_of: impl Fn(&str) -> Option<u32>,
) -> Option<PairedRepeats> {
    let repeats = plan.repeats.filter(|n| *n > 1)?;
    let rounds = plan.rounds.len() as u64;
    let lanes = providers
        .iter()
        .map(|p| {
            let summaries = match lane_of(&p.lane) {
                Some(lane) => repeat_summaries(observations, lane, None, (repeats, rounds)),
                None => vec![summarize("pooled", &[], None, None); repeats as usize],
            };
            LaneRepeats {
                lane: p.lane.clone(),
                display_name: p.display_name.clone(),
                figures: RepeatFigure::ALL
                    .iter()
                    .map(|&f| values(f, &summaries))
                    .collect(),
            }
        })
        .collect();
    Some(PairedRepeats {
        repeats,
        rounds,
        lanes,
    })
}
