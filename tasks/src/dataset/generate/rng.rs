//! splitmix64: the generator's pseudo-random source.
//!
//! Why hand-written rather than `rand_chacha`: the committed corpus must be reproducible from the
//! seed forever, byte for byte. splitmix64 (Steele, Lea & Flood 2014; the seeder of Java's
//! `SplittableRandom` and of xoshiro) is six lines with published test vectors (checked below), so
//! no crate upgrade (`rand` has changed its range and shuffle algorithms between majors) can ever
//! change the stream. Statistical quality is ample for choosing names and templates.

/// A splitmix64 stream.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A stream starting from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// An independent stream for one (seed, labels…) combination, e.g. one row of one family.
    pub fn derive(seed: u64, labels: &[u64]) -> Rng {
        let mut rng = Rng::new(seed);
        for &label in labels {
            let mixed = rng.next_u64() ^ label.wrapping_mul(0xD6E8_FEB8_6659_FD93);
            rng = Rng::new(mixed);
        }
        rng
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (rejection sampling, no modulo bias); 0 when `n` is 0.
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        let n = n as u64;
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.next_u64();
            if x < zone {
                return (x % n) as usize;
            }
        }
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1).max(1) as usize) as i64
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One element of a non-empty slice (the first when empty slices are impossible by design).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }

    /// `k` distinct elements of `items` (cloned), in random order.
    pub fn sample<T: Clone>(&mut self, items: &[T], k: usize) -> Vec<T> {
        let mut idx: Vec<usize> = (0..items.len()).collect();
        self.shuffle(&mut idx);
        idx.into_iter().take(k).map(|i| items[i].clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_splitmix64_vectors() {
        // Reference C implementation (Vigna), seed 1234567.
        let mut rng = Rng::new(1_234_567);
        assert_eq!(rng.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(rng.next_u64(), 3_203_168_211_198_807_973);
        assert_eq!(rng.next_u64(), 9_817_491_932_198_370_423);
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = Rng::new(7);
        let mut seen = [false; 5];
        for _ in 0..200 {
            seen[rng.below(5)] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(rng.below(0), 0);
    }
}
