//! Every run certifies its own measurement (docs/validity.md): a load run whose only runtime
//! thread is deliberately blocked for 300 ms part-way through reports that stall in its
//! validity section, the coordinator's and the probe's canaries locating it in time and the
//! send lag of the releases it delayed showing it, while the same run unblocked keeps both
//! under a generous bound. The stall is injected, not hoped for: the test runs on a
//! current-thread runtime (the coordinator, the in-process probe and the simulator all on it),
//! so a blocking sleep there delays every one of them whatever the machine's load.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod real_targets;

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

/// The stalled run's section survives the results store: one `run_validity` row (failed, with
/// the run's measured error) and one `validity_checks` row per check, identical in SQLite and
/// (when `OPENBENCH_TEST_POSTGRES_URL` is set, deploy/postgres/test-server.sh) PostgreSQL.
#[tokio::test]
async fn the_validity_section_round_trips_through_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, _) = run(tmp.path(), Some(Duration::from_millis(1200))).await;
    let section = section(&dir);
    let expected: openbench_common::validity::assess::ValiditySection =
        serde_json::from_value(section.clone()).unwrap();
    assert!(!expected.passed());
    let locations = real_targets::skip::store_locations(tmp.path(), "validity_stall::postgres");
    for location in locations {
        let (dir, expected) = (dir.clone(), expected.clone());
        // The store's PostgreSQL client is synchronous: it runs off the runtime.
        tokio::task::spawn_blocking(move || stored_as_reported(&location, &dir, &expected))
            .await
            .unwrap();
    }
}

/// Publishes `dir` to the store at `location` and checks its validity rows against `expected`.
fn stored_as_reported(
    location: &str,
    dir: &Path,
    expected: &openbench_common::validity::assess::ValiditySection,
) {
    let mut store = openbench_store::Store::open(location).unwrap();
    let outcome =
        openbench_store::publish::publish(&mut store, dir, &openbench_load::run::LoadWorkflow)
            .unwrap();
    let id = [openbench_store::Value::from(outcome.run_id.as_str())];
    let row = store
        .query(
            "SELECT passed, failed_checks, measured_error_ms FROM run_validity \
             WHERE run_id = $1",
            &id,
        )
        .unwrap();
    assert_eq!(row[0][0].int(), Some(0), "{location}");
    assert_eq!(row[0][1].int(), Some(expected.failures().len() as i64));
    // Values read back from JSON text may differ from the stored binary in the last bit.
    let near = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() <= 1e-9 * b.abs());
    assert!(near(row[0][2].real(), expected.measured_error_ms()));
    let checks = store
        .query(
            "SELECT item, scope, value, passed FROM validity_checks WHERE run_id = $1 \
             ORDER BY check_index",
            &id,
        )
        .unwrap();
    assert_eq!(checks.len(), expected.checks.len());
    for (row, check) in checks.iter().zip(&expected.checks) {
        assert_eq!(row[0].text(), Some(check.item.as_str()));
        assert_eq!(row[1].text(), Some(check.scope.as_str()));
        assert!(near(row[2].real(), check.value), "{row:?} {check:?}");
        assert_eq!(row[3].int(), Some(i64::from(check.passed)));
    }
    let stored = openbench_store::load::stored_validity(&mut store, &outcome.run_id)
        .unwrap()
        .unwrap();
    assert_eq!(&stored, expected, "{location}");
}

/// A paired run reports the section too: the send lag of every release (gate → probe start),
/// the launch skew of every round, four canaries (coordinator, its link, probe, its link) and the
/// clock of its one region, in metrics.json, report.md and report.html.
#[tokio::test]
async fn a_paired_run_reports_its_validity_section() {
    use coordinator_support::{Prov, inputs, lines, sample_dataset, write_spec};
    use openbench_common::workflow::Workflow;
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let providers = [Prov::sim("zai"), Prov::sim("baseten")];
    let spec = write_spec(tmp.path(), &data, &providers, 2, 0.01, 400);
    let inputs = inputs(&spec);
    let run = RunDir::create(&inputs, Some("P-1"), "test").unwrap();
    run_full(&inputs, &run, "P-1", &options(&inputs))
        .await
        .unwrap();
    let dir = run.dir.clone();
    drop(run);
    openbench_micro_single_task::MicroSingleTask
        .report(&dir, &Default::default())
        .unwrap();
    let rounds = lines(&dir.join(openbench_common::rundir::ROUNDS)).len();
    let metrics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("artifacts/metrics.json")).unwrap())
            .unwrap();
    let section = &metrics["validity"];
    assert_eq!(section["send_lag_ms"]["n"], 2 * rounds, "{section}");
    assert_eq!(section["launch_skew_ms"]["n"], rounds, "{section}");
    assert_eq!(section["runtimes"].as_array().unwrap().len(), 4);
    assert_eq!(check(section, "launch skew p99", "run")["unit"], "ms");
    assert_eq!(check(section, "harness failures", "run")["passed"], true);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## Validity"), "{md}");
    assert!(md.lines().nth(2).unwrap().contains("Validity: "), "{md}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<h2>Validity</h2>"));
}
