//! The bootstrap over rounds behind every interval of `compare` (the drawing and the interval are
//! the report kit's [`openbench_report_kit::bootstrap`]; the strata are task families).
//!
//! A run's rounds are its independent units: each asked every lane one question at one moment.
//! One replicate of a run draws, family by family, as many rounds as the family has, uniformly
//! with replacement, and keeps every lane's record of each drawn round (a round drawn twice counts
//! twice). The two runs are resampled independently, each from its own seeded stream; the
//! replicate's change is the metric of B's resample minus that of A's, computed by the report's
//! own `summarize`. The interval is the 2.5% and 97.5% nearest-rank percentiles of those changes
//! (a percentile bootstrap), over the replicates in which both runs have the metric. A cell with
//! fewer than [`MIN_ROUNDS`] rounds in either run gets no interval (and so no verdict): a
//! resample of a handful of rounds is nearly the sample itself, and its interval would be
//! falsely narrow (a one-round smoke cell would get a zero-width one).

use super::{Change, CompareOptions, Metric, of_lane};
use crate::metrics::{Observation, Summary, summary::summarize};
use openbench_report_kit::bootstrap::{RoundDraws, percentile_interval};
use openbench_tasks::dataset::generate::rng::Rng;
use openbench_tasks::scoring::Family;
use std::collections::HashMap;

/// Fewest rounds a cell needs in each run for an interval.
pub const MIN_ROUNDS: usize = 30;

/// Draws of one run: per replicate, per family, the drawn round indices.
pub struct Resampler<'a> {
    observations: &'a [Observation],
    draws: RoundDraws<Family>,
}

impl<'a> Resampler<'a> {
    /// Draws `options.replicates` resamples of the run's rounds; `stream` tells the two runs'
    /// seeded streams apart.
    pub fn new(observations: &'a [Observation], options: CompareOptions, stream: u64) -> Self {
        let mut rng = Rng::derive(options.seed, &[stream]);
        let units = observations
            .iter()
            .filter(|o| !o.is_harness())
            .map(|o| (o.family, o.round_index));
        Resampler {
            observations,
            draws: RoundDraws::new(units, options.replicates, &mut |n| rng.below(n)),
        }
    }

    /// Rounds of one family in the run, or of all families for `None` (the pooled row).
    pub fn rounds(&self, family: Option<Family>) -> usize {
        self.draws.rounds(family)
    }

    /// For one lane: per cell (pooled first, then `families` in order), each replicate's summary.
    pub fn lane_replicates(&self, lane: u32, families: &[String]) -> Vec<Vec<Summary>> {
        let mine = of_lane(self.observations, lane);
        let mut by_round: HashMap<u64, Vec<&Observation>> = HashMap::new();
        for o in mine {
            by_round.entry(o.round_index).or_default().push(o);
        }
        let order: Vec<Option<Family>> = families.iter().map(|f| Family::parse(f)).collect();
        let mut cells: Vec<Vec<Summary>> = vec![Vec::new(); order.len() + 1];
        for draw in self.draws.replicates() {
            let mut pooled: Vec<&Observation> = Vec::new();
            for (i, family) in order.iter().enumerate() {
                let cell: Vec<&Observation> = family
                    .and_then(|f| draw.get(&f))
                    .map(|rounds| {
                        rounds
                            .iter()
                            .flat_map(|r| by_round.get(r).into_iter().flatten().copied())
                            .collect()
                    })
                    .unwrap_or_default();
                pooled.extend(cell.iter().copied());
                cells[i + 1].push(summarize(families[i].as_str(), &cell, None, None));
            }
            cells[0].push(summarize("pooled", &pooled, None, None));
        }
        cells
    }
}

/// The change of `metric` from `a` to `b` with its interval from the paired replicate lists;
/// `enough` is false when either run has fewer than [`MIN_ROUNDS`] rounds in the cell.
pub fn change(
    metric: Metric,
    (a, b): (&Summary, &Summary),
    (reps_a, reps_b): (&[Summary], &[Summary]),
    enough: bool,
) -> Change {
    let (va, vb) = (metric.of(a), metric.of(b));
    let deltas: Vec<f64> = if enough {
        reps_a
            .iter()
            .zip(reps_b)
            .filter_map(|(ra, rb)| Some(metric.of(rb)? - metric.of(ra)?))
            .collect()
    } else {
        Vec::new()
    };
    let (low, high) = percentile_interval(&deltas, super::LEVEL);
    Change {
        metric,
        a: va,
        b: vb,
        delta: va.zip(vb).map(|(x, y)| y - x),
        low,
        high,
        replicates: deltas.len(),
        error_floor_ms: 0.0,
        validity_failed: false,
        repeats: None,
    }
}
