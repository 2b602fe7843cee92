//! `history`: every stored run of a workflow, oldest first — per lane (provider × region) and
//! family the trend of the report's figures, the change from each run to the next with the
//! paired bootstrap interval `compare` computes, the regressions among those changes, and cost
//! and token reconciliation of the latest run.
//!
//! A **regression** is a change from one run to the next whose 95% interval excludes zero on
//! the worse side and whose size reaches the spec's rule (`results.regression`): a relative
//! change of at least `min_relative_change_pct` of the earlier value for latencies and tokens/s,
//! at least `min_rate_change_points` percentage points for task success and failure rate.

pub mod render;

use crate::StoreError;
use crate::backend::Store;
use crate::cost::{self, CostRow};
use crate::load::{self, RunRow, StoredRun};
use openbench_common::spec::RegressionRule;
use openbench_micro_single_task::compare::{
    self, Change, CompareOptions, LaneComparison, ScoredView, Unit,
};
use openbench_micro_single_task::metrics::Summary;

/// What `history` was asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistoryOptions {
    /// The regression rule.
    pub rule: RegressionRule,
    /// Bootstrap settings (as `compare`'s).
    pub compare: CompareOptions,
}

/// One lane's figures in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct LanePoint {
    /// Index into [`History::runs`].
    pub run: usize,
    /// Pooled row, then the families in round order.
    pub cells: Vec<Summary>,
}

/// One lane across runs.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneTrend {
    /// `provider@region`.
    pub key: String,
    /// Display name (the latest run's).
    pub display_name: String,
    /// One point per run that has the lane, oldest first.
    pub points: Vec<LanePoint>,
}

/// The changes from one run to the next.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Index of the earlier run.
    pub from: usize,
    /// Index of the later run.
    pub to: usize,
    /// Lanes in both, with every change.
    pub lanes: Vec<LaneComparison>,
}

/// One regression.
#[derive(Debug, Clone, PartialEq)]
pub struct Regression {
    /// Earlier run index.
    pub from: usize,
    /// Later run index.
    pub to: usize,
    /// Lane display name.
    pub lane: String,
    /// Family or `pooled`.
    pub family: String,
    /// The change.
    pub change: Change,
}

/// Everything `history` found.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// The workflow.
    pub workflow: String,
    /// Stored runs of the workflow, oldest first.
    pub runs: Vec<RunRow>,
    /// Families of the latest run, in round order.
    pub families: Vec<String>,
    /// Every lane, by display name.
    pub lanes: Vec<LaneTrend>,
    /// Run i-1 → run i, for every i ≥ 1.
    pub steps: Vec<Step>,
    /// The regressions, in step, lane and cell order.
    pub regressions: Vec<Regression>,
    /// Cost and tokens of the latest run, per lane.
    pub costs: Vec<CostRow>,
    /// What was asked.
    pub options: HistoryOptions,
}

/// True when `c` is a regression under `rule`.
pub fn is_regression(c: &Change, rule: &RegressionRule) -> bool {
    if !c.excludes_zero() || c.is_better() {
        return false;
    }
    let (Some(a), Some(delta)) = (c.a, c.delta) else {
        return false;
    };
    match c.metric.unit() {
        Unit::Rate => delta.abs() * 100.0 >= rule.min_rate_change_points,
        Unit::Ms | Unit::TokensPerSecond => {
            a != 0.0 && delta.abs() / a.abs() * 100.0 >= rule.min_relative_change_pct
        }
    }
}

/// Reads the store and computes the history of `workflow`'s runs.
pub fn compute(
    store: &mut Store,
    workflow: &str,
    options: HistoryOptions,
) -> Result<History, StoreError> {
    let rows: Vec<RunRow> = load::runs(store)?
        .into_iter()
        .filter(|r| r.workflow == workflow)
        .collect();
    let mut runs: Vec<StoredRun> = Vec::with_capacity(rows.len());
    for row in &rows {
        runs.push(load::run(store, row)?);
    }
    let families = runs
        .last()
        .map(|r| r.lock.families.clone())
        .unwrap_or_default();
    let steps: Vec<Step> = (1..runs.len())
        .map(|to| Step {
            from: to - 1,
            to,
            lanes: compare::compare_lanes(
                &scored(&runs[to - 1]),
                &scored(&runs[to]),
                &runs[to].lock.families,
                options.compare,
            ),
        })
        .collect();
    let mut regressions = Vec::new();
    for step in &steps {
        for lane in &step.lanes {
            for cell in &lane.cells {
                for c in cell
                    .changes
                    .iter()
                    .filter(|c| is_regression(c, &options.rule))
                {
                    regressions.push(Regression {
                        from: step.from,
                        to: step.to,
                        lane: lane.display_name.clone(),
                        family: cell.family.clone(),
                        change: c.clone(),
                    });
                }
            }
        }
    }
    Ok(History {
        workflow: workflow.to_string(),
        lanes: trends(&runs),
        costs: runs.last().map(cost::of_run).unwrap_or_default(),
        runs: rows,
        families,
        steps,
        regressions,
        options,
    })
}

fn scored(run: &StoredRun) -> ScoredView<'_> {
    ScoredView {
        observations: &run.observations,
        lanes: &run.lanes,
        metrics: &run.metrics,
    }
}

fn trends(runs: &[StoredRun]) -> Vec<LaneTrend> {
    let mut lanes: Vec<LaneTrend> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        for p in &run.metrics.providers {
            let key = format!("{}@{}", p.provider, p.region);
            let point = LanePoint {
                run: i,
                cells: std::iter::once(p.pooled.clone())
                    .chain(p.families.iter().cloned())
                    .collect(),
            };
            match lanes.iter_mut().find(|l| l.key == key) {
                Some(lane) => {
                    lane.display_name.clone_from(&p.display_name);
                    lane.points.push(point);
                }
                None => lanes.push(LaneTrend {
                    key,
                    display_name: p.display_name.clone(),
                    points: vec![point],
                }),
            }
        }
    }
    lanes.sort_by(|a, b| {
        (a.display_name.to_lowercase(), &a.key).cmp(&(b.display_name.to_lowercase(), &b.key))
    });
    lanes
}

#[cfg(test)]
mod tests;
