//! Nearest-rank percentiles (METHODOLOGY §6).

/// The nearest-rank percentile of `values` at `p` ∈ (0, 1]: ascending sort, the value at index
/// ceil(p·n) − 1. `None` for an empty population or a `p` outside (0, 1].
pub fn nearest_rank(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() || !(p > 0.0 && p <= 1.0) {
        return None;
    }
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    Some(sorted[rank_index(sorted.len(), p)])
}

/// Index ceil(p·n) − 1 into an ascending population of `n`, computed so that p·n landing on an
/// integer (0.95 · 100) is not pushed up by floating-point error.
pub fn rank_index(n: usize, p: f64) -> usize {
    let exact = p * n as f64;
    let rounded = exact.round();
    let ceil = if (exact - rounded).abs() < 1e-9 {
        rounded
    } else {
        exact.ceil()
    };
    (ceil as usize).clamp(1, n) - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_populations() {
        assert_eq!(nearest_rank(&[], 0.5), None);
        assert_eq!(nearest_rank(&[7.0], 0.01), Some(7.0));
        assert_eq!(nearest_rank(&[7.0], 0.99), Some(7.0));
        // n = 2: p50 → ceil(1) − 1 = 0; p95 → ceil(1.9) − 1 = 1.
        assert_eq!(nearest_rank(&[2.0, 1.0], 0.5), Some(1.0));
        assert_eq!(nearest_rank(&[2.0, 1.0], 0.95), Some(2.0));
        // n = 100, values 1..=100: p95 → index 94 → 95; p99 → 99; p05 → 5.
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(nearest_rank(&hundred, 0.95), Some(95.0));
        assert_eq!(nearest_rank(&hundred, 0.99), Some(99.0));
        assert_eq!(nearest_rank(&hundred, 0.05), Some(5.0));
        assert_eq!(nearest_rank(&hundred, 0.5), Some(50.0));
        // n = 101: p50 → ceil(50.5) − 1 = 50 → 51; p99 → ceil(99.99) − 1 = 99 → 100.
        let hundred_one: Vec<f64> = (1..=101).map(f64::from).collect();
        assert_eq!(nearest_rank(&hundred_one, 0.5), Some(51.0));
        assert_eq!(nearest_rank(&hundred_one, 0.99), Some(100.0));
        assert_eq!(nearest_rank(&hundred_one, 0.01), Some(2.0));
        assert_eq!(nearest_rank(&hundred, 0.0), None);
    }
}
