//! Paired comparisons (METHODOLOGY §6): per-round wins and pairwise E2E differences, over
//! configuration-compatible lanes only — `artifacts/paired-comparisons.json`.

use crate::metrics::observe::Observation;
use openbench_common::stats::rank_index;
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

/// Above this many compared lanes, `report.md` and `report.html` summarise: a lanes × lanes table
/// stops being readable (at 1,000 lanes it is a million cells), so they show the
/// [`RANKED_EACH_END`] lanes with the highest and the lowest win share, ranked, and point to
/// `paired-comparisons.json`, which always holds every lane and every ordered pair.
pub const MATRIX_MAX_LANES: usize = 24;

/// Lanes shown at each end of the win-share ranking when summarised (see [`MATRIX_MAX_LANES`]).
pub const RANKED_EACH_END: usize = 10;

/// The lanes a summarised view shows, as indices into `wins` (one entry per compared lane, in
/// report order): every lane in report order up to [`MATRIX_MAX_LANES`]; above it the
/// [`RANKED_EACH_END`] with the most wins then the [`RANKED_EACH_END`] with the fewest, ranked by
/// wins (descending; equal wins keep report order).
pub fn shown_lanes(wins: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..wins.len()).collect();
    if wins.len() <= MATRIX_MAX_LANES {
        return order;
    }
    order.sort_by(|a, b| wins[*b].total_cmp(&wins[*a]).then(a.cmp(b)));
    let bottom = order.split_off(order.len() - RANKED_EACH_END);
    order.truncate(RANKED_EACH_END);
    order.extend(bottom);
    order
}

impl PairedComparisons {
    /// Lanes are summarised (see [`MATRIX_MAX_LANES`]).
    pub fn summarised(&self) -> bool {
        self.lanes.len() > MATRIX_MAX_LANES
    }

    /// The pair (A = `lanes[a]`, B = `lanes[b]`) in constant time: [`compute`] lists pairs row
    /// by row, so its position follows from the indices. `None` for `a == b` or a list laid out
    /// otherwise.
    pub fn pair(&self, a: usize, b: usize) -> Option<&PairDiff> {
        let n = self.lanes.len();
        if a == b || a >= n || b >= n {
            return None;
        }
        let index = a * (n - 1) + if b < a { b } else { b - 1 };
        self.pairs
            .get(index)
            .filter(|p| p.a == self.lanes[a] && p.b == self.lanes[b])
    }
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
///
/// Memory grows with lanes × rounds (one E2E per lane and round) plus the lanes² output rows,
/// never with lanes² × rounds: each ordered pair's differences are built in one reusable buffer
/// and its three nearest-rank percentiles selected there (`select_nth_unstable`, the same values
/// a full sort gives, since `total_cmp` is a total order).
pub fn compute(
    observations: &[Observation],
    lanes: &[PairedLane],
    excluded: Vec<String>,
    rounds: u64,
) -> PairedComparisons {
    let table = E2eTable::build(observations, lanes);
    let n = lanes.len();
    let mut wins = vec![0.0f64; n];
    let mut with_e2e = vec![0u64; n];
    let mut rounds_with_winner = 0u64;
    let mut row = Vec::with_capacity(n);
    for slot in 0..table.rounds {
        row.clear();
        row.extend((0..n).map(|lane| table.get(lane, slot)));
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
        for (lane, v) in row.iter().enumerate() {
            with_e2e[lane] += u64::from(v.is_some());
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
    let mut pairs = Vec::with_capacity(n * n.saturating_sub(1));
    let mut diffs = Vec::with_capacity(table.rounds);
    for a in 0..n {
        for b in 0..n {
            if a == b {
                continue;
            }
            table.differences(a, b, &mut diffs);
            let [p50, p95, p99] = nearest_ranks(&mut diffs, [0.50, 0.95, 0.99]);
            pairs.push(PairDiff {
                a: lanes[a].lane.clone(),
                b: lanes[b].lane.clone(),
                count: diffs.len() as u64,
                coverage: (rounds > 0).then(|| diffs.len() as f64 / rounds as f64),
                e2e_diff_p50: p50,
                e2e_diff_p95: p95,
                e2e_diff_p99: p99,
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

/// The finite E2E of each compared lane in each round where at least one of them had one:
/// lane-major, `NaN` marking "no E2E" (a real E2E is finite, so the marker cannot collide).
struct E2eTable {
    /// Rounds (slots) held, in round order.
    rounds: usize,
    /// `values[lane * rounds + slot]`.
    values: Vec<f64>,
}

impl E2eTable {
    fn build(observations: &[Observation], lanes: &[PairedLane]) -> E2eTable {
        let position: BTreeMap<u32, usize> = lanes
            .iter()
            .enumerate()
            .map(|(i, l)| (l.index, i))
            .collect();
        let compared = |o: &Observation| {
            let pos = position.get(&o.lane)?;
            // A re-run was not launched with its round's other lanes: never paired with them.
            let e2e = o
                .e2e_ms
                .filter(|v| o.completed && !o.out_of_round && v.is_finite())?;
            Some((*pos, e2e))
        };
        let mut slots: BTreeMap<u64, usize> = observations
            .iter()
            .filter(|o| compared(o).is_some())
            .map(|o| (o.round_index, 0))
            .collect();
        for (slot, value) in slots.values_mut().enumerate() {
            *value = slot;
        }
        let rounds = slots.len();
        let mut values = vec![f64::NAN; lanes.len() * rounds];
        for o in observations {
            if let (Some((pos, e2e)), Some(slot)) = (compared(o), slots.get(&o.round_index)) {
                values[pos * rounds + slot] = e2e;
            }
        }
        E2eTable { rounds, values }
    }

    fn get(&self, lane: usize, slot: usize) -> Option<f64> {
        Some(self.values[lane * self.rounds + slot]).filter(|v| !v.is_nan())
    }

    /// A − B over the rounds where both had an E2E, in round order, into `out`.
    fn differences(&self, a: usize, b: usize, out: &mut Vec<f64>) {
        let column = |lane: usize| &self.values[lane * self.rounds..(lane + 1) * self.rounds];
        out.clear();
        out.extend(
            column(a)
                .iter()
                .zip(column(b))
                .filter(|(va, vb)| !va.is_nan() && !vb.is_nan())
                .map(|(va, vb)| va - vb),
        );
    }
}

/// Nearest-rank percentiles `ps` (ascending) of `values`, reordering it: each rank is selected
/// in the prefix left by the next higher one, so the three cost about one pass each.
fn nearest_ranks<const K: usize>(values: &mut [f64], ps: [f64; K]) -> [Option<f64>; K] {
    let mut out = [None; K];
    let mut end = values.len();
    for (slot, p) in ps.iter().enumerate().rev() {
        if values.is_empty() {
            break;
        }
        let k = rank_index(values.len(), *p);
        let prefix = &mut values[..end.max(k + 1)];
        let (_, nth, _) = prefix.select_nth_unstable_by(k, f64::total_cmp);
        out[slot] = Some(*nth);
        end = k + 1;
    }
    out
}
