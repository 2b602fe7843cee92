#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Paired comparisons at scale: the streaming computation gives exactly what the obvious one
//! (every difference of every pair kept and sorted) gives, on awkward data; the summarised view
//! above `MATRIX_MAX_LANES` picks and ranks the right lanes in `report.md` and `report.html`.

use openbench_common::record::Outcome;
use openbench_common::stats::rank_index;
use openbench_micro_single_task::metrics::observe::Observation;
use openbench_micro_single_task::paired::{self, PairedComparisons, PairedLane, shown_lanes};
use openbench_micro_single_task::report;
use openbench_micro_single_task::scoring::{EvalClass, Family};
use openbench_micro_single_task::synthetic::{self, SyntheticRun};
use std::collections::BTreeMap;

fn obs(lane: u32, round: u64, e2e: Option<f64>, completed: bool) -> Observation {
    Observation {
        request_id: format!("req-{lane}-{round}"),
        round_index: round,
        item_id: "i".into(),
        lane,
        family: Family::TicketTriage,
        outcome: if completed {
            Outcome::Completed
        } else {
            Outcome::Timeout
        },
        class: if completed {
            EvalClass::ValidResult
        } else {
            EvalClass::FailedRequest
        },
        error_type: None,
        schema_valid: completed,
        field_bits: 0,
        ttfo_ms: e2e,
        ttfa_ms: e2e,
        e2e_ms: e2e,
        tokens_per_second: None,
        reasoning_tokens_before_answer: None,
        reasoning_emitted: false,
        truncated_by_length: false,
        usage: None,
        model_mismatch: None,
        completed,
        failure: None,
        out_of_round: false,
    }
}

/// The obvious computation, written independently: per round a row of E2Es, every pair's
/// differences kept in full and sorted.
fn reference(observations: &[Observation], lanes: &[PairedLane]) -> (Vec<f64>, Vec<[f64; 4]>) {
    let mut rows: BTreeMap<u64, Vec<Option<f64>>> = BTreeMap::new();
    for o in observations {
        let Some(pos) = lanes.iter().position(|l| l.index == o.lane) else {
            continue;
        };
        let Some(e2e) = o.e2e_ms.filter(|v| o.completed && v.is_finite()) else {
            continue;
        };
        rows.entry(o.round_index)
            .or_insert_with(|| vec![None; lanes.len()])[pos] = Some(e2e);
    }
    let n = lanes.len();
    let mut wins = vec![0.0; n];
    for row in rows.values() {
        let best = row.iter().flatten().copied().min_by(f64::total_cmp);
        let Some(best) = best else { continue };
        let tied = row.iter().filter(|v| **v == Some(best)).count() as f64;
        for (i, v) in row.iter().enumerate() {
            if *v == Some(best) {
                wins[i] += 1.0 / tied;
            }
        }
    }
    let mut pairs = Vec::new();
    for a in 0..n {
        for b in (0..n).filter(|b| *b != a) {
            let mut d: Vec<f64> = rows
                .values()
                .filter_map(|row| Some(row[a]? - row[b]?))
                .collect();
            d.sort_by(f64::total_cmp);
            let at = |p: f64| {
                if d.is_empty() {
                    f64::NAN
                } else {
                    d[rank_index(d.len(), p)]
                }
            };
            pairs.push([d.len() as f64, at(0.50), at(0.95), at(0.99)]);
        }
    }
    (wins, pairs)
}

/// A small deterministic generator (64-bit LCG, top bits) for the awkward data.
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

fn bits(v: Option<f64>) -> u64 {
    v.map_or(f64::NAN.to_bits(), f64::to_bits)
}

#[test]
fn streaming_pairs_equal_the_full_sort_on_awkward_data() {
    let mut rng = Lcg(42);
    let mut observations = Vec::new();
    // Lanes 0..6 recorded; lane 5 is not compared. Values from a small set so that ties and
    // zero differences are common; signed zeros, infinities, NaN and failures mixed in.
    let values = [
        100.0,
        100.0,
        250.5,
        -0.0,
        0.0,
        f64::INFINITY,
        f64::NAN,
        1e-300,
        99.75,
    ];
    for round in (0..120).map(|r| r * 3 + 7) {
        for lane in 0..6u32 {
            match rng.below(10) {
                0 => continue,
                1 => observations.push(obs(lane, round, None, false)),
                2 => observations.push(obs(lane, round, Some(50.0), false)),
                _ => {
                    let v = values[rng.below(values.len() as u64) as usize];
                    observations.push(obs(lane, round, Some(v), true));
                }
            }
        }
    }
    // Report order differs from the lane table's.
    let lanes: Vec<PairedLane> = [3u32, 0, 4, 1, 2]
        .iter()
        .map(|i| PairedLane {
            index: *i,
            lane: format!("l{i}"),
            display_name: format!("L{i}"),
        })
        .collect();
    let got = paired::compute(&observations, &lanes, vec!["l5".into()], 400);
    let (wins, pairs) = reference(&observations, &lanes);
    let got_wins: Vec<u64> = got.wins.iter().map(|w| w.wins.to_bits()).collect();
    let want_wins: Vec<u64> = wins.iter().map(|w| w.to_bits()).collect();
    assert_eq!(got_wins, want_wins);
    assert_eq!(got.pairs.len(), pairs.len());
    for (g, want) in got.pairs.iter().zip(&pairs) {
        assert_eq!(g.count as f64, want[0], "{} − {}", g.a, g.b);
        let got = [g.e2e_diff_p50, g.e2e_diff_p95, g.e2e_diff_p99].map(bits);
        assert_eq!(got, [want[1], want[2], want[3]].map(|v| bits(Some(v))));
    }
    // Pair lookup by index agrees with the listed order.
    for (a, b) in [(0, 1), (1, 0), (4, 2), (2, 4), (3, 0)] {
        let p = got.pair(a, b).unwrap();
        assert_eq!(
            (p.a.as_str(), p.b.as_str()),
            (&*got.lanes[a], &*got.lanes[b])
        );
    }
    assert!(got.pair(2, 2).is_none());
    assert!(got.pair(0, 5).is_none());
}

#[test]
fn shown_lanes_rank_both_ends_above_the_threshold() {
    // At the threshold: everyone, in report order.
    let wins: Vec<f64> = (0..24).map(|i| (i % 5) as f64).collect();
    assert_eq!(shown_lanes(&wins), (0..24).collect::<Vec<_>>());
    // 30 lanes, wins = lane index except lane 7 ties lane 29 at the top: 29 and 7 first (report
    // order breaks the tie), then 28 down to 21; the bottom ten are 9, 8, 6, 5, 4, 3, 2, 1, 0
    // preceded by 10.
    let mut wins: Vec<f64> = (0..30).map(|i| i as f64).collect();
    wins[7] = 29.0;
    assert_eq!(
        shown_lanes(&wins),
        [
            7, 29, 28, 27, 26, 25, 24, 23, 22, 21, 10, 9, 8, 6, 5, 4, 3, 2, 1, 0
        ]
    );
}

#[test]
fn reports_above_the_threshold_show_a_ranked_subset_and_keep_every_pair() {
    let dir = tempfile::tempdir().unwrap();
    let spec = SyntheticRun {
        records: 30 * 40,
        lanes: 30,
        seed: 5,
    };
    let run = synthetic::write_run(dir.path(), &spec).unwrap();
    report::write_all(dir.path(), &run.lock, &run.gold).unwrap();
    let paired: PairedComparisons = serde_json::from_slice(
        &std::fs::read(dir.path().join("artifacts/paired-comparisons.json")).unwrap(),
    )
    .unwrap();
    assert_eq!((paired.wins.len(), paired.pairs.len()), (30, 30 * 29));
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    let section = &md[md.find("## Paired analysis").unwrap()..];
    let section = &section[..section[3..].find("\n## ").unwrap()];
    assert!(section.contains("30 lanes were compared"), "{section}");
    // Wins table: header, separator and 20 rows; matrix: header row has 1 + 20 columns.
    let tables: Vec<Vec<&str>> = section
        .split("\n\n")
        .map(|block| block.lines().filter(|l| l.starts_with('|')).collect())
        .filter(|rows: &Vec<&str>| !rows.is_empty())
        .collect();
    assert_eq!(tables.len(), 2);
    assert_eq!(tables[0].len(), 2 + 20);
    assert_eq!(tables[1].len(), 2 + 20);
    assert_eq!(tables[1][0].matches(" | ").count(), 20);
    // The first ranked row has the most wins.
    let most = paired.wins.iter().map(|w| w.wins).fold(f64::MIN, f64::max);
    let top = paired.wins.iter().find(|w| w.wins == most).unwrap();
    assert!(tables[0][2].starts_with(&format!("| {} |", top.display_name)));
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let matrix = &html[html.find("<section id=\"paired\">").unwrap()..];
    let matrix = &matrix[..matrix.find("</section>").unwrap()];
    assert!(matrix.contains("30 providers were compared"));
    assert_eq!(matrix.matches("<tr><th scope=\"row\">").count(), 20);
}

#[test]
fn at_the_threshold_every_lane_is_shown_without_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let spec = SyntheticRun {
        records: 24 * 2,
        lanes: 24,
        seed: 5,
    };
    let run = synthetic::write_run(dir.path(), &spec).unwrap();
    report::write_all(dir.path(), &run.lock, &run.gold).unwrap();
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(!md.contains("lanes were compared"));
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(!html.contains("providers were compared"));
    assert!(html.matches("<tr><th scope=\"row\">").count() >= 24);
}

#[test]
fn html_samples_belong_to_their_lane() {
    // Synthetic lane pN has E2E − TTFA = 200 + N in every record, so a sample carried to the
    // wrong provider shows.
    let dir = tempfile::tempdir().unwrap();
    let spec = SyntheticRun {
        records: 12 * 5,
        lanes: 12,
        seed: 9,
    };
    let run = synthetic::write_run(dir.path(), &spec).unwrap();
    let computed = report::compute(dir.path(), &run.lock, &run.gold).unwrap();
    let ctx = report::markdown::ReportContext {
        lock: &run.lock,
        metrics: &computed.metrics,
        paired: &computed.paired,
        period: None,
        artifacts: &[],
        superseded: 0,
        ignored_partial_line: false,
        torn_line: None,
        faults: Default::default(),
        accepted: &[],
    };
    let input = openbench_micro_single_task::html::HtmlReportInput::from_report(
        &ctx,
        &computed.observations,
        &computed.lanes,
    );
    assert_eq!(input.providers.len(), 12);
    for p in &input.providers {
        let n: f64 = p.lane.trim_start_matches('p').parse().unwrap();
        assert_eq!(p.samples.len(), 5, "{}", p.lane);
        for s in &p.samples {
            assert_eq!(
                s.e2e_ms.unwrap() - s.ttfa_ms.unwrap(),
                200.0 + n,
                "{}",
                p.lane
            );
        }
    }
}

#[test]
fn an_out_of_round_result_is_never_paired_with_its_rounds_other_lanes() {
    // Two lanes, three rounds. Round 1's lane-1 result is a re-run (out of round): it would win
    // round 1 (100 < 300) and add the difference 300 − 100 = 200 to (l0, l1).
    let mut rerun = obs(1, 1, Some(100.0), true);
    rerun.out_of_round = true;
    let observations = vec![
        obs(0, 0, Some(200.0), true),
        obs(1, 0, Some(250.0), true),
        obs(0, 1, Some(300.0), true),
        rerun,
        obs(0, 2, Some(400.0), true),
        obs(1, 2, Some(380.0), true),
    ];
    let lanes: Vec<PairedLane> = (0..2u32)
        .map(|i| PairedLane {
            index: i,
            lane: format!("l{i}"),
            display_name: format!("L{i}"),
        })
        .collect();
    let got = paired::compute(&observations, &lanes, Vec::new(), 3);
    // Wins by hand: round 0 → l0 (200 < 250), round 1 → l0 alone, round 2 → l1 (380 < 400).
    let wins: Vec<f64> = got.wins.iter().map(|w| w.wins).collect();
    assert_eq!(wins, [2.0, 1.0]);
    assert_eq!(got.wins[1].rounds_with_e2e, 2);
    // l0 − l1 over rounds 0 and 2 only: −50 and +20; nearest-rank p50 of [−50, 20] is −50.
    let pair = got
        .pairs
        .iter()
        .find(|p| p.a == "l0" && p.b == "l1")
        .unwrap();
    assert_eq!(pair.count, 2);
    assert_eq!(pair.e2e_diff_p50, Some(-50.0));
    assert_eq!(pair.e2e_diff_p99, Some(20.0));
}
