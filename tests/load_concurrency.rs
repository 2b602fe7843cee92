//! A thousand streams at once through the real load runner: a closed loop of 1,000 users on one
//! lane, against the embedded simulator streaming every request on a fixed 4-second schedule,
//! through the coordinator, the in-process probe over gRPC and the writer. Before the in-flight
//! ceilings were raised the probe refused the session (256 per lane at most).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use openbench_common::record::Outcome;
use std::time::Duration;

/// One lane of 1,000 users for half a second of load: every user sends its first request at
/// the start, and none sends a second (its first ends 4 s later, after the load ended).
const SPEC: &str =
    "benchmark: {slug: load-thousand, workflow: load, schedule_version: load-thousand-v1}
request: {temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 60000,
  harness_grace_ms: 60000}
providers:
  - key: p
    endpoint: sim://plain
    model: m
    auth: {scheme: none}
    max_tokens_field: max_tokens
    extra_headers: {x-sim-schedule: '5,1000,1000,1000,1000'}
dataset: {source: ., manifest: none}
simulator: {time_scale: 1.0, seed: 7}
run_root: runs
load:
  seed: 1
  phases: {warmup_s: 0, measure: {duration_s: 0.5}, cooldown_s: 0}
  steps: [{model: closed, concurrency: 1000}]
  workload:
    kind: synthetic
    input_tokens: {dist: fixed, tokens: 20}
    output_tokens: {dist: fixed, tokens: 32}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_loop_of_1000_users_holds_1000_streams_in_flight_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("spec.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    let workflow = std::sync::Arc::new(openbench_load::run::LoadWorkflow);
    let inputs =
        openbench_coordinator::prepare_inputs(&spec, workflow, "test-code-digest").unwrap();
    let run = openbench_coordinator::RunDir::create(&inputs, Some("T-1000"), "test").unwrap();
    let mut options = coordinator_support::options(&inputs);
    // The in-process probe's health pings share two starved cores with 1,000 streams in a debug
    // build: a machine busy with other work must not declare the local region down.
    options.faults.link.ping_timeout = Duration::from_secs(60);
    let outcome = openbench_coordinator::run_full(&inputs, &run, "T-1000", &options)
        .await
        .unwrap();
    assert_eq!(outcome.status, openbench_coordinator::RunStatus::Complete);
    assert_eq!(outcome.sitting.harness_errors, 0);
    let dir = run.dir.clone();
    drop(run);
    let results = openbench_load::run::load_results(&dir).unwrap();
    let samples = &results.steps[0].samples;
    assert_eq!(samples.len(), 1000);
    assert!(samples.iter().all(|s| s.outcome == Outcome::Completed));
    // Every user's one request: slots 0..1000, sequence 0 each.
    let records = coordinator_support::lines(&dir.join("raw/results.jsonl"));
    let mut slots: Vec<u64> = records
        .iter()
        .map(|r| {
            assert_eq!(r["sequence"], 0);
            r["slot"].as_u64().unwrap()
        })
        .collect();
    slots.sort_unstable();
    assert_eq!(slots, (0..1000).collect::<Vec<u64>>());
    // All 1,000 in flight at once, by the records: the last request was sent before the first
    // one ended (each spans its send to its end, on the one clock of the phase).
    let last_sent = samples.iter().map(|s| s.sent_ms).fold(f64::MIN, f64::max);
    let first_end = samples
        .iter()
        .map(|s| s.sent_ms + s.finished_ms)
        .fold(f64::MAX, f64::min);
    assert!(
        last_sent < first_end,
        "last sent at {last_sent} ms, first ended at {first_end} ms"
    );
    // Every stream was read whole: role, 4 answer pieces, finish, [DONE].
    assert!(
        records.iter().all(|r| r["event_count"] == 7),
        "{}",
        records[0]
    );
}
