//! A load run as the results store keeps it ([`LoadFigures`]): the run read and verified as
//! `report` reads it, every step figure and saturation point taken from the report's own
//! [`compute`](crate::report::compute::compute), and one row per request of the steps the
//! report counts.

use super::run_data::{results_of, sample_of, steps_run};
use super::{RunRead, read_run};
use crate::metrics::Distribution;
use crate::metrics::step::{FailureClass, is_measured};
use crate::report::compute::{LoadMetrics, Row, SaturationPoint, StepView, compute};
use openbench_common::load_figures::{
    LoadFailures, LoadFigures, LoadRepeatRow, LoadRequestRow, LoadSaturationRow, LoadStepRow,
};
use openbench_common::rundir as layout;
use openbench_common::workflow::WorkflowError;
use std::path::Path;

/// The store's rows of the load run in `run_dir`.
pub fn figures(run_dir: &Path) -> Result<LoadFigures, WorkflowError> {
    let run = read_run(run_dir)?;
    let mut results = results_of(
        &run.ctx,
        &run.lock.run_id,
        &run.records,
        &run.chunks,
        run.notes.clone(),
    );
    results.health = crate::report::validity::run_health(run_dir);
    let metrics = compute(&results);
    let windows: Vec<_> = results.steps.iter().map(|s| s.window).collect();
    Ok(LoadFigures {
        records_file: layout::path(run_dir, layout::FULL_RESULTS),
        lanes: run
            .ctx
            .layout
            .lanes
            .iter()
            .map(|l| (l.label.clone(), l.provider.clone(), l.region.clone()))
            .collect(),
        steps: step_rows(&metrics),
        saturation: saturation_rows(&metrics),
        requests: request_rows(&run, &windows),
        validity: metrics.validity.clone(),
        repeats: repeat_rows(&metrics),
    })
}

fn repeat_rows(m: &LoadMetrics) -> Vec<LoadRepeatRow> {
    let mut out = Vec::new();
    for step in &m.repeats {
        for row in &step.rows {
            for f in &row.figures {
                out.push(LoadRepeatRow {
                    step: step.step as u64,
                    row: row.name.clone(),
                    figure: f.figure.name().to_string(),
                    per_repeat: step
                        .phases
                        .iter()
                        .zip(&f.per_repeat)
                        .map(|(p, v)| (*p as u64, *v))
                        .collect(),
                    across: f.across.map(|i| (i.n as u64, i.mean, i.low, i.high)),
                });
            }
        }
    }
    out
}

fn step_rows(m: &LoadMetrics) -> Vec<LoadStepRow> {
    let mut rows = Vec::new();
    for step in &m.steps {
        let lanes = step.lanes.iter().map(|r| (r, "lane"));
        let providers = step.providers.iter().map(|r| (r, "provider"));
        for (row, kind) in lanes
            .chain(providers)
            .chain(std::iter::once((&step.pooled, "pooled")))
        {
            rows.push(step_row(step, row, kind));
        }
    }
    rows
}

fn three(d: &Distribution) -> [Option<f64>; 3] {
    [d.p50, d.p90, d.p99]
}

fn step_row(step: &StepView, row: &Row, kind: &str) -> LoadStepRow {
    let m = &row.metrics;
    let failed = |class: FailureClass| m.failures.get(&class).copied().unwrap_or(0) as u64;
    LoadStepRow {
        step: step.index as u64,
        // A repeat says which (`constant 8/s · repeat 2/3`), so `history` matches repeat r of
        // one run with repeat r of the next, never every repeat with the first.
        label: match step.repeat {
            Some(r) => format!("{} · repeat {}/{}", step.label, r.repeat + 1, r.of),
            None => step.label.clone(),
        },
        model: step.model.to_string(),
        row: row.name.clone(),
        row_kind: kind.to_string(),
        load: row.load,
        achieved_per_s: m.rate.achieved_per_s,
        measured: m.measured as u64,
        completed: m.completed as u64,
        request_throughput_per_s: m.request_throughput_per_s,
        output_tokens_per_s: m.output_tokens_per_s,
        ttfa_ms: three(&m.ttfa_ms),
        itl_ms: three(&m.itl_ms),
        e2e_ms: three(&m.e2e_ms),
        tpot_p50_ms: m.tpot_ms.p50,
        tokens_per_s_p50: m.tokens_per_s.p50,
        goodput_fraction: m.goodput.fraction,
        goodput_per_s: m.goodput.per_s,
        failures: LoadFailures {
            rate_limited: failed(FailureClass::RateLimited),
            http_4xx: failed(FailureClass::Http4xx),
            http_5xx: failed(FailureClass::Http5xx),
            timeout: failed(FailureClass::Timeout),
            transport_error: failed(FailureClass::TransportError),
            stream_limit_exceeded: failed(FailureClass::StreamLimitExceeded),
            stream_error: failed(FailureClass::StreamError),
        },
        harness_failures: m.harness_failures as u64,
        sustained: m.sustained,
        held_requests: m.held_length.as_ref().map(|h| h.requests as u64),
        held_short: m.held_length.as_ref().map(|h| h.short as u64),
    }
}

/// One row per lane (and provider) and kind of load that ran, point or not.
fn saturation_rows(m: &LoadMetrics) -> Vec<LoadSaturationRow> {
    let ran = |closed: bool| m.steps.iter().any(|s| (s.model == "closed") == closed);
    let mut rows = Vec::new();
    for s in &m.saturation {
        for (kind, point, closed) in [("closed", &s.closed, true), ("open", &s.open, false)] {
            if !ran(closed) {
                continue;
            }
            let p: Option<&SaturationPoint> = point.as_ref();
            rows.push(LoadSaturationRow {
                row: s.name.clone(),
                kind: kind.to_string(),
                step: p.map(|p| p.step as u64),
                label: p.map(|p| p.label.clone()),
                load: p.map(|p| p.load),
                achieved_per_s: p.map(|p| p.achieved_per_s),
            });
        }
    }
    rows
}

/// Every record of the steps the report counts, in step, lane, slot and sequence order.
fn request_rows(run: &RunRead, windows: &[crate::arrivals::Window]) -> Vec<LoadRequestRow> {
    let mut rows = Vec::new();
    for ((step, mut mine), window) in steps_run(&run.ctx, &run.records).into_iter().zip(windows) {
        mine.sort_by(|a, b| (&a.lane, a.slot, a.sequence).cmp(&(&b.lane, b.slot, b.sequence)));
        for r in mine {
            let input_tokens = run.ctx.input_tokens(&step, r);
            let correct = run.ctx.correct(r);
            let sample = sample_of(r, None, input_tokens, correct);
            let usage = r.usage.as_ref();
            rows.push(LoadRequestRow {
                request_id: r.request_id.clone(),
                step: step.index as u64,
                lane: r.lane.clone(),
                started_at: r.started_at.clone(),
                scheduled_ms: r.scheduled_offset_ms,
                sent_ms: r.sent_offset_ms,
                ttfo_ms: r.ttfo_ms,
                ttfa_ms: r.ttfa_ms,
                e2e_ms: r.e2e_ms,
                outcome: r.outcome,
                error_type: r.error_type,
                http_status: r.http_status,
                measured: is_measured(&sample, window),
                input_tokens,
                answer_tokens: r.answer_tokens,
                usage_prompt_tokens: usage.and_then(|u| u.prompt_tokens),
                usage_completion_tokens: usage.and_then(|u| u.completion_tokens),
                correct,
                held_tokens: run.ctx.held_tokens(&step, r),
            });
        }
    }
    rows
}
