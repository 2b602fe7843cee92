//! A run as the results store keeps it ([`Workflow::paired_figures`]): verified and scored by
//! the report's own code (`report::compute`: the lock's dataset, admission by the plan and the
//! lock, exact scoring), then each observation, summary figure and paired comparison as one row.
//!
//! [`Workflow::paired_figures`]: openbench_common::workflow::Workflow::paired_figures

use crate::metrics::{Observation, RunMetrics};
use crate::{gold_table, report};
use openbench_common::labels::label;
use openbench_common::paired_figures::{
    PairedFigures, PairedMetricRow, PairedPairRow, PairedRepeatRow, PairedRequestRow, PairedWinRow,
};
use openbench_common::record::TerminalRecord;
use openbench_common::rundir::{self, RunLock};
use openbench_common::workflow::WorkflowError;
use std::collections::BTreeMap;
use std::path::Path;

/// The store's rows of the run in `run_dir`, locked by `lock`.
pub fn paired_figures(run_dir: &Path, lock: &RunLock) -> Result<PairedFigures, WorkflowError> {
    let fail = |e: &dyn std::fmt::Display| WorkflowError(e.to_string().into());
    let gold = gold_table(lock)?;
    let computed = report::compute(run_dir, lock, &gold).map_err(|e| fail(&e))?;
    let names = report::reported_files(run_dir).map_err(|e| fail(&e))?;
    let records_file = rundir::path(run_dir, &names.results);
    let records = rundir::counting_records(&records_file).map_err(|e| fail(&e))?;
    let paired = &computed.paired;
    Ok(PairedFigures {
        records_file,
        lanes: computed
            .lanes
            .lanes
            .iter()
            .map(|l| (l.lane.clone(), l.provider.clone(), l.region.clone()))
            .collect(),
        rounds: computed.metrics.rounds,
        requests: computed
            .observations
            .iter()
            .map(|o| request_row(o, records.get(&o.request_id)))
            .collect(),
        metrics: metric_rows(&computed.metrics),
        rounds_with_winner: paired.rounds_with_winner,
        wins: paired
            .wins
            .iter()
            .map(|w| PairedWinRow {
                lane: w.lane.clone(),
                wins: w.wins,
                rounds_with_e2e: w.rounds_with_e2e,
                win_share: w.win_share,
            })
            .collect(),
        pairs: paired
            .pairs
            .iter()
            .map(|p| PairedPairRow {
                a: p.a.clone(),
                b: p.b.clone(),
                count: p.count,
                coverage: p.coverage,
                e2e_diff_ms: [p.e2e_diff_p50, p.e2e_diff_p95, p.e2e_diff_p99],
            })
            .collect(),
        validity: computed.metrics.validity.clone(),
        repeats: repeat_rows(&computed.metrics),
    })
}

fn request_row(o: &Observation, record: Option<&TerminalRecord>) -> PairedRequestRow {
    let failure = o.failure.as_deref();
    PairedRequestRow {
        request_id: o.request_id.clone(),
        round_index: o.round_index,
        lane_index: o.lane,
        item_id: o.item_id.clone(),
        group: o.family.as_str().to_string(),
        started_at: record.map(|r| r.started_at.clone()).unwrap_or_default(),
        probe_id: record.and_then(|r| r.probe_id.clone()),
        outcome: o.outcome,
        class: label(&o.class),
        error_type: o.error_type.map(|e| label(&e)),
        failure_error_type: failure.and_then(|f| f.error_type),
        http_status: failure.and_then(|f| f.http_status),
        correct: o.correct(),
        schema_valid: o.schema_valid,
        field_bits: o.field_bits,
        ttfo_ms: o.ttfo_ms,
        ttfa_ms: o.ttfa_ms,
        e2e_ms: o.e2e_ms,
        tokens_per_second: o.tokens_per_second,
        answer_tokens: record.and_then(|r| r.answer_tokens),
        reasoning_tokens_before_answer: o.reasoning_tokens_before_answer,
        reasoning_emitted: o.reasoning_emitted,
        truncated_by_length: o.truncated_by_length,
        completed: o.completed,
        model_mismatch: o.model_mismatch.clone(),
        out_of_round: o.out_of_round,
        usage: o.usage.as_deref().cloned(),
    }
}

/// Every numeric figure of every summary row (pooled and per family), named by its path in
/// `metrics.json` (`e2e_latency_p50`, `usage.cost_usd`, `failure_breakdown.http_429`, …).
/// A repeated run's `repeats` section as the store's rows (none for a run made once).
fn repeat_rows(metrics: &RunMetrics) -> Vec<PairedRepeatRow> {
    let Some(r) = &metrics.repeats else {
        return Vec::new();
    };
    r.lanes
        .iter()
        .flat_map(|lane| {
            lane.figures.iter().map(|f| PairedRepeatRow {
                lane: lane.lane.clone(),
                figure: f.figure.name().to_string(),
                per_repeat: f.per_repeat.clone(),
                across: f.across.map(|i| (i.n as u64, i.mean, i.low, i.high)),
            })
        })
        .collect()
}

fn metric_rows(metrics: &RunMetrics) -> Vec<PairedMetricRow> {
    let mut rows = Vec::new();
    for p in &metrics.providers {
        for summary in std::iter::once(&p.pooled).chain(&p.families) {
            let mut figures = BTreeMap::new();
            if let Ok(value) = serde_json::to_value(summary) {
                flatten("", &value, &mut figures);
            }
            for (name, value) in figures {
                rows.push(PairedMetricRow {
                    lane: p.lane.clone(),
                    group: summary.task_family.clone(),
                    name,
                    value,
                });
            }
        }
    }
    rows
}

fn flatten(prefix: &str, value: &serde_json::Value, out: &mut BTreeMap<String, Option<f64>>) {
    let name = |key: &str| {
        if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}.{key}")
        }
    };
    let serde_json::Value::Object(map) = value else {
        return;
    };
    for (key, v) in map {
        match v {
            serde_json::Value::Number(n) => {
                out.insert(name(key), n.as_f64());
            }
            serde_json::Value::Bool(b) => {
                out.insert(name(key), Some(f64::from(u8::from(*b))));
            }
            serde_json::Value::Null => {
                out.insert(name(key), None);
            }
            serde_json::Value::Object(_) => flatten(&name(key), v, out),
            _ => {}
        }
    }
}
