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

/// [`nearest_rank`] without a sorted copy: selects the rank in place (linear time, reordering
/// `values`), for callers that take many percentiles of scratch populations (bootstrap
/// replicates). Same value as [`nearest_rank`], NaN excluded likewise.
pub fn nearest_rank_in_place(values: &mut [f64], p: f64) -> Option<f64> {
    if values.iter().any(|v| v.is_nan()) {
        return nearest_rank(values, p);
    }
    if values.is_empty() || !(p > 0.0 && p <= 1.0) {
        return None;
    }
    let i = rank_index(values.len(), p);
    let (_, v, _) = values.select_nth_unstable_by(i, f64::total_cmp);
    Some(*v)
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
    fn in_place_selection_gives_the_nearest_rank() {
        let values = [5.0, 1.0, 4.0, 1.0, 9.0, 2.0, 6.0, f64::NAN, 3.0];
        for p in [0.01, 0.25, 0.5, 0.9, 0.99, 1.0, 0.0, 1.5] {
            let mut scratch = values.to_vec();
            assert_eq!(
                nearest_rank_in_place(&mut scratch, p),
                nearest_rank(&values, p)
            );
            let mut finite: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
            let expected = nearest_rank(&finite, p);
            assert_eq!(nearest_rank_in_place(&mut finite, p), expected);
        }
        // Sorted 1, 1, 2, 3, 4, 5, 6, 9: p50 → index 3.
        assert_eq!(
            nearest_rank_in_place(&mut [5.0, 1.0, 4.0, 1.0, 9.0, 2.0, 6.0, 3.0], 0.5),
            Some(3.0)
        );
        assert_eq!(nearest_rank_in_place(&mut [], 0.5), None);
    }

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
