//! Arrival shapes end to end against the embedded simulator on loopback: trace replay (an Azure
//! CSV and a Mooncake JSONL, time-scaled) whose releases, item keys and lengths are the file's,
//! and an open loop capped at a concurrency (`load.max_in_flight`) above capacity, whose
//! releases wait for a free place and whose `…_sched` latencies include the wait.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod load_workflow_support;

use load_workflow_support::*;
use openbench_common::record::TerminalRecord;
use openbench_common::rundir::{FULL_RESULTS, RunLock, counting_records, layout};
use openbench_load::metrics::{RequestSample, RequestTimings};
use openbench_load::spec::TraceFormat;
use openbench_load::trace::{TraceEntry, read_trace};
use std::path::Path;

fn sample(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/traces")
        .join(name)
}

/// The records of phase `phase`, in release order (an open loop on one lane: by sequence).
fn records_of(dir: &Path, phase: u32) -> Vec<TerminalRecord> {
    let mut mine: Vec<TerminalRecord> = counting_records(&dir.join(FULL_RESULTS))
        .unwrap()
        .into_values()
        .filter(|r| r.phase == Some(phase))
        .collect();
    mine.sort_by_key(|r| r.sequence);
    mine
}

/// Each record k is the trace's request k: due at its recorded offset × `scale` (records keep
/// microseconds), with its line as item key; its sample in the report (found by its scheduled
/// and actual send) has the file's input length (the o200k count of the prompt rebuilt from its
/// position) and, under `ignore_eos`, the file's output length in answer events (the simulator
/// streams exactly `max_tokens` chunks; their o200k re-count can differ by one).
fn assert_replayed(
    records: &[TerminalRecord],
    samples: &[RequestSample],
    entries: &[TraceEntry],
    scale: f64,
) {
    assert_eq!(records.len(), entries.len());
    for (k, (r, e)) in records.iter().zip(entries).enumerate() {
        assert_eq!(r.sequence, Some(k as u64));
        assert_eq!(r.task_family, "trace");
        assert_eq!(r.item_id, format!("line-{}", e.line));
        let due_ms = (e.offset_ns as f64 * scale).round() / 1e6;
        let scheduled = r.scheduled_offset_ms.unwrap();
        assert!(
            (scheduled - due_ms).abs() < 1e-6,
            "line {}: {scheduled} vs {due_ms}",
            e.line
        );
        let sent = r.sent_offset_ms.unwrap();
        let mine: Vec<&RequestSample> = samples
            .iter()
            .filter(|s| s.scheduled_ms == Some(scheduled) && s.sent_ms == sent)
            .collect();
        let [sample] = mine.as_slice() else {
            panic!("line {}: {} samples sent at {sent}", e.line, mine.len());
        };
        assert_eq!(
            sample.input_tokens,
            u64::from(e.input_tokens),
            "line {}",
            e.line
        );
        assert_eq!(
            sample.answer_events_ms.len(),
            e.output_tokens as usize,
            "line {}",
            e.line
        );
    }
}

/// Both sample traces replayed at half their recorded pace, one step each: the arrival and
/// length sequences read back from the records and the report's samples equal the files', both
/// files are locked, and send lag is reported (printed, not judged).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_replay_their_arrivals_and_lengths_time_scaled() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["azure-llm-sample.csv", "mooncake-sample.jsonl"] {
        std::fs::copy(sample(name), tmp.path().join(name)).unwrap();
    }
    // Spans: 3.05 s and 3.53 s recorded, so 1.53 s and 1.77 s at ×0.5: inside the 2 s window.
    let load = format!(
        "  seed: 3
  phases: {{warmup_s: 0, measure: {{duration_s: 2}}, cooldown_s: 0}}
  steps:
    - {{model: trace, path: azure-llm-sample.csv, format: azure_csv, time_scale: 0.5}}
    - {{model: trace, path: mooncake-sample.jsonl, format: mooncake_jsonl, time_scale: 0.5}}
{WORKLOAD}
  ignore_eos: [p]"
    );
    let spec = write_spec(
        tmp.path(),
        &provider("p", "sim://plain?slots=64"),
        &load,
        "",
    );
    let (dir, results) = run(&spec).await;
    for (phase, name, format) in [
        (0, "azure-llm-sample.csv", TraceFormat::AzureCsv),
        (1, "mooncake-sample.jsonl", TraceFormat::MooncakeJsonl),
    ] {
        let entries = read_trace(&tmp.path().join(name), format, 64).unwrap();
        let step = &results.steps[phase as usize];
        assert_replayed(&records_of(&dir, phase), &step.samples, &entries, 0.5);
        let m = lane_metrics(step, "p");
        assert_eq!(m.measured, entries.len());
        let lag = m.send_lag_ms.as_ref().unwrap();
        // Printed, not judged: a bound on send lag depends on this machine's load.
        println!(
            "{name}: {} requests, send lag p50 {:.3} ms, p99 {:.3} ms",
            entries.len(),
            lag.p50.unwrap(),
            lag.p99.unwrap(),
        );
    }
    assert_eq!(assert_released_on_time(&dir), 70);
    let lock: RunLock =
        openbench_common::rundir::read_json(&layout::path(&dir, layout::RUN_LOCK)).unwrap();
    for name in ["azure-llm-sample.csv", "mooncake-sample.jsonl"] {
        let (sha, _) =
            openbench_common::input_file::sha256_regular(&sample(name), 1 << 30).unwrap();
        assert_eq!(lock.input_files_sha256.get(name), Some(&sha), "{name}");
    }
    // A trace edited after the run: the report refuses it, naming the file.
    let edited = tmp.path().join("mooncake-sample.jsonl");
    let mut text = std::fs::read_to_string(&edited).unwrap();
    text.push_str(
        "{\"timestamp\": 9999, \"input_length\": 9, \"output_length\": 1, \"hash_ids\": []}\n",
    );
    std::fs::write(&edited, text).unwrap();
    let err = openbench_load::run::load_results(&dir)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("trace file")
            && err.contains("mooncake-sample.jsonl")
            && err.contains("changed"),
        "{err}"
    );
}

/// A trace with broken lines is refused when the spec is loaded (`init` first), every line named
/// with the step's field and the file, beside the section's own problems.
#[test]
fn a_broken_trace_is_refused_at_init_naming_the_file_and_every_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("t.csv"),
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.5,10,5\n\
         2023-11-16 18:15:46.0,10,5\n2023-11-16 18:15:47.0,10,500\n",
    )
    .unwrap();
    let load = format!(
        "  seed: 1
  phases: {{warmup_s: 0, measure: {{duration_s: 1}}, cooldown_s: 0}}
  steps:
    - {{model: trace, path: t.csv, format: azure_csv}}
    - {{model: gamma, rate_per_s: 5, burstiness: -1}}
{WORKLOAD}"
    );
    let spec = write_spec(tmp.path(), &provider("p", "sim://plain"), &load, "");
    let workflow = std::sync::Arc::new(openbench_load::run::LoadWorkflow);
    let err = openbench_coordinator::prepare_inputs(&spec, workflow, "test-code-digest")
        .err()
        .unwrap()
        .to_string();
    for part in [
        "load.steps[1].burstiness: -1 is outside (0, 1000]",
        "load.steps[0].path: ",
        "t.csv: line 3: timestamp is 500.000 ms before the line above's",
        "t.csv: line 4: output length 500 is outside 1..=64",
    ] {
        assert!(err.contains(part), "{part:?} not in:\n{err}");
    }
}

/// 20/s against a server that holds each request 195 ms, capped at 2 in flight: capacity is
/// 2/0.195 = 10.3/s, so releases wait for a free place. Request k cannot be sent before
/// ⌊k/2⌋ × 195 ms (each place is held at least that long), while it is due at k × 50 ms: its
/// send lag is at least ⌊k/2⌋·195 − 50k ms, growing by ~47.5 ms a request (a floor no machine
/// load can lower). Latency from the schedule is latency from the send plus that lag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loop_capped_at_a_concurrency_delays_releases_and_times_them_from_the_schedule() {
    let tmp = tempfile::tempdir().unwrap();
    let load = format!(
        "  seed: 5
  phases: {{warmup_s: 0, measure: {{duration_s: 1}}, cooldown_s: 0}}
  steps: [{{model: constant, rate_per_s: 20}}]
  max_in_flight: 2
{WORKLOAD}
  ignore_eos: [p]"
    );
    let spec = write_spec(tmp.path(), &provider("p", "sim://plain?slots=8"), &load, "");
    let (dir, results) = run(&spec).await;
    let records = records_of(&dir, 0);
    assert_eq!(records.len(), 20);
    for (k, r) in records.iter().enumerate() {
        let floor_ms = (k / 2) as f64 * SERVICE_MS - 50.0 * k as f64;
        let lag = r.send_lag_ms.unwrap();
        assert!(
            lag >= floor_ms - 1.0,
            "request {k}: lag {lag} ms under {floor_ms}"
        );
    }
    // At most 2 in flight: no send before the earlier-but-one request ended.
    for k in 2..records.len() {
        let freed = records[k - 2].sent_offset_ms.unwrap() + records[k - 2].stream_end_ms.unwrap();
        assert!(
            records[k].sent_offset_ms.unwrap() >= freed - 1.0,
            "request {k}"
        );
    }
    let step = &results.steps[0];
    for s in &step.samples {
        let t = RequestTimings::of(s);
        let lag = s.sent_ms - s.scheduled_ms.unwrap();
        let e2e = t.e2e_ms.unwrap();
        assert_eq!(t.from_schedule(Some(e2e)), Some(e2e + lag));
    }
    let m = lane_metrics(step, "p");
    let lag = m.send_lag_ms.as_ref().unwrap();
    // With 20 values the p99 is the largest (nearest rank 20 of 20): the last request's floor is
    // 9 × 195 − 950 = 805 ms, and its latency from the schedule adds at least its 195 ms.
    assert!(lag.p99.unwrap() >= 804.0, "{lag:?}");
    let e2e_sched = m.e2e_sched_ms.as_ref().unwrap();
    assert!(e2e_sched.p99.unwrap() >= lag.p99.unwrap() + SERVICE_MS - 1.0);
    println!(
        "capped: send lag p50 {:.1} ms, p99 {:.1} ms; e2e p50 {:.1} ms, e2e_sched p50 {:.1} ms",
        lag.p50.unwrap(),
        lag.p99.unwrap(),
        m.e2e_ms.p50.unwrap(),
        e2e_sched.p50.unwrap()
    );
}
