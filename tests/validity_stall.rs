//! Every run certifies its own measurement (docs/validity.md): a load run whose only runtime
//! thread is deliberately blocked for 300 ms part-way through reports that stall in its
//! validity section, the coordinator's and the probe's canaries locating it in time and the
//! send lag of the releases it delayed showing it, while the same run unblocked keeps both
//! under a generous bound. The stall is injected, not hoped for: the test runs on a
//! current-thread runtime (the coordinator, the in-process probe and the simulator all on it),
//! so a blocking sleep there delays every one of them whatever the machine's load.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use coordinator_support::options;
use openbench_common::clock::rfc3339_unix_micros;
use openbench_common::rundir::RunManifest;
use openbench_coordinator::{RunDir, RunStatus, prepare_inputs, run_full};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const STALL: Duration = Duration::from_millis(300);

fn write_spec(dir: &Path) -> PathBuf {
    let spec = "benchmark: {slug: validity-test, workflow: load, schedule_version: validity-v1}
request: {temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 16, response_format: json_object, timeout_ms: 20000,
  harness_grace_ms: 60000}
providers:
  - {key: p, endpoint: 'sim://plain', model: m, auth: {scheme: none}, max_tokens_field: max_tokens}
dataset: {source: ., manifest: none}
simulator: {time_scale: 1.0, seed: 7}
run_root: runs
load:
  seed: 3
  phases: {warmup_s: 0.5, measure: {duration_s: 2.5}, cooldown_s: 0}
  steps: [{model: constant, rate_per_s: 20}]
  workload:
    kind: synthetic
    input_tokens: {dist: fixed, tokens: 20}
    output_tokens: {dist: fixed, tokens: 8}
";
    let path = dir.join("spec.yaml");
    std::fs::write(&path, spec).unwrap();
    path
}

/// Runs the spec; with `stall_after`, blocks the runtime's one thread for [`STALL`] that long
/// after the run starts. Returns the run directory and the injection's wall-clock start (µs).
async fn run(dir: &Path, stall_after: Option<Duration>) -> (PathBuf, Option<i64>) {
    let spec = write_spec(dir);
    let workflow = Arc::new(openbench_load::run::LoadWorkflow);
    let inputs = prepare_inputs(&spec, workflow, "test-code-digest").unwrap();
    let run = RunDir::create(&inputs, Some("V-1"), "test").unwrap();
    let injected = stall_after.map(|after| {
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let at = openbench_common::clock::unix_micros(SystemTime::now());
            std::thread::sleep(STALL);
            at
        })
    });
    let outcome = run_full(&inputs, &run, "V-1", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    let at = match injected {
        Some(task) => Some(task.await.unwrap()),
        None => None,
    };
    let out = run.dir.clone();
    drop(run);
    (out, at)
}

/// The validity section as the report wrote it (load-metrics.json).
fn section(dir: &Path) -> serde_json::Value {
    use openbench_common::workflow::Workflow;
    openbench_load::run::LoadWorkflow
        .report(dir, &Default::default())
        .unwrap();
    let text = std::fs::read_to_string(dir.join("load-metrics.json")).unwrap();
    let metrics: serde_json::Value = serde_json::from_str(&text).unwrap();
    metrics["validity"].clone()
}

fn check<'a>(section: &'a serde_json::Value, item: &str, scope: &str) -> &'a serde_json::Value {
    section["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["item"] == item && c["scope"].as_str().unwrap().starts_with(scope))
        .unwrap_or_else(|| panic!("no check {item} {scope}: {section}"))
}

#[tokio::test]
async fn a_blocked_runtime_is_located_by_the_canaries_and_the_send_lag() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, at) = run(tmp.path(), Some(Duration::from_millis(1500))).await;
    let at = at.unwrap();
    let manifest = RunManifest::load(&dir).unwrap();
    let sitting = &manifest.runtime_health[0];
    let probes = &sitting.probes;
    let probe = probes.values().next().unwrap();
    for health in sitting.coordinator.iter().chain(probe).filter(|h| {
        // The link threads have their own runtime: the injection does not block them.
        !h.runtime.ends_with("-link")
    }) {
        assert!(health.lateness_ms_max >= 250.0, "{health:?}");
        let worst = &health.worst[0];
        let start = rfc3339_unix_micros(&health.started_at).unwrap() as f64;
        let from = start + worst.from_offset_ms * 1e3;
        let to = start + worst.to_offset_ms * 1e3;
        // The worst moment spans the injection (1 ms of slack for the two clocks' rounding).
        assert!(from <= at as f64 + 1e3, "{health:?} injected at {at}");
        assert!(
            to + 1e3 >= (at + 300_000) as f64,
            "{health:?} injected at {at}"
        );
    }
    let section = section(&dir);
    assert!(
        section["send_lag_ms"]["max"].as_f64().unwrap() >= 200.0,
        "{section}"
    );
    assert_eq!(
        check(&section, "canary max", "coordinator ·")["passed"],
        false
    );
    assert_eq!(check(&section, "canary max", "probe ")["passed"], false);
    assert_eq!(check(&section, "send lag p99", "run")["passed"], false);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("**Validity: FAILED**"), "{md}");
    assert!(md.contains("canary max (coordinator · sitting 1)"), "{md}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("Validity: FAILED"));
}

#[tokio::test]
async fn an_unblocked_run_keeps_its_canaries_and_send_lag_under_a_generous_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, _) = run(tmp.path(), None).await;
    let manifest = RunManifest::load(&dir).unwrap();
    let sitting = &manifest.runtime_health[0];
    assert_eq!(sitting.coordinator.len(), 2);
    let probe = sitting.probes.values().next().unwrap();
    assert_eq!(probe.len(), 2);
    for health in sitting.coordinator.iter().chain(probe) {
        assert!(health.lateness_ms_max < 250.0, "{health:?}");
        assert!(health.ticks > 50, "{health:?}");
    }
    let section = section(&dir);
    assert!(
        section["send_lag_ms"]["max"].as_f64().unwrap() < 250.0,
        "{section}"
    );
    assert_eq!(section["send_lag_ms"]["n"], 60, "20/s for 3 s");
    assert_eq!(check(&section, "harness failures", "run")["passed"], true);
    assert_eq!(
        check(&section, "planned rate sent", "step 0")["passed"],
        true
    );
    assert_eq!(section["clock"].as_object().unwrap().len(), 1, "{section}");
}
