//! The regression rule on hand-made changes, and which stored runs `history` compares.

use super::*;
use openbench_task_metrics::compare::Metric;

fn change(metric: Metric, a: f64, b: f64, low: f64, high: f64) -> Change {
    Change {
        metric,
        a: Some(a),
        b: Some(b),
        delta: Some(b - a),
        low: Some(low),
        high: Some(high),
        replicates: 1000,
        error_floor_ms: 0.0,
        validity_failed: false,
        repeats: None,
    }
}

const RULE: RegressionRule = RegressionRule {
    min_relative_change_pct: 10.0,
    min_rate_change_points: 2.0,
};

#[test]
fn a_slower_latency_beyond_the_threshold_with_an_interval_above_zero_is_a_regression() {
    // +12 ms on 100 ms is 12% ≥ 10%; the interval [+5, +20] excludes zero.
    assert!(is_regression(
        &change(Metric::E2eP50, 100.0, 112.0, 5.0, 20.0),
        &RULE
    ));
    // +9 ms is 9% < 10%.
    assert!(!is_regression(
        &change(Metric::E2eP50, 100.0, 109.0, 5.0, 20.0),
        &RULE
    ));
    // The interval touches zero: no verdict, no regression.
    assert!(!is_regression(
        &change(Metric::E2eP50, 100.0, 150.0, -1.0, 60.0),
        &RULE
    ));
    // Faster is better, never a regression.
    assert!(!is_regression(
        &change(Metric::E2eP50, 100.0, 50.0, -60.0, -40.0),
        &RULE
    ));
}

#[test]
fn tokens_per_second_and_rates_regress_downwards() {
    // Tokens/s floor from 50 to 40: −20%, worse.
    assert!(is_regression(
        &change(Metric::TpsP95Floor, 50.0, 40.0, -15.0, -5.0),
        &RULE
    ));
    assert!(!is_regression(
        &change(Metric::TpsP95Floor, 40.0, 50.0, 5.0, 15.0),
        &RULE
    ));
    // Task success from 0.95 to 0.92: −3 points ≥ 2.
    assert!(is_regression(
        &change(Metric::TaskSuccess, 0.95, 0.92, -0.05, -0.01),
        &RULE
    ));
    // −1.5 points < 2.
    assert!(!is_regression(
        &change(Metric::TaskSuccess, 0.95, 0.935, -0.03, -0.005),
        &RULE
    ));
    // Failure rate up 3 points: worse.
    assert!(is_regression(
        &change(Metric::FailureRate, 0.01, 0.04, 0.01, 0.05),
        &RULE
    ));
}

fn row(run_id: &str, status: &str) -> RunRow {
    RunRow {
        model_label: String::new(),
        run_id: run_id.into(),
        workflow: "micro-single-task".into(),
        status: status.into(),
        started_at: None,
        lock_sha256: String::new(),
        code_sha256: String::new(),
        requests: 0,
    }
}

/// Runs 0..5: complete, failed, complete, interrupted, complete.
fn five() -> (Vec<RunRow>, Vec<usize>) {
    let rows = vec![
        row("r0", "complete"),
        row("r1", "failed"),
        row("r2", "complete"),
        row("r3", "interrupted"),
        row("r4", "complete"),
    ];
    let compared = (0..rows.len()).filter(|&i| is_compared(&rows[i])).collect();
    (rows, compared)
}

#[test]
fn unfinished_runs_are_skipped_and_each_complete_run_is_compared_with_the_previous_one() {
    let (rows, compared) = five();
    assert_eq!(compared, [0, 2, 4]);
    // Positions in `compared`: r0 → r2, r2 → r4.
    assert_eq!(pairs(&rows, &compared, None).unwrap(), [(0, 1), (1, 2)]);
}

#[test]
fn a_baseline_is_compared_with_the_latest_complete_run_only() {
    let (rows, compared) = five();
    assert_eq!(pairs(&rows, &compared, Some("r0")).unwrap(), [(0, 2)]);
    assert_eq!(pairs(&rows, &compared, Some("r2")).unwrap(), [(1, 2)]);
    let refused = |id: &str| pairs(&rows, &compared, Some(id)).unwrap_err().to_string();
    assert_eq!(
        refused("r1"),
        "history --baseline r1: the run is stored as failed: only a complete run can be a baseline"
    );
    assert_eq!(
        refused("r4"),
        "history --baseline r4: it is the latest complete run: there is nothing newer to compare \
         with it"
    );
    assert_eq!(
        refused("r9"),
        "history --baseline r9: no stored run of this workflow has that id"
    );
}

#[test]
fn a_slowdown_within_the_runs_measured_error_is_no_regression() {
    // +12% on 10 ms (1.2 ms) with an interval above zero, but the runs' own error is 2 ms.
    let mut c = change(Metric::E2eP50, 10.0, 11.2, 0.5, 2.0);
    assert!(is_regression(&c, &RULE));
    c.error_floor_ms = 2.0;
    assert!(!is_regression(&c, &RULE));
}
