//! The load workflow's count windows and resumes against the embedded simulator: a closed loop
//! that measures exactly its count, an interrupted count-window step resumed with every id once,
//! and a changed prompt file refused at resume, naming the file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod load_workflow_support;

use coordinator_support::{committed_counts, options, records, stopping_after};
use load_workflow_support::*;
use openbench_coordinator::{RunDir, RunStatus, prepare_inputs, run_full};
use openbench_load::report::StepResults;
use openbench_load::run::LoadWorkflow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A closed-loop count-window run: 2 users on each of two providers (4 slots in all, 4 users),
/// warm-up 0.5 s, 12 measured requests, `cooldown_s` of cool-down; its run directory, its one
/// step and every send (ms, ascending).
async fn count_window_run(dir: &Path, cooldown_s: &str) -> (PathBuf, StepResults, Vec<f64>) {
    let load = format!(
        "  seed: 4
  phases: {{warmup_s: 0.5, measure: {{requests: 12}}, cooldown_s: {cooldown_s}}}
  steps: [{{model: closed, concurrency: 2}}]
{WORKLOAD}
  ignore_eos: [p, q]"
    );
    let providers = format!(
        "{}{}",
        provider("p", "sim://plain?slots=2"),
        provider("q", "sim://plain?slots=2")
    );
    let spec = write_spec(dir, &providers, &load, "");
    let (run_dir, results) = run(&spec).await;
    let step = results.steps[0].clone();
    let mut sends: Vec<f64> = step.samples.iter().map(|s| s.sent_ms).collect();
    sends.sort_by(f64::total_cmp);
    (run_dir, step, sends)
}

/// A closed loop with a count window (`count_window_run`). The step's sends over both lanes
/// are counted together: the window ends at the 13th send at or after 500 ms, exactly 12
/// requests are measured (however they fall between the providers); with no cool-down that
/// closing send is the last one sent, with 0.3 s sends go on after it and none 300 ms after it;
/// a resume of the finished run sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_loop_count_window_measures_exactly_its_count_and_resumes_finished() {
    // No cool-down: the gate lets exactly 13 sends through from 500 ms on, the 13th closing.
    let tmp = tempfile::tempdir().unwrap();
    let (_, step, sends) = count_window_run(tmp.path(), "0").await;
    let after: Vec<f64> = sends.iter().copied().filter(|&s| s >= 500.0).collect();
    assert_eq!(after.len(), 13, "{sends:?}");
    assert!((step.window.end_ms() - after[12]).abs() < 1e-6);
    let (p, q) = (lane_metrics(&step, "p"), lane_metrics(&step, "q"));
    assert_eq!(
        p.measured + q.measured,
        12,
        "p {} q {}",
        p.measured,
        q.measured
    );

    let tmp = tempfile::tempdir().unwrap();
    let (dir, step, sends) = count_window_run(tmp.path(), "0.3").await;
    // The window from the records by hand: the 13th send at or after 500 ms closes it.
    let after: Vec<f64> = sends.iter().copied().filter(|&s| s >= 500.0).collect();
    assert!(after.len() >= 13, "{sends:?}");
    let closing = after[12];
    assert_eq!(step.window.start_ms(), 500.0);
    assert!(
        (step.window.end_ms() - closing).abs() < 1e-6,
        "window end {} ms, closing send {closing} ms",
        step.window.end_ms()
    );
    assert_eq!(step.window.load_end_ns, step.window.end_ns + 300_000_000);
    // Exactly 12 measured, pooled over both providers, all completed.
    let (p, q) = (lane_metrics(&step, "p"), lane_metrics(&step, "q"));
    eprintln!(
        "count window [{} ms, {closing:.1} ms): p {} q {}, {} sends in all, last {:.1} ms",
        step.window.start_ms(),
        p.measured,
        q.measured,
        sends.len(),
        sends.last().unwrap()
    );
    assert_eq!(
        p.measured + q.measured,
        12,
        "p {} q {}",
        p.measured,
        q.measured
    );
    assert_eq!(p.completed + q.completed, 12);
    // Load went on through the cool-down and stopped at its end: sends follow the closing one
    // (a 195 ms request ends well inside 300 ms), none at or after its end.
    let last = *sends.last().unwrap();
    assert!(
        last < closing + 300.0,
        "last send {last} ms, closing {closing} ms"
    );
    assert!(
        last > closing,
        "no cool-down send after {closing} ms: {sends:?}"
    );
    // Warm-up sends happened and are not measured.
    assert!(sends[0] < 500.0);

    // The step ran to its end: a resume sends nothing and leaves the records as they were.
    let spec = tmp.path().join("spec.yaml");
    assert_resume_sends_nothing(&spec, &dir).await;
}

/// A count-window step interrupted after 5 requests is run again by the resume from a new
/// start with a new count: each slot goes on at its first uncommitted sequence (ids are
/// positions, so none is sent twice), the second sitting's gate closes at its own 13th send
/// after its warm-up and stops 300 ms later, and the run completes. The report reads both
/// sittings' sends as one step (docs/load.md): still exactly 12 measured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_count_window_step_resumes_with_every_id_once() {
    let tmp = tempfile::tempdir().unwrap();
    let load = format!(
        "  seed: 4
  phases: {{warmup_s: 0.5, measure: {{requests: 12}}, cooldown_s: 0.3}}
  steps: [{{model: closed, concurrency: 2}}]
{WORKLOAD}
  ignore_eos: [p, q]"
    );
    let providers = format!(
        "{}{}",
        provider("p", "sim://plain?slots=2"),
        provider("q", "sim://plain?slots=2")
    );
    let spec = write_spec(tmp.path(), &providers, &load, "");
    let inputs = prepare_inputs(&spec, Arc::new(LoadWorkflow), "test-code-digest").unwrap();
    let dir = RunDir::create(&inputs, Some("T-1"), "test")
        .unwrap()
        .dir
        .clone();
    let sitting = |options| {
        let (inputs, dir) = (&inputs, &dir);
        async move {
            let run = RunDir::open(inputs, dir, "test").unwrap();
            let outcome = run_full(inputs, &run, "T-1", &options).await.unwrap();
            outcome.status
        }
    };
    assert_eq!(
        sitting(stopping_after(&inputs, 5)).await,
        RunStatus::Interrupted
    );
    let results = dir.join(openbench_common::rundir::FULL_RESULTS);
    let first = records(&results).len();
    assert!(first >= 5, "{first}");
    assert_eq!(sitting(options(&inputs)).await, RunStatus::Complete);

    let recs = records(&results);
    assert!(
        committed_counts(&recs).values().all(|&n| n == 1),
        "a request sent twice"
    );
    // Each slot's sequences run 0, 1, 2, … with no gap across the two sittings.
    let mut by_slot: BTreeMap<(String, u32), Vec<u64>> = BTreeMap::new();
    for r in &recs {
        by_slot
            .entry((r.lane.clone(), r.slot.unwrap()))
            .or_default()
            .push(r.sequence.unwrap());
    }
    assert_eq!(by_slot.len(), 4);
    for (slot, mut sequences) in by_slot {
        sequences.sort_unstable();
        let expected: Vec<u64> = (0..sequences.len() as u64).collect();
        assert_eq!(sequences, expected, "{slot:?}");
    }
    // The second sitting's own gate: its 13th send from 500 ms on closed the count, and it sent
    // nothing 300 ms after that.
    let mut second: Vec<f64> = recs[first..]
        .iter()
        .map(|r| r.sent_offset_ms.unwrap())
        .collect();
    second.sort_by(f64::total_cmp);
    let after: Vec<f64> = second.iter().copied().filter(|&s| s >= 500.0).collect();
    assert!(after.len() >= 13, "{second:?}");
    assert!(*second.last().unwrap() < after[12] + 300.0, "{second:?}");
    // Every record names its sitting, and the report flags the step as resumed mid-way.
    assert!(recs[..first].iter().all(|r| r.sitting == Some(1)));
    assert!(recs[first..].iter().all(|r| r.sitting == Some(2)));
    let results = openbench_load::run::load_results(&dir).unwrap();
    let step = &results.steps[0];
    assert_eq!(step.sittings, [1, 2]);
    let (p, q) = (lane_metrics(step, "p"), lane_metrics(step, "q"));
    assert_eq!(p.measured + q.measured, 12);
    openbench_load::report::write_reports(&dir, &results).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("Interrupted and resumed mid-step: step 0 (sittings 1, 2)."),
        "{md}"
    );
}

/// The prompt file of a `jsonl` workload is an input like the spec: the lock holds its sha256,
/// a resume after it changed is refused naming it (and so is a report, which rebuilds each
/// request's prompt from it), and the same bytes put back resume again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_prompt_file_refuses_the_resume_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let prompts = tmp.path().join("prompts.jsonl");
    let original = "{\"messages\": [{\"role\": \"user\", \"content\": \"one two three\"}]}\n\
                    {\"messages\": [{\"role\": \"user\", \"content\": \"four five\"}]}\n";
    std::fs::write(&prompts, original).unwrap();
    let load = "  seed: 2
  phases: {warmup_s: 0, measure: {duration_s: 0.5}, cooldown_s: 0}
  steps: [{model: constant, rate_per_s: 4}]
  workload: {kind: jsonl, path: prompts.jsonl, format: openai_messages, output_tokens: {dist: fixed, tokens: 8}}";
    let spec = write_spec(tmp.path(), &provider("p", "sim://plain"), load, "");
    let (dir, results) = run(&spec).await;
    assert_eq!(results.steps[0].samples.len(), 2);
    let lock: openbench_common::rundir::RunLock =
        openbench_common::rundir::read_json(&dir.join(openbench_common::rundir::RUN_LOCK)).unwrap();
    let expected = openbench_common::hash::sha256_hex(original);
    assert_eq!(
        lock.input_files_sha256,
        [("prompts.jsonl".to_string(), expected)].into()
    );

    // One changed byte: the resume is refused before anything runs, naming the file.
    std::fs::write(&prompts, original.replace("four", "f0ur")).unwrap();
    let inputs = prepare_inputs(&spec, Arc::new(LoadWorkflow), "test-code-digest").unwrap();
    let err = RunDir::open(&inputs, &dir, "test").unwrap_err().to_string();
    assert!(err.contains("input file prompts.jsonl changed"), "{err}");
    let err = openbench_load::run::load_results(&dir)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("prompt file") && err.contains("prompts.jsonl"),
        "{err}"
    );
    // A missing file is a change too.
    std::fs::remove_file(&prompts).unwrap();
    let err = RunDir::open(&inputs, &dir, "test").unwrap_err().to_string();
    assert!(err.contains("input file prompts.jsonl changed"), "{err}");

    // The locked bytes back: the run resumes, finished, and sends nothing.
    std::fs::write(&prompts, original).unwrap();
    let run = RunDir::open(&inputs, &dir, "test").unwrap();
    let outcome = run_full(&inputs, &run, "T-1", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    assert_eq!(outcome.sitting.records_written, 0);
}
