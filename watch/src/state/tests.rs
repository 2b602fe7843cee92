//! Shared fixtures of the state, view and render tests: a plan of two lanes in two regions, two
//! families, three rounds, and records whose figures the tests work out by hand.

use super::*;
use openbench_common::record::ErrorType;
use openbench_common::rundir::{Plan, PlanKind, PlannedLane, PlannedRound, RoundLine};

/// Lanes `a@eu` and `b@us`; rounds 0 (f1), 1 (f2), 2 (f1), request ids `req-<round><lane>`.
pub fn plan() -> Plan {
    let lanes = vec![
        Lane {
            label: "a@eu".into(),
            provider: "a".into(),
            region: "eu".into(),
        },
        Lane {
            label: "b@us".into(),
            provider: "b".into(),
            region: "us".into(),
        },
    ];
    let rounds = (0..3u64)
        .map(|i| PlannedRound {
            round_index: i,
            round_id: format!("round-{i}"),
            task_family: if i == 1 { "f2" } else { "f1" }.into(),
            item_id: format!("item-{i}"),
            item_hash: String::new(),
            requests: lanes
                .iter()
                .map(|l| PlannedLane {
                    lane: l.label.clone(),
                    provider: l.provider.clone(),
                    region: l.region.clone(),
                    request_id: format!("req-{i}{}", l.provider),
                })
                .collect(),
        })
        .collect();
    Plan {
        plan_version: 1,
        kind: PlanKind::Full,
        attempt: 0,
        benchmark_slug: "s".into(),
        schedule_version: "v".into(),
        dataset_release_hash: "h".into(),
        families: vec!["f1".into(), "f2".into()],
        lanes,
        items_per_family: 2,
        repeats: None,
        rounds,
    }
}

/// A completed record of `round` on lane `lane` ("a" or "b") with TTFA, E2E and tokens/s.
pub fn completed(round: u64, lane: &str, ttfa: f64, e2e: f64, tps: f64) -> TerminalRecord {
    let mut r = base(round, lane, Outcome::Completed);
    r.ttfa_ms = Some(ttfa);
    r.e2e_ms = Some(e2e);
    r.output_tokens_per_second = Some(tps);
    r
}

/// A failed record.
pub fn failed(
    round: u64,
    lane: &str,
    outcome: Outcome,
    error: ErrorType,
    msg: &str,
) -> TerminalRecord {
    let mut r = base(round, lane, outcome);
    r.error_type = Some(error);
    r.error_message = Some(msg.into());
    r
}

fn base(round: u64, lane: &str, outcome: Outcome) -> TerminalRecord {
    let mut r = TerminalRecord::new("2026-01-01T00:00:00Z".into(), outcome);
    r.request_id = format!("req-{round}{lane}");
    r.round_index = round;
    r.task_family = if round == 1 { "f2" } else { "f1" }.into();
    r.provider = lane.into();
    r.region = if lane == "a" { "eu" } else { "us" }.into();
    r.lane = format!("{lane}@{}", r.region);
    r
}

/// The records of the worked example, in file order.
pub fn records() -> Vec<TerminalRecord> {
    vec![
        completed(0, "a", 10.0, 100.0, 50.0),
        completed(0, "b", 20.0, 200.0, 40.0),
        failed(
            1,
            "a",
            Outcome::HarnessError,
            ErrorType::Harness,
            "probe lost",
        ),
        failed(
            1,
            "b",
            Outcome::HttpError,
            ErrorType::Http429,
            "rate limited",
        ),
        completed(1, "a", 30.0, 300.0, 60.0), // supersedes the harness record
        completed(2, "a", 40.0, 400.0, 70.0),
        // Never replaces the committed record of req-0a, but is the lane's latest error.
        failed(
            0,
            "a",
            Outcome::HarnessError,
            ErrorType::Harness,
            "probe lost again",
        ),
    ]
}

/// Round lines of rounds 0 and 1.
pub fn round_lines() -> Vec<String> {
    let line = |i: u64, skew: f64, round_ms: f64, overhead: Option<f64>| {
        serde_json::to_string(&RoundLine {
            round_index: i,
            round_id: format!("round-{i}"),
            released_at: "2026-01-01T00:00:00Z".into(),
            released_offset_ms: 0.0,
            launch_skew_ms: skew,
            coordinator_overhead_ms: overhead,
            round_ms,
            lanes_dispatched: 2,
            harness_errors: 0,
            launch_order: vec!["a@eu".into(), "b@us".into()],
            probe_launch_skew_ms: None,
            link_rtt_ms: Default::default(),
            out_of_round: false,
        })
        .unwrap_or_default()
    };
    vec![line(0, 0.5, 100.0, None), line(1, 1.5, 300.0, Some(2.0))]
}

/// The state after every record and round line of the example.
pub fn worked_state() -> RunState {
    let mut s = RunState::new(Some(&crate::plan_file::of_rounds(&plan())), &[], &[]);
    for r in records() {
        s.record(&r);
    }
    for l in round_lines() {
        s.rounds_line(&l);
    }
    s
}

#[test]
fn counts_the_records_that_count_and_the_rounds_done() {
    let s = worked_state();
    let a = &s.cells[0];
    // Lane a: f1 holds req-0a and req-2a, f2 req-1a (its harness record superseded).
    assert_eq!((a[0].planned, a[0].submitted, a[0].completed), (2, 2, 2));
    assert_eq!((a[1].planned, a[1].submitted, a[1].completed), (1, 1, 1));
    assert_eq!(a[1].harness_errors, 0);
    assert!(a[1].classes.is_empty(), "{:?}", a[1].classes);
    assert_eq!(a[0].e2e_ms, [100.0, 400.0]);
    assert_eq!(a[1].ttfa_ms, [30.0]);
    let latest = a[0]
        .latest_error
        .as_ref()
        .map(|e| (e.seq, e.class.as_str()));
    assert_eq!(latest, Some((7, "harness")));
    let b = &s.cells[1];
    assert_eq!((b[1].submitted, b[1].failures), (1, 1));
    assert_eq!(b[1].classes.get("http_429"), Some(&1));
    // Rounds 0 and 1 have both lanes committed; round 2 lacks req-2b.
    assert_eq!((s.rounds_done, s.rounds_total), (2, 3));
    assert_eq!(s.rounds.len(), 2);
    assert_eq!(s.rounds[1].family, Some(1));
}

#[test]
fn a_reset_forgets_records_but_keeps_the_plan() {
    let mut s = worked_state();
    s.reset_records();
    assert_eq!(s.rounds_done, 0);
    assert_eq!(s.cells[0][0].planned, 2);
    assert_eq!(s.cells[0][0].submitted, 0);
    for r in records() {
        s.record(&r);
    }
    assert_eq!(s.rounds_done, 2, "the rounds count again from scratch");
    s.results_line("{not json");
    s.results_line("   ");
    assert_eq!(s.unreadable_lines, 1);
    // A round line with only the fields the view needs (and one it does not know) is read.
    s.rounds_line(
        r#"{"round_index": 2, "launch_skew_ms": 0.25, "round_ms": 9, "probe_rtt_ms": 1}"#,
    );
    s.rounds_line(r#"{"launch_skew_ms": 0.25}"#);
    assert_eq!(
        s.rounds.last().map(|r| (r.round_index, r.family)),
        Some((2, Some(0)))
    );
    assert_eq!(
        s.unreadable_lines, 2,
        "a line without its round index is not a round"
    );
}

#[test]
fn records_of_unplanned_lanes_and_families_get_their_own_rows() {
    let mut s = RunState::new(None, &[], &["f1".to_string()]);
    let mut r = completed(0, "a", 1.0, 2.0, 3.0);
    r.task_family = "f9".into();
    s.record(&r);
    assert_eq!(s.lanes.len(), 1);
    assert_eq!(s.families, ["f1", "f9"]);
    assert_eq!(s.cells[0][1].completed, 1);
    assert_eq!(s.cells[0][1].planned, 0);
}
