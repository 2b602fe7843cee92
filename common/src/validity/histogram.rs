//! A fixed-size lateness histogram: 10 µs buckets below 10 ms, 1 ms buckets up to 10 s, one
//! overflow bucket; percentiles are reported as their bucket's upper bound (never below the
//! truth). Fixed size (44 KB) so a day-long run's canary costs no more memory than a minute's.

const FINE_US: u64 = 10;
const FINE_LIMIT_US: u64 = 10_000;
const COARSE_US: u64 = 1_000;
const COARSE_LIMIT_US: u64 = 10_000_000;
const FINE_BUCKETS: usize = (FINE_LIMIT_US / FINE_US) as usize;
const COARSE_BUCKETS: usize = ((COARSE_LIMIT_US - FINE_LIMIT_US) / COARSE_US) as usize;

/// Counts of lateness values (µs) with the exact maximum.
#[derive(Debug, Clone)]
pub struct LatenessHistogram {
    counts: Vec<u64>,
    total: u64,
    max_us: u64,
}

impl Default for LatenessHistogram {
    fn default() -> Self {
        LatenessHistogram {
            counts: vec![0; FINE_BUCKETS + COARSE_BUCKETS + 1],
            total: 0,
            max_us: 0,
        }
    }
}

impl LatenessHistogram {
    /// Counts one value, µs.
    pub fn record(&mut self, us: u64) {
        let index = if us < FINE_LIMIT_US {
            (us / FINE_US) as usize
        } else if us < COARSE_LIMIT_US {
            FINE_BUCKETS + ((us - FINE_LIMIT_US) / COARSE_US) as usize
        } else {
            FINE_BUCKETS + COARSE_BUCKETS
        };
        self.counts[index] += 1;
        self.total += 1;
        self.max_us = self.max_us.max(us);
    }

    /// Values counted.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Largest value, µs (exact).
    pub fn max_us(&self) -> u64 {
        self.max_us
    }

    /// The nearest-rank percentile at `p` ∈ (0, 1] as its bucket's upper bound, µs (capped at
    /// the exact maximum); `None` when empty.
    pub fn percentile_us(&self, p: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let rank = crate::stats::rank_index(self.total as usize, p) as u64;
        let mut seen = 0;
        for (index, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen > rank {
                return Some(upper_bound_us(index).min(self.max_us));
            }
        }
        Some(self.max_us)
    }
}

/// The largest value bucket `index` holds, µs.
fn upper_bound_us(index: usize) -> u64 {
    let index = index as u64;
    if index < FINE_BUCKETS as u64 {
        (index + 1) * FINE_US - 1
    } else if index < (FINE_BUCKETS + COARSE_BUCKETS) as u64 {
        FINE_LIMIT_US + (index - FINE_BUCKETS as u64 + 1) * COARSE_US - 1
    } else {
        u64::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_the_upper_bound_of_the_nearest_rank_bucket() {
        let mut h = LatenessHistogram::default();
        // 98 values of 123 µs (bucket 120..129), one of 15 432 µs (bucket 15 000..15 999),
        // one of 300 000 µs: p50 → 129, p99 (rank 99 of 100) → 15 999, max exact.
        for _ in 0..98 {
            h.record(123);
        }
        h.record(15_432);
        h.record(300_000);
        assert_eq!(h.total(), 100);
        assert_eq!(h.percentile_us(0.5), Some(129));
        assert_eq!(h.percentile_us(0.99), Some(15_999));
        assert_eq!(h.percentile_us(1.0), Some(300_000));
        assert_eq!(h.max_us(), 300_000);
    }

    #[test]
    fn overflow_is_capped_at_the_exact_maximum_and_empty_has_no_percentile() {
        let mut h = LatenessHistogram::default();
        assert_eq!(h.percentile_us(0.5), None);
        h.record(20_000_000);
        assert_eq!(h.percentile_us(0.5), Some(20_000_000));
    }
}
