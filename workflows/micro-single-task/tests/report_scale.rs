#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `report` on a synthetic run ([`synthetic::write_run`]). The ignored test prints a timing
//! figure: `cargo test --release -p openbench-micro-single-task --test report_scale -- --ignored
//! --nocapture`, with `D2_BENCH_RECORDS=1000000` for the million-record figure (default 6,000)
//! and `D2_BENCH_LANES` for the lanes (default 10). `openbench-inference bench analysis` gives
//! the same figure with peak RSS.

use openbench_micro_single_task::report;
use openbench_micro_single_task::synthetic::{self, SyntheticRun};
use std::time::Instant;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn synthetic_runs_are_deterministic_and_report_every_record() {
    let spec = SyntheticRun {
        records: 70,
        lanes: 7,
        seed: 3,
    };
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let written = synthetic::write_run(one.path(), &spec).unwrap();
    synthetic::write_run(two.path(), &spec).unwrap();
    assert_eq!((written.rounds, written.records), (10, 70));
    let results = "raw/results.jsonl";
    let bytes = std::fs::read(one.path().join(results)).unwrap();
    assert_eq!(bytes, std::fs::read(two.path().join(results)).unwrap());
    assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 70);
    report::write_all(one.path(), &written.lock, &written.gold).unwrap();
    let paired: serde_json::Value = serde_json::from_slice(
        &std::fs::read(one.path().join("artifacts/paired-comparisons.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(paired["rounds_with_winner"], 10);
    assert_eq!(paired["pairs"].as_array().unwrap().len(), 7 * 6);
}

#[test]
#[ignore = "timing figure; run explicitly in release"]
fn report_timing_on_a_synthetic_run() {
    let spec = SyntheticRun {
        records: env_number("D2_BENCH_RECORDS", 6000),
        lanes: env_number("D2_BENCH_LANES", 10) as usize,
        seed: 1,
    };
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    let written = synthetic::write_run(run, &spec).unwrap();
    let start = Instant::now();
    let (table, _) = report::write_all(run, &written.lock, &written.gold).unwrap();
    let first = start.elapsed();
    let start = Instant::now();
    report::write_all(run, &written.lock, &written.gold).unwrap();
    let second = start.elapsed();
    println!("{table}");
    println!(
        "report on {} records ({} rounds × {} lanes): {:.2} s, again {:.2} s",
        written.records,
        written.rounds,
        spec.lanes,
        first.as_secs_f64(),
        second.as_secs_f64()
    );
}
