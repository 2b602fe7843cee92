//! The measured-error floor and the validity label on hand-made changes.

use super::render::verdict;
use super::{Change, Metric};

fn change(metric: Metric, a: f64, b: f64, floor: f64, failed: bool) -> Change {
    Change {
        metric,
        a: Some(a),
        b: Some(b),
        delta: Some(b - a),
        low: Some((b - a) * 0.5),
        high: Some((b - a) * 1.5),
        replicates: 1000,
        error_floor_ms: floor,
        validity_failed: failed,
        repeats: None,
    }
}

#[test]
fn a_latency_change_within_the_runs_measured_error_is_no_difference() {
    // +3 ms, interval [+1.5, +4.5] excludes zero, but the runs' error is 4 ms.
    let c = change(Metric::E2eP50, 100.0, 103.0, 4.0, false);
    assert!(c.excludes_zero() && c.within_measured_error() && !c.is_difference());
    assert_eq!(
        verdict(&c).as_deref(),
        Some("within the runs' measured error (4.00 ms)")
    );
    // +5 ms is beyond it: a verdict.
    let c = change(Metric::E2eP50, 100.0, 105.0, 4.0, false);
    assert!(c.is_difference());
    assert_eq!(
        verdict(&c).as_deref(),
        Some("E2E p50 slower in B by 5.0 ms (worse)")
    );
    // A rate is not timed: the floor never applies to it.
    let c = change(Metric::TaskSuccess, 0.9, 0.8, 4.0, false);
    assert!(c.is_difference());
}

#[test]
fn a_verdict_resting_on_a_failed_run_says_so() {
    let c = change(Metric::E2eP50, 100.0, 150.0, 2.0, true);
    let text = verdict(&c).unwrap();
    assert!(
        text.ends_with("(worse; rests on a run whose validity failed)"),
        "{text}"
    );
}
