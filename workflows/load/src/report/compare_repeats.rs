//! Comparing two repeated load runs (`load.repeats` in both): written steps matched by their
//! load in order, rows by lane label (plus the pooled row), and per row each compared figure's
//! mean across each run's repeats with its 95% Student t interval
//! (`openbench_report_kit::repeats`). A change is called better or worse only when the two
//! runs' intervals are separated, and still never within the runs' measured error
//! (docs/validity.md): the repeats, not the requests of one repeat, are then the units, so
//! run-to-run drift (the provider's load, the machine's) widens the interval instead of
//! turning into a verdict.

use super::compare::{
    Change, Figure, RowComparison, StepComparison, error_floor_ms, validity_failed,
};
use super::compute::{LoadMetrics, Row, StepView};
use super::repeats::RepeatedStep;
use openbench_report_kit::repeats::repeat_interval;

/// The matched written steps of A and B, and the labels of those in one run only.
pub fn steps(ma: &LoadMetrics, mb: &LoadMetrics) -> (Vec<StepComparison>, Vec<String>) {
    let mut used = vec![false; mb.repeats.len()];
    let mut out = Vec::new();
    let mut unmatched = Vec::new();
    for ra in &ma.repeats {
        let found = (0..mb.repeats.len()).find(|&i| !used[i] && mb.repeats[i].label == ra.label);
        let Some(ib) = found else {
            unmatched.push(format!("A: {}", ra.label));
            continue;
        };
        used[ib] = true;
        out.push(step(ma, ra, mb, &mb.repeats[ib]));
    }
    for (ib, used) in used.iter().enumerate() {
        if !used {
            unmatched.push(format!("B: {}", mb.repeats[ib].label));
        }
    }
    (out, unmatched)
}

/// The views of a repeated step's repeats, in repeat order.
fn views<'a>(m: &'a LoadMetrics, step: &RepeatedStep) -> Vec<&'a StepView> {
    step.phases
        .iter()
        .filter_map(|p| m.steps.iter().find(|s| s.index == *p))
        .collect()
}

/// The row `name` (a lane label, or `None` for pooled) of each repeat.
fn rows_of<'a>(views: &[&'a StepView], name: Option<&str>) -> Vec<&'a Row> {
    views
        .iter()
        .filter_map(|v| match name {
            Some(n) => v.lanes.iter().find(|r| r.name == n),
            None => Some(&v.pooled),
        })
        .collect()
}

fn step(
    ma: &LoadMetrics,
    ra: &RepeatedStep,
    mb: &LoadMetrics,
    rb: &RepeatedStep,
) -> StepComparison {
    let (va, vb) = (views(ma, ra), views(mb, rb));
    let lanes_a: Vec<String> = va
        .first()
        .map(|v| v.lanes.iter().map(|r| r.name.clone()).collect())
        .unwrap_or_default();
    let lanes_b: Vec<String> = vb
        .first()
        .map(|v| v.lanes.iter().map(|r| r.name.clone()).collect())
        .unwrap_or_default();
    let mut rows = Vec::new();
    let mut unmatched_lanes = Vec::new();
    for lane in &lanes_a {
        if lanes_b.contains(lane) {
            rows.push(row(ma, mb, &va, &vb, Some(lane)));
        } else {
            unmatched_lanes.push(format!("A: {lane}"));
        }
    }
    for lane in lanes_b.iter().filter(|l| !lanes_a.contains(l)) {
        unmatched_lanes.push(format!("B: {lane}"));
    }
    rows.push(row(ma, mb, &va, &vb, None));
    StepComparison {
        label: ra.label.clone(),
        steps: (ra.step, rb.step),
        rows,
        unmatched_lanes,
        repeats: Some((ra.phases.len(), rb.phases.len())),
    }
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

fn row(
    ma: &LoadMetrics,
    mb: &LoadMetrics,
    va: &[&StepView],
    vb: &[&StepView],
    lane: Option<&str>,
) -> RowComparison {
    let (rows_a, rows_b) = (rows_of(va, lane), rows_of(vb, lane));
    let changes = Figure::ALL
        .iter()
        .map(|&figure| {
            let values = |rows: &[&Row]| -> Vec<f64> {
                rows.iter().filter_map(|r| figure.of_row(r)).collect()
            };
            let (ia, ib) = (
                repeat_interval(&values(&rows_a)),
                repeat_interval(&values(&rows_b)),
            );
            let (a, b) = (ia.map(|i| i.mean), ib.map(|i| i.mean));
            Change {
                figure,
                a,
                b,
                delta: a.zip(b).map(|(x, y)| y - x),
                low: None,
                high: None,
                replicates: 0,
                error_floor_ms: error_floor_ms(ma, mb, figure.quantile()),
                validity_failed: validity_failed(ma, mb),
                repeats: ia.zip(ib),
            }
        })
        .collect();
    let achieved = |rows: &[&Row]| {
        mean(
            &rows
                .iter()
                .map(|r| r.metrics.rate.achieved_per_s)
                .collect::<Vec<_>>(),
        )
    };
    RowComparison {
        name: lane.unwrap_or("pooled").to_string(),
        measured: (
            rows_a.iter().map(|r| r.metrics.measured).sum(),
            rows_b.iter().map(|r| r.metrics.measured).sum(),
        ),
        achieved_per_s: (achieved(&rows_a), achieved(&rows_b)),
        sustained: (
            rows_a.iter().all(|r| r.metrics.sustained),
            rows_b.iter().all(|r| r.metrics.sustained),
        ),
        changes,
    }
}
