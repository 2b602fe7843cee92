//! Comparing two repeated paired runs (`plans.repeats` in both; docs/methodology.md, "Repeats
//! of paired rounds"): per cell, each compared metric's mean across each run's repeats and its
//! 95% Student t interval (`openbench_report_kit::repeats`). The repeats, not the rounds of one
//! pass, are then the units, so run-to-run drift widens the interval instead of turning into a
//! verdict; a change is called only when the two intervals are separated, the load workflow's
//! rule ([`openbench_report_kit::repeats::RepeatInterval::separated_from`]), and still never
//! within the runs' measured error.

use super::{Change, Metric};
use crate::metrics::{Observation, Summary};
use crate::repeats::{PairedRepeats, repeat_summaries};
use openbench_report_kit::repeats::repeat_interval;
use openbench_tasks::scoring::Family;

/// Each repeat's summary of lane `lane` (and of `family` only, when given) in a repeated run.
pub fn summaries(
    observations: &[Observation],
    lane: u32,
    family: Option<Family>,
    run: &PairedRepeats,
) -> Vec<Summary> {
    repeat_summaries(observations, lane, family, (run.repeats, run.rounds))
}

/// The change of `metric` between two repeated runs: the means across repeats and their
/// intervals; without an interval in either run (under two repeats had the metric) the change
/// of the whole runs' figures (`whole`) with no interval, so no verdict.
pub fn change(
    metric: Metric,
    whole: (&Summary, &Summary),
    (a, b): (&[Summary], &[Summary]),
) -> Change {
    let interval = |runs: &[Summary]| {
        let values: Vec<f64> = runs.iter().filter_map(|s| metric.of(s)).collect();
        repeat_interval(&values)
    };
    let repeats = interval(a).zip(interval(b));
    let (va, vb) = match repeats {
        Some((ia, ib)) => (Some(ia.mean), Some(ib.mean)),
        None => (metric.of(whole.0), metric.of(whole.1)),
    };
    Change {
        metric,
        a: va,
        b: vb,
        delta: va.zip(vb).map(|(x, y)| y - x),
        low: None,
        high: None,
        replicates: 0,
        error_floor_ms: 0.0,
        validity_failed: false,
        repeats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::summary::summarize;

    /// One summary per repeat with these E2E p50s (ms).
    fn repeats(e2e_p50: &[f64]) -> Vec<Summary> {
        e2e_p50
            .iter()
            .map(|v| {
                let mut s = summarize("pooled", &[], None, None);
                s.e2e_latency_p50 = Some(*v);
                s
            })
            .collect()
    }

    #[test]
    fn a_change_is_called_only_when_the_repeat_intervals_are_separated() {
        let whole = summarize("pooled", &[], None, None);
        // A: 100, 102, 104 → mean 102, s = 2, half-width 4.3027 · 2 / √3 = 4.968330:
        // [97.031670, 106.968330]. B: 110, 112, 114 → [107.031670, 116.968330]: separated.
        let a = repeats(&[100.0, 102.0, 104.0]);
        let b = repeats(&[110.0, 112.0, 114.0]);
        let c = change(Metric::E2eP50, (&whole, &whole), (&a, &b));
        let (ia, ib) = c.repeats.unwrap();
        assert!((ia.low - 97.031670).abs() < 1e-6 && (ia.high - 106.968330).abs() < 1e-6);
        assert!((ib.low - 107.031670).abs() < 1e-6, "{ib:?}");
        assert_eq!((c.a, c.b, c.delta), (Some(102.0), Some(112.0), Some(10.0)));
        assert_eq!((c.low, c.high, c.replicates), (None, None, 0));
        assert!(c.excludes_zero() && c.is_difference() && !c.is_better());
        assert_eq!(
            super::super::render::verdict(&c).as_deref(),
            Some("E2E p50 slower in B by 10.0 ms (worse)")
        );
        // B: 106, 108, 110 → [103.031670, 112.968330] overlaps A's: no verdict, though the
        // means differ by 6 ms.
        let b = repeats(&[106.0, 108.0, 110.0]);
        let c = change(Metric::E2eP50, (&whole, &whole), (&a, &b));
        assert_eq!(c.delta, Some(6.0));
        assert!(!c.excludes_zero() && !c.is_difference());
        assert_eq!(super::super::render::verdict(&c), None);
        // Separated but no larger than the runs' measured error: still no call.
        let b = repeats(&[110.0, 112.0, 114.0]);
        let mut c = change(Metric::E2eP50, (&whole, &whole), (&a, &b));
        c.error_floor_ms = 10.0;
        assert!(c.excludes_zero() && !c.is_difference());
        // Under two repeats with the figure in a run: no interval, no verdict.
        let c = change(Metric::E2eP50, (&whole, &whole), (&a, &repeats(&[5.0])));
        assert_eq!((c.repeats, c.a), (None, None));
        assert!(!c.excludes_zero());
    }
}
