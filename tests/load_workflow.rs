//! The load workflow end to end against the embedded simulator's capacity model on loopback:
//! its section refused at `init` with every problem at once, a closed-loop sweep whose latency
//! rises as the capacity model predicts, an open loop above capacity (rate-limited requests with
//! their Retry-After, latency timed from the schedule), task success under load scored exactly,
//! and a two-region run that splits each step's load and pools it again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod load_workflow_support;

use load_workflow_support::*;
use openbench_common::record::Outcome;
use openbench_common::workflow::Workflow;
use openbench_coordinator::prepare_inputs;
use openbench_load::metrics::{RequestSample, RequestTimings};
use openbench_load::report::StepResults;
use openbench_load::run::LoadWorkflow;
use std::path::Path;
use std::sync::Arc;

#[test]
fn bad_input_is_refused_at_init_with_every_problem_named() {
    let tmp = tempfile::tempdir().unwrap();
    let load = "  seed: 1
  phases: {warmup_s: 1, measure: {duration_s: 2}, cooldown_s: 0}
  steps: [{model: constant, rate_per_s: 0}, {model: closed, concurrency: 0}]
  slo: {latency_ms: 5}
  workload:
    kind: synthetic
    input_tokens: {dist: fixed, tokens: 20}
    output_tokens: {dist: uniform, min: 10, max: 100}";
    let spec = write_spec(tmp.path(), &provider("p", "sim://plain"), load, "");
    let err = prepare_inputs(&spec, Arc::new(LoadWorkflow), "c")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    for expected in [
        "load.steps[0].rate_per_s",
        "load.steps[1].concurrency: 0 is outside 1..=10000",
        "latency_ms",
        "load.workload.output_tokens",
    ] {
        assert!(err.contains(expected), "{expected} not in: {err}");
    }

    // A prompt file with two broken lines among good ones, in a section with a bad rate: the
    // rate and both lines named in one refusal, each line with its number.
    std::fs::write(
        tmp.path().join("prompts.jsonl"),
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\nnot json\n\n{\"messages\": []}\n",
    )
    .unwrap();
    for (rate, other_problem) in [("2", None), ("-3", Some("load.steps[0].rate_per_s"))] {
        let load = format!(
            "  seed: 1
  phases: {{warmup_s: 1, measure: {{duration_s: 2}}, cooldown_s: 0}}
  steps: [{{model: constant, rate_per_s: {rate}}}]
  workload: {{kind: jsonl, path: prompts.jsonl, format: openai_messages}}"
        );
        let spec = write_spec(tmp.path(), &provider("p", "sim://plain"), &load, "");
        let err = prepare_inputs(&spec, Arc::new(LoadWorkflow), "c")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("prompts.jsonl"))
            .collect();
        assert_eq!(lines.len(), 2, "{err}");
        assert!(
            lines[0].contains("load.workload.path") && lines[0].contains("line 2"),
            "{err}"
        );
        assert!(lines[1].contains("line 4"), "{err}");
        if let Some(other) = other_problem {
            assert!(err.contains(other), "{other} not in: {err}");
        }
    }
}

/// The mean time a closed-loop user of `lane` waits between one request's end and its next send
/// (the client's own pace). The step's samples run by slot, then sequence, so each pair of
/// neighbours in one slot is one gap; a pair whose send comes before its predecessor's end is
/// the boundary between two slots.
fn mean_client_gap_ms(step: &StepResults, lane: &str) -> f64 {
    let mine: Vec<&RequestSample> = step.samples.iter().filter(|s| s.lane == lane).collect();
    let gaps: Vec<f64> = mine
        .windows(2)
        .map(|w| w[1].sent_ms - (w[0].sent_ms + w[0].finished_ms))
        .filter(|gap| *gap >= 0.0)
        .collect();
    assert!(!gaps.is_empty(), "no gap between two requests of {lane}");
    gaps.iter().sum::<f64>() / gaps.len() as f64
}

/// A closed loop of N users on S = 2 slots: each request waits for a slot, so by Little's law
/// its E2E is max(1, N/S)·T and the throughput min(N, S)/T (simulator/README.md, "Capacity").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_loop_sweep_rises_as_the_capacity_model_predicts() {
    let tmp = tempfile::tempdir().unwrap();
    let load = format!(
        "  seed: 3
  phases: {{warmup_s: 1, measure: {{duration_s: 3}}, cooldown_s: 0.5}}
  steps: [{{model: closed, concurrency: 1}}, {{model: closed, concurrency: 2}}, {{model: closed, concurrency: 4}}, {{model: closed, concurrency: 8}}]
{WORKLOAD}
  ignore_eos: [p]"
    );
    let spec = write_spec(tmp.path(), &provider("p", "sim://plain?slots=2"), &load, "");
    let (_, results) = run(&spec).await;
    assert_eq!(results.steps.len(), 4);
    for (step, users) in results.steps.iter().zip([1.0f64, 2.0, 4.0, 8.0]) {
        let m = lane_metrics(step, "p");
        assert_eq!(m.failures.len(), 0, "{:?}", m.failures);
        let model_e2e = SERVICE_MS * (users / 2.0).max(1.0);
        let model_throughput = users.min(2.0) / (SERVICE_MS / 1000.0);
        let e2e = m.e2e_ms.mean.unwrap();
        let throughput = m.request_throughput_per_s.unwrap();
        eprintln!(
            "{users} users: E2E mean {e2e:.1} ms (model {model_e2e:.1}), \
             {throughput:.2}/s (model {model_throughput:.2})"
        );
        // Tolerance: the model is a causal floor (no request ends before its slot's drafted
        // timeline), so the mean may not fall below 97% of it (a request sent just as a slot
        // frees skips part of a wait); above it, each request pays the client, gRPC hop and
        // connection overhead once per turn (≈ 5–20 ms on this 2-core machine, more in a debug
        // build under load) and every wave pays it again: 25% + 40 ms.
        assert!(
            e2e >= 0.97 * model_e2e && e2e <= 1.25 * model_e2e + 40.0,
            "{users} users: E2E mean {e2e:.1} ms, model {model_e2e:.1}"
        );
        // Throughput never beats the model by more than a wave. Its floor is counted in requests sent in the
        // window (throughput × D is that count; D itself runs on to the last one's end, up to
        // an E2E past the window, which is not the server's pace). With more users than slots
        // the server is the bottleneck and keeps both slots busy while a queue waits, whatever
        // the client's pace: S/T × the window, ≈ 30.8 here. With no more users than slots the
        // client's pace sets it: each user's cycle is its E2E plus its measured gap before its
        // next send, N × window ÷ cycle. Both floors are 85% of that: the slots end in waves of
        // S, so the window's edges cut a wave more or less (2 of 31), and each service runs a
        // few ms over T. Machine load moves neither floor.
        // Throughput is the completions inside the window ÷ its length: they end in waves of
        // min(N, S), so the window holds the model's count plus at most one wave (32 of the
        // model's 30.8 in a 3 s window, 10.67/s against 10.26/s).
        let window_s = step.window.length_s();
        let one_wave = users.min(2.0) / window_s;
        assert!(
            throughput <= model_throughput + one_wave + 0.01,
            "{users} users: {throughput:.2}/s, model {model_throughput:.2}/s"
        );
        let floor = if users > 2.0 {
            0.85 * model_throughput * window_s
        } else {
            let cycle_s = (e2e + mean_client_gap_ms(step, "p")) / 1000.0;
            0.85 * users * window_s / cycle_s
        };
        assert!(
            m.measured as f64 >= floor,
            "{users} users: {} measured in {window_s} s, floor {floor:.1} ({throughput:.2}/s, \
             model {model_throughput:.2}/s)",
            m.measured
        );
        // Every answer ran to its 32 tokens (ignore_eos held the length).
        assert!(step.samples.iter().all(|s| s.answer_tokens == 32));
    }
}

/// An open loop at 3× a one-slot server's capacity with a queue of 2: the client keeps its
/// schedule (small send lag), the server queues then refuses with 429 and its Retry-After, and
/// latency timed from the schedule is the sent latency plus the lag, request by request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loop_above_capacity_is_refused_with_retry_after_and_timed_from_the_schedule() {
    let tmp = tempfile::tempdir().unwrap();
    let load = format!(
        "  seed: 4
  phases: {{warmup_s: 0.5, measure: {{duration_s: 3}}, cooldown_s: 0}}
  steps: [{{model: constant, rate_per_s: 15}}]
{WORKLOAD}
  ignore_eos: [p]"
    );
    let endpoint = "sim://plain?slots=1&queue=2&retry_after_s=3";
    let spec = write_spec(tmp.path(), &provider("p", endpoint), &load, "");
    let (dir, results) = run(&spec).await;
    let step = &results.steps[0];
    // 15/s for 3.5 s: releases at k/15 s, k = 0..52 (52/15 = 3.47 s < 3.5 s).
    assert_eq!(step.samples.len(), 53);
    let m = lane_metrics(step, "p");
    assert_eq!(m.measured, 45, "k/15 in [0.5, 3.5): k = 8..=52");
    let limited = m
        .failures
        .get(&openbench_load::metrics::FailureClass::RateLimited)
        .copied()
        .unwrap_or(0);
    // Capacity 1/0.195 = 5.1/s of the 15/s: about two thirds are refused.
    assert!(limited >= 20, "{:?}", m.failures);
    let records = openbench_common::rundir::counting_records(
        &dir.join(openbench_common::rundir::FULL_RESULTS),
    )
    .unwrap();
    // The step's only phase holds every record: each 429 kept its Retry-After (3 s).
    let retry: Vec<f64> = step.retry_after_s.values().copied().collect();
    assert_eq!(
        retry.len() as u64,
        records
            .values()
            .filter(|r| r.http_status == Some(429))
            .count() as u64
    );
    assert!(retry.iter().all(|&s| s == 3.0), "{retry:?}");
    assert_eq!(assert_released_on_time(&dir), 53);
    for s in &step.samples {
        let t = RequestTimings::of(s);
        let lag = s.sent_ms - s.scheduled_ms.unwrap();
        assert!(lag >= 0.0);
        if let Some(e2e) = t.e2e_ms {
            assert_eq!(t.from_schedule(Some(e2e)), Some(e2e + lag));
        }
    }
    // The completed requests queued behind one slot: their latency is well above T.
    assert!(m.e2e_ms.p90.unwrap() > 2.0 * SERVICE_MS, "{:?}", m.e2e_ms);
    assert!(m.e2e_sched_ms.as_ref().unwrap().p90.unwrap() >= m.e2e_ms.p90.unwrap());
}

/// Two regions: each provider's releases are dealt round-robin (release k to region k mod 2),
/// so the lanes' schedules interleave exactly and pooled they are the step's process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_region_run_splits_each_step_and_pools_it_again() {
    let tmp = tempfile::tempdir().unwrap();
    let load = format!(
        "  seed: 5
  phases: {{warmup_s: 0.5, measure: {{duration_s: 2}}, cooldown_s: 0}}
  steps: [{{model: closed, concurrency: 3}}, {{model: constant, rate_per_s: 10}}]
{WORKLOAD}
  ignore_eos: [p]"
    );
    let regions = "regions:\n  - name: east\n    probe: local\n  - name: west\n    probe: local\n";
    let spec = write_spec(
        tmp.path(),
        &provider("p", "sim://plain?slots=8"),
        &load,
        regions,
    );
    let (dir, results) = run(&spec).await;
    // The open loop runs last, so the manifest's links are the ones its sitting measured.
    let open = &results.steps[1];
    let lanes: Vec<&str> = open.lanes.iter().map(|l| l.lane.as_str()).collect();
    assert_eq!(lanes, ["p@east", "p@west"]);
    // Each region's probe released its share on its own clock: 25 open-loop records.
    assert_eq!(assert_released_on_time(&dir), 25);
    // 10/s for 2.5 s: k = 0..=24; east k even (13), west k odd (12), k/10 s apart.
    for (lane, first, count) in [("p@east", 0.0, 13), ("p@west", 100.0, 12)] {
        let mut offsets: Vec<f64> = open
            .samples
            .iter()
            .filter(|s| s.lane == lane)
            .map(|s| s.scheduled_ms.unwrap())
            .collect();
        offsets.sort_by(f64::total_cmp);
        assert_eq!(offsets.len(), count, "{lane}");
        for (j, o) in offsets.iter().enumerate() {
            assert!(
                (o - (first + 200.0 * j as f64)).abs() < 1e-6,
                "{lane} {j}: {o}"
            );
        }
    }
    // In the window [0.5, 2.5) s: k = 5..=24, east 10 and west 10, so 5/s each, 10/s pooled.
    let targets: Vec<f64> = open
        .lanes
        .iter()
        .map(|l| l.target_rate_per_s.unwrap())
        .collect();
    assert_eq!(targets, [5.0, 5.0]);
    assert!(open.samples.iter().all(|s| s.outcome == Outcome::Completed));
    // Closed loop of 3 users: east gets 2, west 1.
    let closed = &results.steps[0];
    let users: Vec<u32> = closed
        .lanes
        .iter()
        .map(|l| l.concurrency.unwrap())
        .collect();
    assert_eq!(users, [2, 1]);
}

/// The micro-single-task items under a closed loop of 4 users on a profile that answers about
/// 4% wrong (baseten: task success 0.958, no failures): every answer is scored exactly as
/// micro-single-task scores it. Checked independently: the simulator writes the canned correct
/// answer exactly when it answers right, so a request is right iff its answer is that text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_success_under_load_is_scored_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/micro-single-task");
    let load = "  seed: 6
  phases: {warmup_s: 0.2, measure: {duration_s: 2}, cooldown_s: 0}
  steps: [{model: closed, concurrency: 4}]
  workload: {kind: tasks}";
    let text = write_spec(tmp.path(), &provider("b", "sim://baseten"), load, "");
    let spec = std::fs::read_to_string(&text)
        .unwrap()
        .replace(
            "dataset: {source: ., manifest: none}",
            &format!(
                "dataset: {{source: '{}', manifest: manifest.json}}",
                data.display()
            ),
        )
        .replace(
            "simulator: {time_scale: 1.0, seed: 7}",
            "simulator: {time_scale: 0.02, seed: 7, answer_from_gold: true}",
        );
    std::fs::write(&text, spec).unwrap();
    let inputs = prepare_inputs(&text, Arc::new(LoadWorkflow), "c").unwrap();
    let canned: std::collections::BTreeMap<String, String> = LoadWorkflow
        .simulator_answers(&inputs.dataset)
        .unwrap()
        .into_iter()
        .map(|a| (a.user_prompt, a.correct))
        .collect();
    let user_of: std::collections::BTreeMap<String, String> = inputs
        .dataset
        .items
        .values()
        .flatten()
        .map(|i| (i.item_id.clone(), i.user.clone()))
        .collect();
    let (dir, results) = run(&text).await;
    assert!(results.scored);
    let records = openbench_common::rundir::counting_records(
        &dir.join(openbench_common::rundir::FULL_RESULTS),
    )
    .unwrap();
    let mut by_record: Vec<(bool, bool)> = Vec::new();
    let mut samples = results.steps[0].samples.iter();
    let mut kept: Vec<_> = records
        .values()
        .filter(|r| r.outcome != Outcome::HarnessError)
        .collect();
    kept.sort_by(|a, b| (&a.lane, a.slot, a.sequence).cmp(&(&b.lane, b.slot, b.sequence)));
    for r in kept {
        let s = samples.next().unwrap();
        let expected = r.outcome == Outcome::Completed
            && canned.get(&user_of[&r.item_id]) == Some(&r.answer_text);
        by_record.push((s.correct.unwrap(), expected));
    }
    assert!(samples.next().is_none());
    let wrong = by_record.iter().filter(|(_, e)| !e).count();
    eprintln!(
        "tasks under load: {} requests, {wrong} wrong",
        by_record.len()
    );
    assert!(by_record.len() >= 40, "{}", by_record.len());
    assert!(wrong >= 1, "the seeded run has wrong answers to catch");
    assert!(by_record.iter().all(|(got, expected)| got == expected));
}

/// A saturation search on one slot and a queue of one (capacity 1/0.195 = 5.1/s): 4/s (a
/// release every 250 ms, each served in 195 ms) is sustained; at 8/s the queue overflows and
/// 429s leave under 95% of the target completed, so one bisection runs 6/s. Each chosen step is written once as its own
/// plan file; a resume replays the choices from the records, writes the same bytes, sends
/// nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saturation_search_chooses_steps_from_the_records_and_resumes_by_replaying_them() {
    let tmp = tempfile::tempdir().unwrap();
    let load = format!(
        "  seed: 8
  phases: {{warmup_s: 0.3, measure: {{duration_s: 1.5}}, cooldown_s: 0}}
  saturation: {{arrivals: constant, start_rate_per_s: 4, growth: 2, max_rate_per_s: 16, refine_steps: 1}}
{WORKLOAD}
  ignore_eos: [p]"
    );
    let endpoint = "sim://plain?slots=1&queue=1";
    let spec = write_spec(tmp.path(), &provider("p", endpoint), &load, "");
    let (dir, results) = run(&spec).await;
    let rates: Vec<f64> = results
        .steps
        .iter()
        .map(|s| s.model.target_rate().unwrap())
        .collect();
    assert_eq!(rates, [4.0, 8.0, 6.0]);
    let artifacts = dir.join("artifacts");
    for name in [
        "full-plan.json",
        "full-plan-phase-1.json",
        "full-plan-phase-2.json",
    ] {
        assert!(artifacts.join(name).exists(), "{name}");
    }
    assert_resume_sends_nothing(&spec, &dir).await;
}
