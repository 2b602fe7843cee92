//! The load run's own tables (`load_steps`, `load_saturation`, `load_requests`), written from
//! the figures the load workflow computed with its report's code: nothing is derived here.

use crate::backend::{Store, Value};
use crate::schema::{
    self, LOAD_REPEAT_INTERVALS, LOAD_REPEATS, LOAD_REQUESTS, LOAD_SATURATION, LOAD_STEPS,
};
use crate::{StoreError, labels};
use openbench_common::load_figures::{LoadFigures, LoadRequestRow, LoadStepRow};

/// Inserts the load tables' rows of run `run_id` (inside `publish`'s transaction).
pub(super) fn insert(s: &mut Store, run_id: &str, f: &LoadFigures) -> Result<(), StoreError> {
    let steps: Vec<Vec<Value>> = f.steps.iter().map(|r| step_row(run_id, r)).collect();
    s.execute_many(&schema::insert(&LOAD_STEPS), &steps)?;
    let saturation: Vec<Vec<Value>> = f
        .saturation
        .iter()
        .map(|p| {
            vec![
                Value::from(run_id),
                Value::from(p.row.as_str()),
                Value::from(p.kind.as_str()),
                Value::from(p.step),
                Value::from(p.label.clone()),
                Value::from(p.load),
                Value::from(p.achieved_per_s),
            ]
        })
        .collect();
    s.execute_many(&schema::insert(&LOAD_SATURATION), &saturation)?;
    let requests: Vec<Vec<Value>> = f.requests.iter().map(|r| request_row(run_id, r)).collect();
    s.execute_many(&schema::insert(&LOAD_REQUESTS), &requests)?;
    insert_repeats(s, run_id, f)
}

/// A repeated sweep's rows: each repeat's value, and the interval across them.
fn insert_repeats(s: &mut Store, run_id: &str, f: &LoadFigures) -> Result<(), StoreError> {
    let mut rows = super::repeats::RepeatRows::default();
    for r in &f.repeats {
        let key = [
            Value::from(run_id),
            Value::from(r.step),
            Value::from(r.row.as_str()),
            Value::from(r.figure.as_str()),
        ];
        let per_repeat = r.per_repeat.iter().enumerate().map(|(i, (phase, value))| {
            vec![
                Value::from(i as u64 + 1),
                Value::from(*phase),
                Value::from(*value),
            ]
        });
        rows.push(&key, per_repeat, r.across);
    }
    rows.insert(s, &LOAD_REPEATS, &LOAD_REPEAT_INTERVALS)
}

fn step_row(run_id: &str, r: &LoadStepRow) -> Vec<Value> {
    let f = &r.failures;
    let mut row = vec![
        Value::from(run_id),
        Value::from(r.step),
        Value::from(r.row.as_str()),
        Value::from(r.row_kind.as_str()),
        Value::from(r.label.as_str()),
        Value::from(r.model.as_str()),
        Value::from(r.load),
        Value::from(r.achieved_per_s),
        Value::from(r.measured),
        Value::from(r.completed),
        Value::from(r.request_throughput_per_s),
        Value::from(r.output_tokens_per_s),
    ];
    row.extend(
        r.ttfa_ms
            .iter()
            .chain(&r.itl_ms)
            .chain(&r.e2e_ms)
            .map(|x| Value::from(*x)),
    );
    row.extend([
        Value::from(r.tpot_p50_ms),
        Value::from(r.tokens_per_s_p50),
        Value::from(r.goodput_fraction),
        Value::from(r.goodput_per_s),
        Value::from(f.rate_limited),
        Value::from(f.http_4xx),
        Value::from(f.http_5xx),
        Value::from(f.timeout),
        Value::from(f.transport_error),
        Value::from(f.stream_limit_exceeded),
        Value::from(f.stream_error),
        Value::from(r.harness_failures),
        Value::from(r.sustained),
        Value::from(r.held_requests),
        Value::from(r.held_short),
    ]);
    row
}

fn request_row(run_id: &str, r: &LoadRequestRow) -> Vec<Value> {
    vec![
        Value::from(run_id),
        Value::from(r.request_id.as_str()),
        Value::from(r.step),
        Value::from(r.lane.as_str()),
        Value::from(r.started_at.as_str()),
        Value::from(r.scheduled_ms),
        Value::from(r.sent_ms),
        Value::from(r.ttfo_ms),
        Value::from(r.ttfa_ms),
        Value::from(r.e2e_ms),
        Value::from(labels::label(&r.outcome)),
        Value::from(r.error_type.map(|e| labels::label(&e))),
        Value::from(r.http_status.map(u64::from)),
        Value::from(r.measured),
        Value::from(r.input_tokens),
        Value::from(r.answer_tokens),
        Value::from(r.usage_prompt_tokens),
        Value::from(r.usage_completion_tokens),
        Value::from(r.correct.map(u64::from)),
        Value::from(r.held_tokens),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use openbench_common::load_figures::LoadFailures;

    /// Every row has one value per column, in the schema's order (a missing or extra value would
    /// shift every later column).
    #[test]
    fn rows_match_their_tables() {
        let step = LoadStepRow {
            step: 0,
            label: "closed c=1".into(),
            model: "closed".into(),
            row: "p".into(),
            row_kind: "lane".into(),
            load: 1.0,
            achieved_per_s: 2.0,
            measured: 3,
            completed: 4,
            request_throughput_per_s: Some(5.0),
            output_tokens_per_s: Some(6.0),
            ttfa_ms: [Some(7.0), Some(8.0), Some(9.0)],
            itl_ms: [Some(10.0), Some(11.0), Some(12.0)],
            e2e_ms: [Some(13.0), Some(14.0), Some(15.0)],
            tpot_p50_ms: Some(16.0),
            tokens_per_s_p50: Some(17.0),
            goodput_fraction: 0.5,
            goodput_per_s: Some(18.0),
            failures: LoadFailures {
                timeout: 19,
                stream_error: 20,
                ..LoadFailures::default()
            },
            harness_failures: 21,
            sustained: true,
            held_requests: None,
            held_short: None,
        };
        let row = step_row("r", &step);
        assert_eq!(row.len(), LOAD_STEPS.columns.len());
        let at = |name: &str| {
            let i = LOAD_STEPS.columns.iter().position(|c| c.name == name);
            row[i.unwrap_or(usize::MAX)].clone()
        };
        assert_eq!(at("ttfa_p99_ms"), Value::Real(9.0));
        assert_eq!(at("itl_p50_ms"), Value::Real(10.0));
        assert_eq!(at("e2e_p90_ms"), Value::Real(14.0));
        assert_eq!(at("goodput_per_s"), Value::Real(18.0));
        assert_eq!(at("failed_timeout"), Value::Int(19));
        assert_eq!(at("failed_stream_error"), Value::Int(20));
        assert_eq!(at("harness_failures"), Value::Int(21));
        assert_eq!(at("sustained"), Value::Int(1));
        assert_eq!(at("held_short"), Value::Null);
    }
}
