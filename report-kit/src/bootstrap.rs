//! The stratified round bootstrap behind `compare` intervals, for any workflow whose rounds are
//! its independent units (each round asked every lane one question at one moment).
//!
//! One replicate draws, stratum by stratum (a task family, say), as many rounds as the stratum
//! has, uniformly with replacement; a round drawn twice counts twice. What a replicate's records
//! add up to is the workflow's; the interval over the replicates' changes is
//! [`percentile_interval`] (a percentile bootstrap on nearest-rank percentiles).
//!
//! A population whose requests are its independent units (a load step's) is resampled request
//! by request instead: [`sample_percentile_interval`] is the interval of one percentile of it,
//! drawn from the seeded stream `(seed, "bootstrap", label)`.

use openbench_common::rng::Stream;
use openbench_common::stats::{nearest_rank, nearest_rank_in_place};
use std::collections::BTreeMap;

/// The rounds one run's replicates drew: per replicate, per stratum, the drawn round indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundDraws<K> {
    /// Stratum → its distinct rounds in the run.
    rounds: BTreeMap<K, usize>,
    /// Replicate → stratum → drawn rounds.
    draws: Vec<BTreeMap<K, Vec<u64>>>,
}

impl<K: Ord + Copy> RoundDraws<K> {
    /// Draws `replicates` resamples of the run's rounds; `units` lists (stratum, round index) of
    /// the run's records (repeats collapse), and `below(n)` is the seeded uniform draw in `0..n`.
    /// Strata are drawn in order, and within one in round order, so a seed gives one resample.
    pub fn new(
        units: impl IntoIterator<Item = (K, u64)>,
        replicates: usize,
        below: &mut dyn FnMut(usize) -> usize,
    ) -> Self {
        let mut rounds: BTreeMap<K, Vec<u64>> = BTreeMap::new();
        for (stratum, round) in units {
            rounds.entry(stratum).or_default().push(round);
        }
        for list in rounds.values_mut() {
            list.sort_unstable();
            list.dedup();
        }
        let draws = (0..replicates)
            .map(|_| {
                rounds
                    .iter()
                    .map(|(stratum, list)| {
                        let drawn = (0..list.len()).map(|_| list[below(list.len())]).collect();
                        (*stratum, drawn)
                    })
                    .collect()
            })
            .collect();
        RoundDraws {
            rounds: rounds.iter().map(|(k, list)| (*k, list.len())).collect(),
            draws,
        }
    }

    /// Distinct rounds of one stratum in the run, or of all strata for `None`.
    pub fn rounds(&self, stratum: Option<K>) -> usize {
        match stratum {
            Some(k) => self.rounds.get(&k).copied().unwrap_or(0),
            None => self.rounds.values().sum(),
        }
    }

    /// Every replicate's drawn rounds per stratum.
    pub fn replicates(&self) -> &[BTreeMap<K, Vec<u64>>] {
        &self.draws
    }
}

/// The two-sided `level` interval of bootstrap values (nearest-rank percentiles at
/// (1 − level)/2 and its complement); `(None, None)` without values.
pub fn percentile_interval(values: &[f64], level: f64) -> (Option<f64>, Option<f64>) {
    let tail = (1.0 - level) / 2.0;
    (nearest_rank(values, tail), nearest_rank(values, 1.0 - tail))
}

/// Fewest values a population needs for an interval: a resample of a handful of requests is
/// nearly the sample itself, and its interval would be falsely narrow.
pub const MIN_SAMPLE_VALUES: usize = 30;

/// The 95% percentile-bootstrap interval of the nearest-rank percentile `p` of `values` (one
/// population of requests, the load report's unit, resampled with replacement), from
/// `replicates` resamples drawn from the stream `(seed, "bootstrap", label)`; `None` under
/// [`MIN_SAMPLE_VALUES`] values or without replicates.
pub fn sample_percentile_interval(
    values: &[f64],
    p: f64,
    replicates: usize,
    seed: u64,
    label: &str,
) -> Option<(f64, f64)> {
    if values.len() < MIN_SAMPLE_VALUES || replicates == 0 {
        return None;
    }
    let mut stream = Stream::derive(seed, &["bootstrap", label]);
    let n = values.len() as u64;
    let mut resample = vec![0.0; values.len()];
    let stats: Vec<f64> = (0..replicates)
        .filter_map(|_| {
            for slot in resample.iter_mut() {
                *slot = values[stream.below(n) as usize];
            }
            nearest_rank_in_place(&mut resample, p)
        })
        .collect();
    Some((nearest_rank(&stats, 0.025)?, nearest_rank(&stats, 0.975)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stratum_draws_as_many_rounds_as_it_has_in_order() {
        // Stratum 'a' has rounds 1 and 4 (4 twice), 'b' has 2, 3 and 5.
        let units = [('b', 5), ('a', 4), ('b', 2), ('a', 1), ('a', 4), ('b', 3)];
        // A scripted draw: every call takes the last round, then the first, …
        let mut calls = Vec::new();
        let mut flip = false;
        let mut below = |n: usize| {
            calls.push(n);
            flip = !flip;
            if flip { n - 1 } else { 0 }
        };
        let draws = RoundDraws::new(units, 2, &mut below);
        assert_eq!(calls, vec![2, 2, 3, 3, 3, 2, 2, 3, 3, 3]);
        assert_eq!(draws.rounds(Some('a')), 2);
        assert_eq!(draws.rounds(Some('b')), 3);
        assert_eq!(draws.rounds(Some('z')), 0);
        assert_eq!(draws.rounds(None), 5);
        let reps = draws.replicates();
        assert_eq!(reps.len(), 2);
        assert_eq!(reps[0][&'a'], vec![4, 1]);
        assert_eq!(reps[0][&'b'], vec![5, 2, 5]);
        assert_eq!(reps[1][&'a'], vec![1, 4]);
        assert_eq!(reps[1][&'b'], vec![2, 5, 2]);
    }

    #[test]
    fn the_interval_is_the_nearest_rank_tails() {
        let values: Vec<f64> = (1..=40).map(f64::from).collect();
        // 2.5% of 40 = 1 → 1st value; 97.5% of 40 = 39 → 39th value.
        assert_eq!(percentile_interval(&values, 0.95), (Some(1.0), Some(39.0)));
        assert_eq!(percentile_interval(&[], 0.95), (None, None));
    }
}
