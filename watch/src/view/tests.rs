use super::*;
use crate::state::tests::worked_state;

fn header() -> Header {
    Header {
        run_id: "run-x".into(),
        mode: RunMode::Full,
        status: Some(RunStatus::Running),
        attempt: 0,
        simulator_time_scale: None,
    }
}

fn build(options: &ViewOptions) -> View {
    View::build(&header(), &worked_state(), options)
}

fn lane<'a>(v: &'a View, label: &str) -> &'a LaneView {
    v.lanes
        .iter()
        .find(|l| l.lane == label)
        .unwrap_or_else(|| panic!("no lane {label}"))
}

#[test]
fn whole_run_figures_by_hand() {
    let v = build(&ViewOptions::default());
    assert_eq!((v.rounds_done, v.rounds_total), (2, 3));
    assert_eq!((v.requests_done, v.requests_total), (5, 6));
    assert_eq!((v.failures, v.harness_errors), (1, 0));
    let a = lane(&v, "a@eu");
    // TTFA [10, 30, 40]: p50 → ceil(1.5) − 1 = 1 → 30; p95 → ceil(2.85) − 1 = 2 → 40.
    assert_eq!(
        (a.ttfa_ms.n, a.ttfa_ms.p50, a.ttfa_ms.p95, a.ttfa_ms.p99),
        (3, Some(30.0), Some(40.0), Some(40.0))
    );
    assert_eq!(a.e2e_p50_ms, Some(300.0));
    // Tokens/s [50, 60, 70]: p50 60; floor at p = .05 → ceil(0.15) − 1 = 0 → 50.
    assert_eq!(a.tokens_per_second_p50, Some(60.0));
    assert_eq!(a.tokens_per_second_p95_floor, Some(50.0));
    assert_eq!(a.recent_e2e_ms, [100.0, 300.0, 400.0]);
    assert_eq!(
        a.latest_error.as_deref(),
        Some("round 0 harness: probe lost again")
    );
    let b = lane(&v, "b@us");
    assert_eq!(
        (b.planned, b.submitted, b.completed, b.failures),
        (3, 2, 1, 1)
    );
    assert_eq!(b.e2e_ms.p50, Some(200.0));
    assert_eq!(
        b.latest_error.as_deref(),
        Some("round 1 http_429: rate limited")
    );
    assert_eq!(
        v.failure_classes,
        BTreeMap::from([("http_429".to_string(), 1)])
    );
    // Rounds: skew [0.5, 1.5]; ETA = 1 round left × (100 + 302) / 2 ms = 0.201 s.
    assert_eq!(v.rounds.launch_skew_ms.p50, Some(0.5));
    assert_eq!(v.rounds.launch_skew_ms.p99, Some(1.5));
    assert!(
        v.eta_s.is_some_and(|e| (e - 0.201).abs() < 1e-9),
        "{:?}",
        v.eta_s
    );
    assert_eq!(v.regions, ["eu", "us"]);
    // E2E [100, 200, 300, 400] in 12 bins of 25 ms from 100: bins 0, 4, 8 and 11 (the top).
    let counts: Vec<usize> = v.e2e_histogram.iter().map(|b| b.count).collect();
    assert_eq!(counts, [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1]);
}

#[test]
fn a_family_filter_narrows_lanes_failures_and_rounds() {
    let v = build(&ViewOptions {
        family: Some("f1".into()),
        ..ViewOptions::default()
    });
    let a = lane(&v, "a@eu");
    // f1 only: E2E [100, 400] → p50 index ceil(1) − 1 = 0 → 100.
    assert_eq!((a.planned, a.e2e_ms.n, a.e2e_ms.p50), (2, 2, Some(100.0)));
    assert!(v.failure_classes.is_empty(), "the 429 was an f2 request");
    assert_eq!(v.rounds.lines, 1);
    assert_eq!(v.rounds.last.as_ref().map(|r| r.round_index), Some(0));
    // Whole-run progress ignores the filter.
    assert_eq!(v.requests_done, 5);
}

#[test]
fn a_region_filter_and_the_sort_keys_order_the_rows() {
    let v = build(&ViewOptions {
        region: Some("us".into()),
        ..ViewOptions::default()
    });
    let labels: Vec<&str> = v.lanes.iter().map(|l| l.lane.as_str()).collect();
    assert_eq!(labels, ["b@us"]);
    let order = |sort: SortKey, reverse: bool| -> Vec<String> {
        build(&ViewOptions {
            sort,
            reverse,
            ..ViewOptions::default()
        })
        .lanes
        .into_iter()
        .map(|l| l.lane)
        .collect()
    };
    assert_eq!(order(SortKey::Lane, false), ["a@eu", "b@us"]);
    assert_eq!(order(SortKey::Lane, true), ["b@us", "a@eu"]);
    assert_eq!(order(SortKey::E2eP50, false), ["b@us", "a@eu"]); // 200 < 300
    assert_eq!(order(SortKey::E2eP50, true), ["a@eu", "b@us"]);
    assert_eq!(order(SortKey::Failures, false), ["b@us", "a@eu"]);
    assert_eq!(order(SortKey::Progress, false), ["a@eu", "b@us"]); // 3/3 before 2/3
    assert_eq!(order(SortKey::TokensPerSecond, false), ["a@eu", "b@us"]); // 60 > 40
    assert_eq!(SortKey::Failures.next(), SortKey::Lane);
}

#[test]
fn json_keeps_the_fields_of_the_earlier_snapshot() {
    let v = build(&ViewOptions::default());
    let json = serde_json::to_value(&v).unwrap_or_default();
    for key in [
        "run_id",
        "mode",
        "status",
        "attempt",
        "rounds_done",
        "rounds_total",
        "requests_done",
        "requests_total",
        "failures",
        "harness_errors",
        "eta_s",
    ] {
        assert!(json.get(key).is_some(), "{key} missing");
    }
    let lane = &json["lanes"][0];
    for key in [
        "lane",
        "submitted",
        "completed",
        "failures",
        "harness_errors",
    ] {
        assert!(lane.get(key).is_some(), "lanes[0].{key} missing");
    }
    assert_eq!(lane["ttfa_p50_ms"], 30.0);
    assert_eq!(lane["e2e_p50_ms"], 300.0);
    assert_eq!(json["status"], "running");
}
