//! `history` of load runs: per lane (and provider over its regions) the saturation point of each
//! kind of load and, step by step, the load, achieved rate, throughput, latency and goodput of
//! every complete run — all read back from the figures the load report computed at `publish` —
//! and the regressions among them under the spec's `results.regression` rule:
//!
//! - a **saturation point** (the most users, or the highest target rate, that a lane sustained)
//!   that falls by at least `min_relative_change_pct` of the earlier one, or that is lost (no
//!   step of that kind sustained any more);
//! - **goodput** at a step run in both (matched by its label, `closed c=4`, `constant 8/s`):
//!   its fraction down by at least `min_rate_change_points` percentage points, or goodput per
//!   second down by at least `min_relative_change_pct` of the earlier value.
//!
//! A step's figures are one measurement each (there are no rounds to resample), so a change has
//! no interval: the rule's size alone decides. The pooled rows are left out (they repeat their
//! lanes'). Unfinished runs are listed, not compared, as for paired runs.

use super::{is_compared, pairs};
use crate::StoreError;
use crate::backend::{Store, Value};
use crate::load::{self, RunRow, at};
use crate::schema::{self, LOAD_SATURATION, LOAD_STEPS};
use openbench_common::spec::RegressionRule;

/// One row (lane or provider) of one step of a stored load run.
#[derive(Debug, Clone, PartialEq)]
pub struct StepPoint {
    /// Index into [`LoadHistory::runs`].
    pub run: usize,
    /// Step index in its run.
    pub step: i64,
    /// Step label.
    pub label: String,
    /// Lane label or provider key.
    pub row: String,
    /// Users or target rate per second.
    pub load: f64,
    /// Achieved rate per second.
    pub achieved_per_s: f64,
    /// Completions in the window ÷ window.
    pub request_throughput_per_s: Option<f64>,
    /// Output tokens per second.
    pub output_tokens_per_s: Option<f64>,
    /// TTFA p50 and p99 (ms).
    pub ttfa_ms: (Option<f64>, Option<f64>),
    /// ITL p99 (ms).
    pub itl_p99_ms: Option<f64>,
    /// E2E p99 (ms).
    pub e2e_p99_ms: Option<f64>,
    /// Good ÷ measured.
    pub goodput_fraction: f64,
    /// Good per second.
    pub goodput_per_s: Option<f64>,
    /// Measured failures, every class.
    pub failures: i64,
    /// Sustained.
    pub sustained: bool,
}

/// One saturation point of a stored load run.
#[derive(Debug, Clone, PartialEq)]
pub struct SaturationPoint {
    /// Index into [`LoadHistory::runs`].
    pub run: usize,
    /// Lane label or provider key.
    pub row: String,
    /// `closed` or `open`.
    pub kind: String,
    /// The step's label, `None` when no step of the kind was sustained.
    pub label: Option<String>,
    /// Its load.
    pub load: Option<f64>,
    /// Achieved rate there.
    pub achieved_per_s: Option<f64>,
}

/// A figure that fell beyond the rule from one compared run to another.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadRegression {
    /// Earlier run index.
    pub from: usize,
    /// Later run index.
    pub to: usize,
    /// Lane label or provider key.
    pub row: String,
    /// What fell: `saturation point (closed)`, `goodput at closed c=4`, …
    pub figure: String,
    /// Earlier value.
    pub a: Option<f64>,
    /// Later value (`None`: no sustained step any more).
    pub b: Option<f64>,
    /// `users`, `/s` or `%`.
    pub unit: &'static str,
    /// Either run's stored validity section failed (docs/validity.md): the regression may be
    /// the machine's, and is labelled so.
    pub validity_failed: bool,
}

/// Everything `history` found for a load workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadHistory {
    /// The workflow.
    pub workflow: String,
    /// Stored runs, oldest first, unfinished ones included.
    pub runs: Vec<RunRow>,
    /// The compared pairs (run indices).
    pub compared: Vec<(usize, usize)>,
    /// Step rows of the complete runs, by row, step label and run.
    pub steps: Vec<StepPoint>,
    /// Saturation points of the complete runs, by row, kind and run.
    pub saturation: Vec<SaturationPoint>,
    /// The regressions, in pair, row and figure order.
    pub regressions: Vec<LoadRegression>,
    /// The rule.
    pub rule: RegressionRule,
    /// The baseline asked for.
    pub baseline: Option<String>,
}

/// True when some stored run of `workflow` has load figures: its history is a load history.
pub fn is_load_workflow(store: &mut Store, workflow: &str) -> Result<bool, StoreError> {
    let rows = store.query(
        "SELECT count(*) FROM load_steps s JOIN runs r ON r.run_id = s.run_id \
         WHERE r.workflow = $1",
        &[Value::from(workflow)],
    )?;
    Ok(rows.first().and_then(|r| r.first()).and_then(Value::int) > Some(0))
}

/// Reads the store and computes the history of `workflow`'s load runs.
pub fn compute(
    store: &mut Store,
    workflow: &str,
    rule: RegressionRule,
    baseline: Option<String>,
) -> Result<LoadHistory, StoreError> {
    let runs: Vec<RunRow> = load::runs(store)?
        .into_iter()
        .filter(|r| r.workflow == workflow)
        .collect();
    let compared: Vec<usize> = (0..runs.len()).filter(|&i| is_compared(&runs[i])).collect();
    let pairs: Vec<(usize, usize)> = pairs(&runs, &compared, baseline.as_deref())?
        .into_iter()
        .map(|(a, b)| (compared[a], compared[b]))
        .collect();
    let mut steps = Vec::new();
    let mut saturation = Vec::new();
    for &i in &compared {
        steps.extend(step_points(store, &runs[i].run_id, i)?);
        saturation.extend(saturation_points(store, &runs[i].run_id, i)?);
    }
    steps.sort_by(|a, b| (&a.row, a.step, &a.label, a.run).cmp(&(&b.row, b.step, &b.label, b.run)));
    saturation.sort_by(|a, b| (&a.row, &a.kind, a.run).cmp(&(&b.row, &b.kind, b.run)));
    let mut regressions = Vec::new();
    for &(from, to) in &pairs {
        regressions.extend(saturation_falls(&saturation, from, to, &rule));
        regressions.extend(goodput_falls(&steps, from, to, &rule));
    }
    let mut failed = std::collections::BTreeMap::new();
    for &(from, to) in &pairs {
        for run in [from, to] {
            if let std::collections::btree_map::Entry::Vacant(slot) = failed.entry(run) {
                let section = load::stored_validity(store, &runs[run].run_id)?;
                slot.insert(section.is_some_and(|v| !v.passed()));
            }
        }
    }
    for r in &mut regressions {
        r.validity_failed = failed.get(&r.from) == Some(&true) || failed.get(&r.to) == Some(&true);
    }
    Ok(LoadHistory {
        workflow: workflow.to_string(),
        runs,
        compared: pairs,
        steps,
        saturation,
        regressions,
        rule,
        baseline,
    })
}

fn step_points(store: &mut Store, run_id: &str, run: usize) -> Result<Vec<StepPoint>, StoreError> {
    let rows = store.query(&schema::select(&LOAD_STEPS, true), &[Value::from(run_id)])?;
    Ok(rows
        .iter()
        .filter(|r| cell(r, &LOAD_STEPS, "row_kind").text() != Some("pooled"))
        .map(|r| {
            let get = |name: &str| cell(r, &LOAD_STEPS, name);
            let real = |name: &str| get(name).real();
            let failures = [
                "failed_rate_limited",
                "failed_http_4xx",
                "failed_http_5xx",
                "failed_timeout",
                "failed_transport_error",
                "failed_stream_limit_exceeded",
                "failed_stream_error",
            ]
            .iter()
            .filter_map(|c| get(c).int())
            .sum();
            StepPoint {
                run,
                step: get("step").int().unwrap_or(0),
                label: get("label").text().unwrap_or_default().to_string(),
                row: get("row_name").text().unwrap_or_default().to_string(),
                load: real("load").unwrap_or(0.0),
                achieved_per_s: real("achieved_per_s").unwrap_or(0.0),
                request_throughput_per_s: real("request_throughput_per_s"),
                output_tokens_per_s: real("output_tokens_per_s"),
                ttfa_ms: (real("ttfa_p50_ms"), real("ttfa_p99_ms")),
                itl_p99_ms: real("itl_p99_ms"),
                e2e_p99_ms: real("e2e_p99_ms"),
                goodput_fraction: real("goodput_fraction").unwrap_or(0.0),
                goodput_per_s: real("goodput_per_s"),
                failures,
                sustained: get("sustained").int() == Some(1),
            }
        })
        .collect())
}

fn saturation_points(
    store: &mut Store,
    run_id: &str,
    run: usize,
) -> Result<Vec<SaturationPoint>, StoreError> {
    let rows = store.query(
        &schema::select(&LOAD_SATURATION, true),
        &[Value::from(run_id)],
    )?;
    Ok(rows
        .iter()
        .map(|r| {
            let get = |name: &str| cell(r, &LOAD_SATURATION, name);
            SaturationPoint {
                run,
                row: get("row_name").text().unwrap_or_default().to_string(),
                kind: get("kind").text().unwrap_or_default().to_string(),
                label: get("label").text().map(str::to_string),
                load: get("load").real(),
                achieved_per_s: get("achieved_per_s").real(),
            }
        })
        .collect())
}

fn cell<'a>(row: &'a [Value], table: &schema::Table, name: &str) -> &'a Value {
    row.get(at(table, name)).unwrap_or(&Value::Null)
}

/// True when `b` is below `a` by at least `pct` percent of `a` (a lost value is a fall to 0).
fn fell_by_pct(a: Option<f64>, b: Option<f64>, pct: f64) -> bool {
    match a {
        Some(a) if a > 0.0 => (a - b.unwrap_or(0.0)) / a * 100.0 >= pct,
        _ => false,
    }
}

fn saturation_falls(
    points: &[SaturationPoint],
    from: usize,
    to: usize,
    rule: &RegressionRule,
) -> Vec<LoadRegression> {
    points
        .iter()
        .filter(|p| p.run == from)
        .filter_map(|a| {
            let b = points
                .iter()
                .find(|b| b.run == to && b.row == a.row && b.kind == a.kind)?;
            fell_by_pct(a.load, b.load, rule.min_relative_change_pct).then(|| LoadRegression {
                from,
                to,
                row: a.row.clone(),
                figure: format!("saturation point ({})", a.kind),
                a: a.load,
                b: b.load,
                unit: if a.kind == "closed" { "users" } else { "/s" },
                validity_failed: false,
            })
        })
        .collect()
}

fn goodput_falls(
    steps: &[StepPoint],
    from: usize,
    to: usize,
    rule: &RegressionRule,
) -> Vec<LoadRegression> {
    let mut out = Vec::new();
    for a in steps.iter().filter(|p| p.run == from) {
        let Some(b) = steps
            .iter()
            .find(|b| b.run == to && b.row == a.row && b.label == a.label)
        else {
            continue;
        };
        let regression =
            |figure: String, was: Option<f64>, now: Option<f64>, unit| LoadRegression {
                from,
                to,
                row: a.row.clone(),
                figure,
                a: was,
                b: now,
                unit,
                validity_failed: false,
            };
        if (a.goodput_fraction - b.goodput_fraction) * 100.0 >= rule.min_rate_change_points {
            out.push(regression(
                format!("goodput at {}", a.label),
                Some(a.goodput_fraction * 100.0),
                Some(b.goodput_fraction * 100.0),
                "%",
            ));
        }
        if fell_by_pct(
            a.goodput_per_s,
            b.goodput_per_s,
            rule.min_relative_change_pct,
        ) {
            out.push(regression(
                format!("goodput/s at {}", a.label),
                a.goodput_per_s,
                b.goodput_per_s,
                "/s",
            ));
        }
    }
    out
}
