//! Seeded percentile-bootstrap intervals over the requests of one step, the method `compare`
//! uses over rounds: resample the population with replacement, take the statistic of each
//! replicate, report the 2.5% and 97.5% nearest-rank percentiles of those statistics.

use crate::rng::Stream;
use openbench_common::stats::{nearest_rank, nearest_rank_in_place};

/// Fewest values a population needs for an interval: a resample of a handful of requests is
/// nearly the sample itself, and its interval would be falsely narrow.
pub const MIN_VALUES: usize = 30;

/// The 95% percentile-bootstrap interval of the nearest-rank percentile `p` of `values`, from
/// `replicates` resamples drawn from the stream `(seed, "bootstrap", label)`; `None` under
/// [`MIN_VALUES`] values or without replicates.
pub fn percentile_interval(
    values: &[f64],
    p: f64,
    replicates: usize,
    seed: u64,
    label: &str,
) -> Option<(f64, f64)> {
    if values.len() < MIN_VALUES || replicates == 0 {
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
