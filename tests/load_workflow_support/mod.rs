//! What the load-workflow tests share: a spec writer for simulated providers, a run through the
//! coordinator, and checks of on-time release, a resume that sends nothing and one lane's
//! metrics with the report's own aggregation.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use crate::coordinator_support::{options, run_load, stopping_after};
use openbench_common::record::TerminalRecord;
use openbench_coordinator::{RunDir, RunStatus, prepare_inputs, run_full};
use openbench_load::metrics::step::{StepSettings, step_metrics};
use openbench_load::metrics::{RequestSample, Slo};
use openbench_load::report::{LoadResults, StepResults};
use openbench_load::run::LoadWorkflow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Per-request service time of `plain` with 32-token answers under `ignore_eos`: TTFA 40 ms,
/// then 31 gaps of 1000/200 = 5 ms (no jitter): the last answer event at 195 ms.
pub const SERVICE_MS: f64 = 195.0;

pub fn write_spec(dir: &Path, providers: &str, load: &str, extra: &str) -> PathBuf {
    let spec = format!(
        "benchmark: {{slug: load-test, workflow: load, schedule_version: load-test-v1}}
request: {{temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 20000,
  harness_grace_ms: 60000}}
providers:
{providers}
dataset: {{source: ., manifest: none}}
simulator: {{time_scale: 1.0, seed: 7}}
run_root: runs
load:
{load}
{extra}"
    );
    let path = dir.join("spec.yaml");
    std::fs::write(&path, spec).unwrap();
    path
}

pub fn provider(key: &str, endpoint: &str) -> String {
    format!(
        "  - {{key: {key}, endpoint: '{endpoint}', model: m, auth: {{scheme: none}}, max_tokens_field: max_tokens}}\n"
    )
}

pub const WORKLOAD: &str = "  workload:
    kind: synthetic
    input_tokens: {dist: fixed, tokens: 20}
    output_tokens: {dist: fixed, tokens: 32}";

pub async fn run(spec: &Path) -> (PathBuf, LoadResults) {
    run_load(spec, "T-1").await
}

/// Every open-loop request was sent by its probe no earlier than its scheduled time: each
/// record's clock zero (`started_at`, the probe's wall clock) is at or after its `scheduled_at`
/// (the coordinator's) moved onto the probe's clock by the region's (or the replica's) measured offset, less that
/// offset's error bound (both from the manifest) and the 1 µs of the timestamps' rounding. The
/// coordinator hands requests over 250 ms early, so a release timed anywhere but on the probe
/// breaks this by about that much. Every such record carries its send lag, and its sent offset is
/// the scheduled one plus that lag. Returns how many records were checked.
pub fn assert_released_on_time(dir: &Path) -> usize {
    use openbench_common::clock::rfc3339_unix_micros;
    let manifest: openbench_common::rundir::RunManifest = serde_json::from_slice(
        &std::fs::read(dir.join(openbench_common::rundir::layout::RUN_MANIFEST)).unwrap(),
    )
    .unwrap();
    let records = openbench_common::rundir::counting_records(
        &dir.join(openbench_common::rundir::FULL_RESULTS),
    )
    .unwrap();
    let mut checked = 0;
    for r in records.values().filter(|r| r.scheduled_at.is_some()) {
        // A probe replica's offset is its own (`eu#1`).
        let key = match r.replica {
            Some(k) => format!("{}#{k}", r.region),
            None => r.region.clone(),
        };
        let link = &manifest.links[&key];
        let scheduled = rfc3339_unix_micros(r.scheduled_at.as_deref().unwrap()).unwrap() as f64;
        let started = rfc3339_unix_micros(&r.started_at).unwrap() as f64;
        let slack_us = 1000.0 * link.clock_offset_error_ms + 1.0;
        assert!(
            started >= scheduled + 1000.0 * link.clock_offset_ms - slack_us,
            "{}: started {} µs before its release",
            r.request_id,
            scheduled + 1000.0 * link.clock_offset_ms - started
        );
        let lag = r.send_lag_ms.unwrap();
        assert!(lag >= 0.0);
        // Offsets are written to the µs (6 decimals).
        let sent = r.scheduled_offset_ms.unwrap() + lag;
        assert!((r.sent_offset_ms.unwrap() - sent).abs() < 1e-6, "{sent}");
        checked += 1;
    }
    checked
}

/// A run that ran to its end, resumed: it completes at once, writing no record, and its
/// records file keeps its bytes.
pub async fn assert_resume_sends_nothing(spec: &Path, dir: &Path) {
    let before = std::fs::read(dir.join(openbench_common::rundir::FULL_RESULTS)).unwrap();
    let inputs = prepare_inputs(spec, Arc::new(LoadWorkflow), "test-code-digest").unwrap();
    let run = RunDir::open_or_create(&inputs, Some(dir), None, "test").unwrap();
    let outcome = run_full(&inputs, &run, "T-1", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    assert_eq!(outcome.sitting.records_written, 0);
    let after = std::fs::read(dir.join(openbench_common::rundir::FULL_RESULTS)).unwrap();
    assert_eq!(before, after);
}

/// The metrics of one lane of a step, with the report's own aggregation.
pub fn lane_metrics(step: &StepResults, lane: &str) -> openbench_load::metrics::StepMetrics {
    let mine: Vec<&RequestSample> = step.samples.iter().filter(|s| s.lane == lane).collect();
    let target = step
        .lanes
        .iter()
        .find(|l| l.lane == lane)
        .and_then(|l| l.target_rate_per_s);
    let settings = StepSettings {
        window: step.window,
        target_rate_per_lane: target,
        sustain_fraction: 0.95,
        goodput_threshold: 0.9,
        slo: Slo::default(),
    };
    step_metrics(&mine, &settings, 1)
}

/// Every (lane, slot)'s records in sequence order, of phase `phase` or of every phase.
pub fn slot_records(
    dir: &Path,
    phase: Option<u32>,
) -> BTreeMap<(String, u32), Vec<TerminalRecord>> {
    let records = openbench_common::rundir::counting_records(
        &dir.join(openbench_common::rundir::FULL_RESULTS),
    )
    .unwrap();
    let mut out: BTreeMap<(String, u32), Vec<TerminalRecord>> = BTreeMap::new();
    for r in records.into_values() {
        if phase.is_none_or(|p| r.phase == Some(p)) {
            out.entry((r.lane.clone(), r.slot.unwrap()))
                .or_default()
                .push(r);
        }
    }
    for v in out.values_mut() {
        v.sort_by_key(|r| r.sequence);
    }
    out
}

/// Runs the spec at `spec` in two sittings (run id `T-1`): one asked to finish once its first
/// request is committed (it ends interrupted), then one to the end. Returns the run directory.
pub async fn stopped_then_resumed(spec: &Path) -> PathBuf {
    let inputs = prepare_inputs(spec, Arc::new(LoadWorkflow), "test-code-digest").unwrap();
    let dir = RunDir::create(&inputs, Some("T-1"), "test")
        .unwrap()
        .dir
        .clone();
    for (options, status) in [
        (stopping_after(&inputs, 1), RunStatus::Interrupted),
        (options(&inputs), RunStatus::Complete),
    ] {
        let run = RunDir::open(&inputs, &dir, "test").unwrap();
        let outcome = run_full(&inputs, &run, "T-1", &options).await.unwrap();
        assert_eq!(outcome.status, status);
    }
    dir
}

/// Copies the shipped Azure trace sample (`data/traces`) into `dir`; its file name, as a spec
/// beside it names it.
pub fn copy_azure_sample(dir: &Path) -> &'static str {
    let name = "azure-llm-sample.csv";
    let trace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/traces")
        .join(name);
    std::fs::copy(&trace, dir.join(name)).unwrap();
    name
}
