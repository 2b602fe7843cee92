//! The per-request random stream: ChaCha8 seeded from (config seed, profile, sha256 of body).
//!
//! ChaCha8 (`rand_chacha`) is a portable generator with a value-stability promise across
//! platforms and releases, so a seed written in a spec replays the same streams anywhere. The
//! few distributions we need (uniform, normal, lognormal) are three lines each on top of it.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};

/// A seeded random stream for one request.
#[derive(Debug, Clone)]
pub struct Draws {
    rng: ChaCha8Rng,
    /// The 32-byte seed, also the source of the response id.
    seed: [u8; 32],
}

impl Draws {
    /// Seeds from sha256(seed as 8 little-endian bytes ‖ 0 ‖ profile ‖ 0 ‖ sha256(body)).
    pub fn for_request(seed: u64, profile: &str, body: &[u8]) -> Draws {
        Draws::for_occurrence(seed, profile, body, 0)
    }

    /// Draws for the `occurrence`-th time (0-based) this server saw the same body for the same
    /// profile: a repeated request (a smoke's second attempt) is a new draw, as it would be at a
    /// real provider, while a fresh server replays the first occurrence exactly.
    pub fn for_occurrence(seed: u64, profile: &str, body: &[u8], occurrence: u64) -> Draws {
        let body_hash = Sha256::digest(body);
        let mut hasher = Sha256::new();
        hasher.update(seed.to_le_bytes());
        hasher.update([0]);
        hasher.update(profile.as_bytes());
        hasher.update([0]);
        hasher.update(body_hash);
        if occurrence > 0 {
            hasher.update([0]);
            hasher.update(occurrence.to_le_bytes());
        }
        let seed: [u8; 32] = hasher.finalize().into();
        Draws {
            rng: ChaCha8Rng::from_seed(seed),
            seed,
        }
    }

    /// Lower-case hex of the first 12 seed bytes: a stable per-request id.
    pub fn id_hex(&self) -> String {
        openbench_common::hash::hex(&self.seed[..12])
    }

    /// Uniform in [0, 1) with 53 bits.
    pub fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.uniform() < p
    }

    /// Uniform integer in `lo..=hi`.
    pub fn int_in(&mut self, lo: usize, hi: usize) -> usize {
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo + 1) as f64;
        lo + ((self.uniform() * span) as usize).min(hi - lo)
    }

    /// Standard normal by Box–Muller.
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // (0, 1]: ln is finite
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Lognormal with ln-median `mu` and ln-sd `sigma`.
    pub fn lognormal(&mut self, mu: f64, sigma: f64) -> f64 {
        (mu + sigma * self.normal()).exp()
    }

    /// Picks an item by weights that sum to 1 (the last item absorbs rounding).
    pub fn pick<T: Copy>(&mut self, weighted: &[(T, f64)]) -> Option<T> {
        let mut u = self.uniform();
        for (item, weight) in weighted {
            if u < *weight {
                return Some(*item);
            }
            u -= weight;
        }
        weighted.last().map(|(item, _)| *item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_inputs_same_stream_different_inputs_differ() {
        let mut a = Draws::for_request(7, "zai", b"{}");
        let mut b = Draws::for_request(7, "zai", b"{}");
        let mut c = Draws::for_request(7, "zai", b"{ }");
        let mut d = Draws::for_request(8, "zai", b"{}");
        let xs: Vec<f64> = (0..5).map(|_| a.uniform()).collect();
        let ys: Vec<f64> = (0..5).map(|_| b.uniform()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs[0], c.uniform());
        assert_ne!(xs[0], d.uniform());
    }

    #[test]
    fn normal_has_unit_moments() {
        let mut d = Draws::for_request(1, "p", b"x");
        let n = 20_000;
        let xs: Vec<f64> = (0..n).map(|_| d.normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        // sd of the mean is 1/sqrt(n) = 0.0071; allow 4 sd. sd of the variance ≈ sqrt(2/n) = 0.01.
        assert!(mean.abs() < 0.03, "{mean}");
        assert!((var - 1.0).abs() < 0.04, "{var}");
    }
}
