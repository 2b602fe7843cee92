//! `history`: every stored run of a workflow, oldest first — per lane (provider × region) and
//! family the trend of the report's figures over the complete runs, the change from each
//! complete run to the next (or from a chosen baseline run to the latest) with the paired
//! bootstrap interval `compare` computes, the regressions among those changes, and cost and token
//! reconciliation of the latest complete run. Unfinished runs (failed, interrupted, incomplete)
//! are listed but neither trended nor compared: their missing requests would read as changes.
//!
//! A **regression** is a change from one run to the next whose 95% interval excludes zero on
//! the worse side and whose size reaches the spec's rule (`results.regression`): a relative
//! change of at least `min_relative_change_pct` of the earlier value for latencies and tokens/s,
//! at least `min_rate_change_points` percentage points for task success and failure rate.
//!
//! Load runs have their own history ([`load_history`]): saturation points and goodput per step.

pub mod load_history;
pub mod load_render;
pub mod render;

use crate::StoreError;
use crate::backend::Store;
use crate::cost::{self, CostRow};
use crate::load::{self, RunRow, StoredRun};
use openbench_common::rundir::RunStatus;
use openbench_common::spec::RegressionRule;
use openbench_task_metrics::compare::{
    self, Change, CompareOptions, LaneComparison, ScoredView, Unit,
};
use openbench_task_metrics::metrics::Summary;

/// What `history` was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryOptions {
    /// The regression rule.
    pub rule: RegressionRule,
    /// Bootstrap settings (as `compare`'s).
    pub compare: CompareOptions,
    /// Compare the latest complete run with this run (complete, stored) instead of each complete
    /// run with the previous one.
    pub baseline: Option<String>,
    /// Only the runs of this model label (one benchmark, as the site shows it); `None`: every
    /// run of the workflow, whatever its model.
    pub model: Option<String>,
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

/// The changes from one compared run to another (the next complete run, or the latest from the
/// baseline).
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
    /// Stored runs of the workflow, oldest first, unfinished ones included (listed, not
    /// compared).
    pub runs: Vec<RunRow>,
    /// Families of the latest run, in round order.
    pub families: Vec<String>,
    /// Every lane of the complete runs, by display name.
    pub lanes: Vec<LaneTrend>,
    /// Each complete run against the previous complete run, or only the latest complete run
    /// against the baseline.
    pub steps: Vec<Step>,
    /// The regressions, in step, lane and cell order.
    pub regressions: Vec<Regression>,
    /// Cost and tokens of the latest complete run, per lane.
    pub costs: Vec<CostRow>,
    /// What was asked.
    pub options: HistoryOptions,
}

/// True when `c` is a regression under `rule`.
pub fn is_regression(c: &Change, rule: &RegressionRule) -> bool {
    if !c.is_difference() || c.is_better() {
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

/// True when a stored run counts in trends and comparisons: only a complete run has every
/// planned request; a failed, interrupted or incomplete one is listed, never measured.
pub fn is_compared(row: &RunRow) -> bool {
    row.status == RunStatus::Complete.as_str()
}

/// The pairs of positions in `compared` (the complete runs, oldest first) to compare: each with
/// the next, or the baseline with the latest.
fn pairs(
    rows: &[RunRow],
    compared: &[usize],
    baseline: Option<&str>,
) -> Result<Vec<(usize, usize)>, StoreError> {
    let Some(baseline) = baseline else {
        return Ok((1..compared.len()).map(|b| (b - 1, b)).collect());
    };
    let refuse = |detail: String| StoreError::Baseline {
        run_id: baseline.to_string(),
        detail,
    };
    let Some(at) = rows.iter().position(|r| r.run_id == baseline) else {
        return Err(refuse("no stored run of this workflow has that id".into()));
    };
    let Some(from) = compared.iter().position(|&i| i == at) else {
        return Err(refuse(format!(
            "the run is stored as {}: only a complete run can be a baseline",
            rows[at].status
        )));
    };
    let latest = compared.len() - 1;
    if from == latest {
        return Err(refuse(
            "it is the latest complete run: there is nothing newer to compare with it".into(),
        ));
    }
    Ok(vec![(from, latest)])
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
        .filter(|r| options.model.as_ref().is_none_or(|m| &r.model_label == m))
        .collect();
    let compared: Vec<usize> = (0..rows.len()).filter(|&i| is_compared(&rows[i])).collect();
    let pairs = pairs(&rows, &compared, options.baseline.as_deref())?;
    let mut runs: Vec<StoredRun> = Vec::with_capacity(compared.len());
    for &i in &compared {
        runs.push(load::run(store, &rows[i])?);
    }
    let families = runs
        .last()
        .map(|r| r.lock.families.clone())
        .unwrap_or_default();
    let steps: Vec<Step> = pairs
        .into_iter()
        .map(|(a, b)| Step {
            from: compared[a],
            to: compared[b],
            lanes: compare::compare_lanes(
                &scored(&runs[a]),
                &scored(&runs[b]),
                &runs[b].lock.families,
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
        lanes: trends(&runs, &compared),
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

/// The lanes of `runs` (the complete runs; `index[k]` is run k's position among all stored runs).
fn trends(runs: &[StoredRun], index: &[usize]) -> Vec<LaneTrend> {
    let mut lanes: Vec<LaneTrend> = Vec::new();
    for (&i, run) in index.iter().zip(runs) {
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
