//! The one-sample Kolmogorov–Smirnov test of inter-arrival times against the exponential
//! distribution of a Poisson process with the planned rate (a fully specified null, so the
//! classical Kolmogorov distribution applies; no parameter is estimated from the sample).

use serde::{Deserialize, Serialize};

/// A KS test's result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KsFit {
    /// Inter-arrival times tested.
    pub n: usize,
    /// The statistic D = sup |F_n(x) − F(x)|.
    pub statistic: f64,
    /// The asymptotic p-value with Stephens' small-sample correction:
    /// Q_KS((√n + 0.12 + 0.11/√n) · D).
    pub p_value: f64,
}

/// D of `gaps` (seconds, any order) against Exp(`rate_per_s`): over the sorted sample
/// x₍₁₎ ≤ … ≤ x₍ₙ₎, max over i of max(i/n − F(x₍ᵢ₎), F(x₍ᵢ₎) − (i−1)/n), F(x) = 1 − e^(−λx).
/// `None` for an empty sample, a NaN gap or a rate that is not positive.
pub fn exponential_statistic(gaps: &[f64], rate_per_s: f64) -> Option<f64> {
    let positive = rate_per_s.is_finite() && rate_per_s > 0.0;
    if gaps.is_empty() || !positive || gaps.iter().any(|g| g.is_nan()) {
        return None;
    }
    let mut sorted = gaps.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    let mut d: f64 = 0.0;
    for (i, x) in sorted.iter().enumerate() {
        let f = if *x <= 0.0 {
            0.0
        } else {
            1.0 - (-rate_per_s * x).exp()
        };
        let above = (i as f64 + 1.0) / n - f;
        let below = f - i as f64 / n;
        d = d.max(above).max(below);
    }
    Some(d)
}

/// The Kolmogorov survival function Q(λ) = 2 Σₖ₌₁^∞ (−1)^(k−1) e^(−2k²λ²): the probability
/// that √n·D exceeds λ under the null, as n grows.
pub fn kolmogorov_q(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let k = f64::from(k);
        let term = (-2.0 * k * k * lambda * lambda).exp();
        sum += if k as u32 % 2 == 1 { term } else { -term };
        if term < 1e-16 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// The test of `gaps` (seconds) against Exp(`rate_per_s`); `None` as [`exponential_statistic`].
pub fn exponential_fit(gaps: &[f64], rate_per_s: f64) -> Option<KsFit> {
    let statistic = exponential_statistic(gaps, rate_per_s)?;
    let root = (gaps.len() as f64).sqrt();
    let p_value = kolmogorov_q((root + 0.12 + 0.11 / root) * statistic);
    Some(KsFit {
        n: gaps.len(),
        statistic,
        p_value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statistic_matches_a_hand_computed_sample() {
        // λ = 1, gaps 2.0, 0.5, 1.0 → sorted 0.5, 1, 2; F = 0.393469, 0.632121, 0.864665.
        // i=1: max(1/3 − 0.393469, 0.393469 − 0) = 0.393469
        // i=2: max(2/3 − 0.632121, 0.632121 − 1/3) = 0.298788
        // i=3: max(1 − 0.864665, 0.864665 − 2/3) = 0.197998  → D = 1 − e^(−0.5).
        let d = exponential_statistic(&[2.0, 0.5, 1.0], 1.0).unwrap();
        assert!((d - (1.0 - (-0.5f64).exp())).abs() < 1e-12, "{d}");
        // λ = 2, gaps 0.1, 0.2, 0.3, 0.4: F = 0.181269, 0.329680, 0.451188, 0.550671.
        // below terms: 0.181269, 0.079680, −0.048812, −0.199329;
        // above terms: 0.068731, 0.170320, 0.298812, 0.449329 → D = 1 − (1 − e^(−0.8)) = e^(−0.8).
        let d = exponential_statistic(&[0.4, 0.3, 0.2, 0.1], 2.0).unwrap();
        assert!((d - (-0.8f64).exp()).abs() < 1e-12, "{d}");
    }

    #[test]
    fn the_kolmogorov_tail_gives_the_tabled_critical_values() {
        // Tabled: Q(1.3581) = 0.05, Q(1.6276) = 0.01, Q(1.0) = 0.2700.
        assert!((kolmogorov_q(1.3581) - 0.05).abs() < 1e-4);
        assert!((kolmogorov_q(1.6276) - 0.01).abs() < 1e-4);
        assert!((kolmogorov_q(1.0) - 0.2700).abs() < 1e-4);
        assert_eq!(kolmogorov_q(0.0), 1.0);
    }

    #[test]
    fn exponential_quantiles_fit_and_evenly_spaced_gaps_do_not() {
        // The exact (i − ½)/n quantiles of Exp(4): D = 1/(2n), p ≈ 1.
        let n = 400;
        let gaps: Vec<f64> = (0..n)
            .map(|i| -(1.0 - (i as f64 + 0.5) / n as f64).ln() / 4.0)
            .collect();
        let fit = exponential_fit(&gaps, 4.0).unwrap();
        assert!((fit.statistic - 0.5 / n as f64).abs() < 1e-12);
        assert!(fit.p_value > 0.99);
        // A constant 0.25 s gap (the rate right, the shape wrong): D = 1 − e^(−1) ≈ 0.632.
        let fit = exponential_fit(&vec![0.25; n], 4.0).unwrap();
        assert!((fit.statistic - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
        assert!(fit.p_value < 1e-9);
        assert_eq!(exponential_fit(&[], 4.0), None);
        assert_eq!(exponential_fit(&[1.0], 0.0), None);
    }
}
