//! Hot paths of `report`: record serialisation (write and read one `results.jsonl` line),
//! exact scoring of an answer, nearest-rank percentiles and the paired comparisons. Run with
//! `cargo bench -p openbench-micro-single-task --bench analysis`; figures in
//! `docs/performance.md`.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_micro_single_task::metrics::observe::Observation;
use openbench_micro_single_task::metrics::summary::sorted_percentile;
use openbench_micro_single_task::paired::{self, PairedLane};
use openbench_micro_single_task::scoring::{EvalClass, Family, GoldRef, score_answer};
use std::hint::black_box;

fn record() -> TerminalRecord {
    let mut rec = TerminalRecord::new("2026-01-01T00:00:00Z".into(), Outcome::Completed);
    rec.request_id = "req-p3-1234".into();
    rec.round_index = 1234;
    rec.task_family = "ticket-triage".into();
    rec.item_id = "tt-17".into();
    rec.provider = "p3".into();
    rec.lane = "p3".into();
    rec.region = "local".into();
    rec.requested_model = "m".into();
    rec.response_model = Some("m".into());
    rec.ttfa_ms = Some(212.5);
    rec.ttfo_ms = Some(150.25);
    rec.e2e_ms = Some(640.125);
    rec.output_tokens_per_second = Some(57.5);
    rec.answer_text = "{\"category\":\"bug\",\"priority\":\"p2\"}".into();
    rec.reasoning_text = "The user reports a crash on save, so this is a bug.".into();
    rec
}

fn serialisation(c: &mut Criterion) {
    let rec = record();
    let line = serde_json::to_vec(&rec).unwrap_or_default();
    let mut group = c.benchmark_group("record");
    group.throughput(Throughput::Bytes(line.len() as u64));
    group.bench_function("serialise one terminal record", |b| {
        b.iter(|| black_box(serde_json::to_vec(black_box(&rec))))
    });
    group.bench_function("parse one terminal record", |b| {
        b.iter(|| black_box(serde_json::from_slice::<TerminalRecord>(black_box(&line))))
    });
    group.finish();
}

fn scoring(c: &mut Criterion) {
    let cases = [
        (
            "meeting notes",
            GoldRef::MeetingNotes {
                value: "Thursday 14:00".into(),
                aliases: vec!["thursday at 2pm".into()],
            },
            "{\"answer\":\"thursday  14:00\"}",
        ),
        (
            "ticket triage",
            GoldRef::TicketTriage {
                category: "bug".into(),
                priority: "p1".into(),
            },
            "{\"category\":\"bug\",\"priority\":\"p2\"}",
        ),
    ];
    let mut group = c.benchmark_group("score");
    for (name, gold, answer) in &cases {
        group.throughput(Throughput::Bytes(answer.len() as u64));
        group.bench_function(*name, |b| {
            b.iter(|| black_box(score_answer(black_box(gold), black_box(answer))))
        });
    }
    group.finish();
}

fn percentiles(c: &mut Criterion) {
    // 10,000 latencies in a scrambled order (a multiplicative permutation of 0..10,000).
    let values: Vec<f64> = (0..10_000u64)
        .map(|i| 200.0 + ((i * 7919) % 10_000) as f64 / 10.0)
        .collect();
    let mut group = c.benchmark_group("percentiles");
    group.throughput(Throughput::Elements(values.len() as u64));
    group.bench_function("sort 10k and read p50, p95, p99", |b| {
        b.iter_batched(
            || values.clone(),
            |mut v| {
                v.sort_by(f64::total_cmp);
                black_box([0.50, 0.95, 0.99].map(|p| sorted_percentile(&v, p)))
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn observation(lane: u32, round: u64, e2e: f64) -> Observation {
    Observation {
        request_id: String::new(),
        round_index: round,
        item_id: String::new(),
        lane,
        family: Family::TicketTriage,
        outcome: Outcome::Completed,
        class: EvalClass::ValidResult,
        error_type: None,
        schema_valid: true,
        field_bits: 0b11,
        ttfo_ms: Some(e2e),
        ttfa_ms: Some(e2e),
        e2e_ms: Some(e2e),
        tokens_per_second: None,
        reasoning_tokens_before_answer: None,
        reasoning_emitted: false,
        truncated_by_length: false,
        usage: None,
        model_mismatch: None,
        completed: true,
        failure: None,
        out_of_round: false,
    }
}

fn paired_comparisons(c: &mut Criterion) {
    let (lanes, rounds) = (50u32, 100u64);
    let observations: Vec<Observation> = (0..rounds)
        .flat_map(|r| {
            (0..lanes).map(move |l| {
                observation(
                    l,
                    r,
                    400.0 + ((r * 7919 + u64::from(l) * 104_729) % 1000) as f64,
                )
            })
        })
        .collect();
    let compared: Vec<PairedLane> = (0..lanes)
        .map(|i| PairedLane {
            index: i,
            lane: format!("p{i}"),
            display_name: format!("P{i}"),
        })
        .collect();
    let mut group = c.benchmark_group("paired");
    group.throughput(Throughput::Elements(observations.len() as u64));
    group.bench_function("50 lanes × 100 rounds", |b| {
        b.iter(|| {
            black_box(paired::compute(
                &observations,
                &compared,
                Vec::new(),
                rounds,
            ))
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    serialisation,
    scoring,
    percentiles,
    paired_comparisons
);
criterion_main!(benches);
