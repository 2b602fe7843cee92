#![allow(clippy::unwrap_used, clippy::expect_used)]
//! How long `report` takes on a synthetic run: `cargo test --release -p
//! openbench-micro-single-task --test report_scale -- --ignored --nocapture`, with
//! `D2_BENCH_RECORDS=1000000` for the million-record figure (default 6,000).

use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir::{
    self as layout, Lane, LockedProvider, Plan, PlanKind, PlannedLane, PlannedRound, RunLock,
};
use openbench_micro_single_task::report::{self, GoldTable};
use openbench_micro_single_task::scoring::GoldRef;
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::time::Instant;

const FAMILIES: [&str; 3] = [
    "meeting-notes-lookup",
    "ticket-triage",
    "contract-terms-extraction",
];

#[test]
#[ignore = "timing figure; run explicitly in release"]
fn report_timing_on_a_synthetic_run() {
    let total: u64 = std::env::var("D2_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6000);
    let providers: Vec<String> = (0..10).map(|i| format!("p{i}")).collect();
    let rounds = total / providers.len() as u64;
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    std::fs::create_dir_all(run.join("raw")).unwrap();
    std::fs::create_dir_all(run.join("artifacts")).unwrap();
    let lock = RunLock {
        lock_version: 1,
        run_id: "run-scale".into(),
        workflow: "micro-single-task".into(),
        benchmark_slug: "inference-micro-single-task".into(),
        schedule_version: "v1".into(),
        model_label: "Scale".into(),
        families: FAMILIES.iter().map(|f| f.to_string()).collect(),
        spec_path: "spec.yaml".into(),
        spec_sha256: String::new(),
        dataset_dir: String::new(),
        dataset_manifest: String::new(),
        dataset_release_hash: String::new(),
        adapters_sha256: String::new(),
        tokenizer: "o200k_base".into(),
        tokenizer_ranks_sha256: String::new(),
        code_sha256: String::new(),
        program_version: "0".into(),
        providers: providers
            .iter()
            .map(|p| LockedProvider {
                key: p.clone(),
                display_name: p.to_uppercase(),
                model: "m".into(),
                input_price_per_mtok: Some(0.5),
                output_price_per_mtok: Some(1.5),
            })
            .collect(),
        regions: vec!["local".into()],
        simulator_time_scale: None,
        timeout_ms: 20_000,
        approval_id: None,
        created_at: String::new(),
    };
    std::fs::write(
        run.join(layout::RUN_LOCK),
        serde_json::to_vec(&lock).unwrap(),
    )
    .unwrap();
    let mut gold = HashMap::new();
    for i in 0..200 {
        gold.insert(
            format!("mn-{i}"),
            GoldRef::MeetingNotes {
                value: format!("v{i}"),
                aliases: vec![],
            },
        );
        gold.insert(
            format!("tt-{i}"),
            GoldRef::TicketTriage {
                category: "bug".into(),
                priority: "p1".into(),
            },
        );
    }
    let mut results =
        BufWriter::new(std::fs::File::create(run.join(layout::FULL_RESULTS)).unwrap());
    let mut plan = Plan {
        plan_version: 1,
        kind: PlanKind::Full,
        attempt: 0,
        benchmark_slug: "scale".into(),
        schedule_version: "v1".into(),
        dataset_release_hash: "00".into(),
        families: FAMILIES[..2].iter().map(|f| f.to_string()).collect(),
        lanes: providers
            .iter()
            .map(|p| Lane {
                label: p.clone(),
                provider: p.clone(),
                region: "local".into(),
            })
            .collect(),
        items_per_family: 200,
        rounds: Vec::new(),
    };
    for r in 0..rounds {
        // Only two families here: the contract gold is not needed to time the pipeline.
        let (family, item, answer) = if r % 2 == 0 {
            (
                FAMILIES[0],
                format!("mn-{}", r % 200),
                format!("{{\"answer\":\"v{}\"}}", r % 200),
            )
        } else {
            (
                FAMILIES[1],
                format!("tt-{}", r % 200),
                "{\"category\":\"bug\",\"priority\":\"p2\"}".to_string(),
            )
        };
        let mut round = PlannedRound {
            round_index: r,
            round_id: format!("round-{r}"),
            task_family: family.into(),
            item_id: item.clone(),
            item_hash: "00".into(),
            requests: Vec::new(),
        };
        for (i, p) in providers.iter().enumerate() {
            let id = format!("req-{p}-{r}");
            round.requests.push(PlannedLane {
                lane: p.clone(),
                provider: p.clone(),
                region: "local".into(),
                request_id: id.clone(),
            });
            let mut rec = TerminalRecord::new("2026-01-01T00:00:00Z".into(), Outcome::Completed);
            rec.request_id = id;
            rec.round_index = r;
            rec.task_family = family.into();
            rec.item_id = item.clone();
            rec.provider = p.clone();
            rec.lane = p.clone();
            rec.region = "local".into();
            rec.requested_model = "m".into();
            rec.response_model = Some("m".into());
            let jitter = ((r * 7919 + i as u64 * 104_729) % 1000) as f64;
            rec.ttfa_ms = Some(200.0 + jitter);
            rec.ttfo_ms = Some(150.0 + jitter);
            rec.e2e_ms = Some(400.0 + jitter + i as f64);
            rec.output_tokens_per_second = Some(50.0 + jitter / 10.0);
            rec.answer_text = answer.clone();
            rec.reasoning_text = "short reasoning".into();
            serde_json::to_writer(&mut results, &rec).unwrap();
            results.write_all(b"\n").unwrap();
        }
        plan.rounds.push(round);
    }
    layout::write_json_once(&run.join(layout::FULL_PLAN), &plan).unwrap();
    results.flush().unwrap();
    drop(results);
    let gold = GoldTable(gold);
    let start = Instant::now();
    let (table, _) = report::write_all(run, &lock, &gold).unwrap();
    let first = start.elapsed();
    let start = Instant::now();
    report::write_all(run, &lock, &gold).unwrap();
    let second = start.elapsed();
    println!("{table}");
    println!(
        "report on {} records ({rounds} rounds × {} lanes): {:.2} s, again {:.2} s",
        rounds * providers.len() as u64,
        providers.len(),
        first.as_secs_f64(),
        second.as_secs_f64()
    );
}
