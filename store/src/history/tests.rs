//! The regression rule on hand-made changes.

use super::*;
use openbench_micro_single_task::compare::Metric;

fn change(metric: Metric, a: f64, b: f64, low: f64, high: f64) -> Change {
    Change {
        metric,
        a: Some(a),
        b: Some(b),
        delta: Some(b - a),
        low: Some(low),
        high: Some(high),
        replicates: 1000,
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
