//! Per-lane rows per turn with their intervals, on a conversation step built by hand.

use super::*;
use crate::arrivals::Window;
use crate::report::LaneLoad;
use crate::report::fixture::done;
use crate::spec::StepModel;
use std::collections::BTreeMap;

fn lane(name: &str) -> LaneLoad {
    LaneLoad {
        lane: name.into(),
        provider: name.into(),
        region: "local".into(),
        target_rate_per_s: None,
        concurrency: Some(2),
    }
}

/// Lane `a`: 30 turn-0 requests answering at 100 and 150 ms, and two turn-1 ones (first answer
/// at 10 and 30 ms, last at 20 and 40). Lane `b`: 30 turn-0 requests at 200 and 260 ms. One
/// harness failure at turn 1 (set apart) and one request after the window (not measured).
fn step() -> StepResults {
    let mut samples = Vec::new();
    let mut turns = Vec::new();
    let mut add = |sample: RequestSample, turn: u64| {
        samples.push(sample);
        turns.push(SampleTurn {
            turn,
            cached_tokens: None,
        });
    };
    for k in 0..30 {
        add(done("a", None, f64::from(k), &[100.0, 150.0], 150.0, 2), 0);
        add(done("b", None, f64::from(k), &[200.0, 260.0], 260.0, 2), 0);
    }
    add(done("a", None, 40.0, &[10.0, 20.0], 20.0, 2), 1);
    add(done("a", None, 41.0, &[30.0, 40.0], 40.0, 2), 1);
    let mut harness = done("a", None, 42.0, &[1.0, 2.0], 2.0, 2);
    harness.outcome = Outcome::HarnessError;
    add(harness, 1);
    add(done("b", None, 5000.0, &[1.0, 2.0], 2.0, 2), 1);
    StepResults {
        index: 3,
        model: StepModel::Closed { concurrency: 2 },
        window: Window {
            start_ns: 0,
            end_ns: 1_000_000_000,
            load_end_ns: 1_000_000_000,
        },
        lanes: vec![lane("a"), lane("b")],
        samples,
        harness_failures: 1,
        sittings: vec![1],
        turns,
        agent: None,
        retry_after_s: BTreeMap::new(),
        repeat: None,
    }
}

#[test]
fn each_lane_and_the_pool_get_rows_per_turn_with_p50_intervals_from_thirty_values() {
    let rows = turn_rows(&step(), false, 7);
    let keys: Vec<(&str, u64, usize)> = rows
        .iter()
        .map(|r| (r.lane.as_str(), r.turn, r.requests))
        .collect();
    assert_eq!(
        keys,
        [
            ("a", 0, 30),
            ("a", 1, 2),
            ("b", 0, 30),
            ("pooled", 0, 60),
            ("pooled", 1, 2)
        ]
    );
    // Thirty equal values: the p50 and every resample's p50 are that value.
    assert_eq!(rows[0].ttfa_p50_ms, Some(100.0));
    assert_eq!(rows[0].ttfa_p50_interval_ms, Some((100.0, 100.0)));
    assert_eq!(rows[0].e2e_p50_interval_ms, Some((150.0, 150.0)));
    assert_eq!(rows[2].ttfa_p50_interval_ms, Some((200.0, 200.0)));
    assert_eq!(rows[2].e2e_p50_interval_ms, Some((260.0, 260.0)));
    let speed = rows[0].tokens_per_s_p50.unwrap();
    assert_eq!(rows[0].tokens_per_s_p50_interval, Some((speed, speed)));
    // Two values: nearest-rank p50 is the lower, and no interval under 30 values.
    assert_eq!(rows[1].ttfa_p50_ms, Some(10.0));
    assert_eq!(rows[1].e2e_p50_ms, Some(20.0));
    assert_eq!(rows[1].ttfa_p50_interval_ms, None);
    // Pooled: 30 × 100 and 30 × 200 ms; the 30th of 60 is 100; a resample's p50 is either.
    assert_eq!(rows[3].ttfa_p50_ms, Some(100.0));
    let (low, high) = rows[3].ttfa_p50_interval_ms.unwrap();
    assert!([100.0, 200.0].contains(&low) && [100.0, 200.0].contains(&high) && low <= high);
    // Seeded: the same rows again.
    assert_eq!(turn_rows(&step(), false, 7), rows);
}

#[test]
fn a_single_lane_step_has_no_pooled_rows_and_the_table_shows_intervals() {
    let mut one = step();
    one.lanes.truncate(1);
    let rows = turn_rows(&one, false, 7);
    assert!(rows.iter().all(|r| r.lane == "a"), "{rows:?}");
    assert_eq!(
        with_interval(Some(100.0), Some((95.0, 104.5))),
        "100.0 [95.0, 104.5]"
    );
    assert_eq!(with_interval(Some(10.0), None), "10.0");
}
