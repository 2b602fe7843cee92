//! The stratified round bootstrap behind `compare` intervals, for any workflow whose rounds are
//! its independent units (each round asked every lane one question at one moment).
//!
//! One replicate draws, stratum by stratum (a task family, say), as many rounds as the stratum
//! has, uniformly with replacement; a round drawn twice counts twice. What a replicate's records
//! add up to is the workflow's; the interval over the replicates' changes is
//! [`percentile_interval`] (a percentile bootstrap on nearest-rank percentiles).

use openbench_common::stats::nearest_rank;
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
