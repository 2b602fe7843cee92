//! Paired comparisons (METHODOLOGY §6): per-round wins and pairwise E2E differences, over
//! configuration-compatible lanes only — `artifacts/paired-comparisons.json`.

use crate::metrics::observe::Observation;
use crate::metrics::summary::sorted_percentile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the paired-comparisons layout.
pub const PAIRED_VERSION: u32 = 1;

/// One lane's round wins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WinShare {
    /// Lane label.
    pub lane: String,
    /// Display name.
    pub display_name: String,
    /// Rounds won; a tie between k lanes gives each 1/k.
    pub wins: f64,
    /// Rounds in which this lane had an E2E.
    pub rounds_with_e2e: u64,
    /// wins / rounds with a winner.
    pub win_share: Option<f64>,
}

/// E2E differences A − B over rounds where both had an E2E.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairDiff {
    /// Lane A.
    pub a: String,
    /// Lane B.
    pub b: String,
    /// Rounds where both had an E2E.
    pub count: u64,
    /// count / rounds.
    pub coverage: Option<f64>,
    /// Nearest-rank p50 of A − B, ms.
    pub e2e_diff_p50: Option<f64>,
    /// p95 of A − B, ms.
    pub e2e_diff_p95: Option<f64>,
    /// p99 of A − B, ms.
    pub e2e_diff_p99: Option<f64>,
}

/// `artifacts/paired-comparisons.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedComparisons {
    /// [`PAIRED_VERSION`].
    pub paired_version: u32,
    /// Rounds in the run (coverage denominator).
    pub rounds: u64,
    /// Rounds in which at least one compared lane had an E2E.
    pub rounds_with_winner: u64,
    /// Lanes compared (compatible), in report order.
    pub lanes: Vec<String>,
    /// Lanes left out as configuration-incompatible.
    pub excluded_incompatible: Vec<String>,
    /// Wins per lane, in `lanes` order.
    pub wins: Vec<WinShare>,
    /// Every ordered pair (A, B), A ≠ B, in `lanes` order.
    pub pairs: Vec<PairDiff>,
}

/// A lane taking part: its index in the observations' lane table, label and display name.
#[derive(Debug, Clone)]
pub struct PairedLane {
    /// Index into the lane table.
    pub index: u32,
    /// Lane label.
    pub lane: String,
    /// Display name.
    pub display_name: String,
}

/// Computes the comparisons over `lanes` (compatible, in report order); `excluded` names the
/// incompatible ones. `rounds` is the coverage denominator.
pub fn compute(
    observations: &[Observation],
    lanes: &[PairedLane],
    excluded: Vec<String>,
    rounds: u64,
) -> PairedComparisons {
    let position: BTreeMap<u32, usize> = lanes
        .iter()
        .enumerate()
        .map(|(i, l)| (l.index, i))
        .collect();
    // round_index → E2E per compared lane.
    let mut by_round: BTreeMap<u64, Vec<Option<f64>>> = BTreeMap::new();
    for o in observations {
        let (Some(pos), Some(e2e)) = (position.get(&o.lane), o.e2e_ms) else {
            continue;
        };
        if !o.completed || !e2e.is_finite() {
            continue;
        }
        by_round
            .entry(o.round_index)
            .or_insert_with(|| vec![None; lanes.len()])[*pos] = Some(e2e);
    }
    let n = lanes.len();
    let mut wins = vec![0.0f64; n];
    let mut with_e2e = vec![0u64; n];
    let mut diffs: Vec<Vec<f64>> = vec![Vec::new(); n * n];
    let mut rounds_with_winner = 0u64;
    for row in by_round.values() {
        let best = row.iter().flatten().copied().min_by(|a, b| a.total_cmp(b));
        if let Some(best) = best {
            rounds_with_winner += 1;
            let tied = row.iter().filter(|v| **v == Some(best)).count() as f64;
            for (i, v) in row.iter().enumerate() {
                if *v == Some(best) {
                    wins[i] += 1.0 / tied;
                }
            }
        }
        for (a, va) in row.iter().enumerate() {
            let Some(va) = va else { continue };
            with_e2e[a] += 1;
            for (b, vb) in row.iter().enumerate() {
                if let (true, Some(vb)) = (a != b, vb) {
                    diffs[a * n + b].push(va - vb);
                }
            }
        }
    }
    let win_rows = lanes
        .iter()
        .enumerate()
        .map(|(i, l)| WinShare {
            lane: l.lane.clone(),
            display_name: l.display_name.clone(),
            wins: wins[i],
            rounds_with_e2e: with_e2e[i],
            win_share: (rounds_with_winner > 0).then(|| wins[i] / rounds_with_winner as f64),
        })
        .collect();
    let mut pairs = Vec::new();
    for a in 0..n {
        for b in 0..n {
            if a == b {
                continue;
            }
            let d = &mut diffs[a * n + b];
            d.sort_by(f64::total_cmp);
            pairs.push(PairDiff {
                a: lanes[a].lane.clone(),
                b: lanes[b].lane.clone(),
                count: d.len() as u64,
                coverage: (rounds > 0).then(|| d.len() as f64 / rounds as f64),
                e2e_diff_p50: sorted_percentile(d, 0.50),
                e2e_diff_p95: sorted_percentile(d, 0.95),
                e2e_diff_p99: sorted_percentile(d, 0.99),
            });
        }
    }
    PairedComparisons {
        paired_version: PAIRED_VERSION,
        rounds,
        rounds_with_winner,
        lanes: lanes.iter().map(|l| l.lane.clone()).collect(),
        excluded_incompatible: excluded,
        wins: win_rows,
        pairs,
    }
}
