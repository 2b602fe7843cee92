//! Seeded random streams: ChaCha8 keyed by sha256 of the spec's seed and a few labels.
//!
//! The same convention as the simulator's per-request draws (sha256 of the little-endian seed and
//! NUL-separated labels, fed to `rand_chacha`'s ChaCha8, which is value-stable across platforms
//! and releases), so a seed written in a spec replays the same arrivals and prompts anywhere.
//! Each use names its own labels (`arrivals`, a step index, `prompt`, …), so adding a draw to one
//! never shifts another.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};

/// One seeded random stream.
#[derive(Debug, Clone)]
pub struct Stream {
    rng: ChaCha8Rng,
}

impl Stream {
    /// The stream for `seed` and `labels`: ChaCha8 keyed by
    /// sha256(seed as 8 little-endian bytes ‖ 0 ‖ label₁ ‖ 0 ‖ label₂ …).
    pub fn derive(seed: u64, labels: &[&str]) -> Stream {
        let mut hasher = Sha256::new();
        hasher.update(seed.to_le_bytes());
        for label in labels {
            hasher.update([0]);
            hasher.update(label.as_bytes());
        }
        let key: [u8; 32] = hasher.finalize().into();
        Stream {
            rng: ChaCha8Rng::from_seed(key),
        }
    }

    /// Uniform in [0, 1) with 53 bits.
    pub fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `0..n` by rejection (no modulo bias); 0 when `n` ≤ 1.
    pub fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.rng.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }

    /// Standard normal by Box–Muller (one of the pair; the other is dropped for simplicity).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // (0, 1]: ln is finite
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Exponential with mean 1 by inversion: −ln(1 − u).
    pub fn exponential(&mut self) -> f64 {
        -(1.0 - self.uniform()).ln()
    }

    /// One draw of `dist` (a `rand_distr` distribution) from this stream: value-stable for the
    /// `rand_distr` version Cargo.lock pins.
    pub fn sample<D: rand_distr::Distribution<f64>>(&mut self, dist: &D) -> f64 {
        dist.sample(&mut self.rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_sha256_of_seed_and_nul_separated_labels() {
        // Built by hand: sha256(7u64 LE ‖ 0 ‖ "a" ‖ 0 ‖ "b") keys ChaCha8; its first u64, shifted
        // to 53 bits, is the first uniform.
        let mut bytes = 7u64.to_le_bytes().to_vec();
        bytes.extend_from_slice(b"\0a\0b");
        let key: [u8; 32] = Sha256::digest(&bytes).into();
        let first = ChaCha8Rng::from_seed(key).next_u64();
        let mut s = Stream::derive(7, &["a", "b"]);
        assert_eq!(s.uniform(), (first >> 11) as f64 / (1u64 << 53) as f64);
        // Labels are separated: ("ab") is another stream than ("a", "b").
        let mut joined = Stream::derive(7, &["ab"]);
        let mut split = Stream::derive(7, &["a", "b"]);
        assert_ne!(joined.uniform(), split.uniform());
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut s = Stream::derive(1, &["below"]);
        let mut seen = [0u32; 5];
        for _ in 0..5_000 {
            seen[s.below(5) as usize] += 1;
        }
        // Each bucket expects 1,000 with sd ≈ 28; 4 sd either side.
        assert!(seen.iter().all(|&n| (888..=1112).contains(&n)), "{seen:?}");
        assert_eq!(s.below(1), 0);
        assert_eq!(s.below(0), 0);
    }
}
