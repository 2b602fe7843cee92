//! Shared helpers of the `coordinator_*` tests: a real dataset (the generator's public sample),
//! simulated specs written to a tempdir, the built binary, and run-directory readers.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod held;
pub mod kill;

use openbench_common::record::{Outcome, TerminalRecord};
use openbench_coordinator::{RunInputs, prepare_inputs};
use openbench_micro_single_task::spec_yaml::contract_sections;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

/// The ten simulator profiles, named after the reference provider keys.
pub const PROFILES: [&str; 10] = [
    "zai",
    "together",
    "fireworks",
    "baseten",
    "telnyx",
    "modal",
    "nebius",
    "parasail",
    "novita",
    "deepinfra",
];

/// The harness grace of test specs, ms: far beyond any delay a loaded machine adds to a probe's
/// answer, so a harness record in these tests means a real fault, never load (the harness path
/// itself is tested in `tests/coordinator_harness.rs` with a short grace).
pub const HARNESS_GRACE_MS: u64 = 60_000;

/// The built binary.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_openbench-inference")
}

/// Runs the binary with `args` in `cwd`.
pub fn run_bin(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.current_dir(cwd).args(args).env_remove("RUST_BACKTRACE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("spawn the binary")
}

/// Writes the generator's public sample (13/6/10 rows, seeded) into `dir/<name>`.
pub fn sample_dataset(dir: &Path, name: &str, seed: u64) -> PathBuf {
    let out = dir.join(name);
    let seed = seed.to_string();
    let o = run_bin(
        dir,
        &[
            "dataset",
            "generate",
            "--public-sample",
            "--seed",
            &seed,
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        o.status.success(),
        "dataset generate: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// One provider of a test spec.
pub struct Prov {
    /// Provider key.
    pub key: String,
    /// Simulator profile.
    pub profile: String,
    /// Extra YAML lines under the provider (indented by 4).
    pub extra: String,
}

impl Prov {
    /// A provider whose key is its profile.
    pub fn sim(profile: &str) -> Prov {
        Prov {
            key: profile.into(),
            profile: profile.into(),
            extra: String::new(),
        }
    }
}

/// Writes a simulated spec into `dir/spec.yaml`.
pub fn write_spec(
    dir: &Path,
    dataset: &Path,
    providers: &[Prov],
    items: usize,
    time_scale: f64,
    timeout_ms: u64,
) -> PathBuf {
    let mut text = contract_sections(timeout_ms, HARNESS_GRACE_MS);
    for p in providers {
        text.push_str(&format!(
            "  - key: {}\n    endpoint: sim://{}\n    model: m-{}\n    max_tokens_field: max_tokens\n",
            p.key, p.profile, p.key
        ));
        if p.extra.contains("auth:") {
            text.push_str(&p.extra);
        } else {
            text.push_str("    auth: {scheme: none}\n");
            text.push_str(&p.extra);
        }
    }
    text.push_str(&format!(
        "dataset:
  source: {}
plans:
  full_items_per_family: {items}
  smoke_items_per_family: 1
run_root: runs
simulator:
  time_scale: {time_scale}
  seed: 7
",
        dataset.display()
    ));
    let path = dir.join("spec.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Loads run inputs through the real workflow (spec, dataset, credentials).
pub fn inputs(spec: &Path) -> RunInputs {
    prepare_inputs(
        spec,
        Arc::new(openbench_micro_single_task::MicroSingleTask),
        "test-code-digest",
    )
    .unwrap()
}

/// Every line of a JSON-lines file as a value.
pub fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every terminal record of a results file.
pub fn records(path: &Path) -> Vec<TerminalRecord> {
    lines(path)
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect()
}

/// Request id → number of committed (non-harness) records.
pub fn committed_counts(records: &[TerminalRecord]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.outcome != Outcome::HarnessError)
    {
        *out.entry(r.request_id.clone()).or_default() += 1;
    }
    out
}

/// The plan's (request id, lane, round index) triples.
pub fn planned(plan_path: &Path) -> Vec<(String, String, u64)> {
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(plan_path).unwrap()).unwrap();
    let mut out = Vec::new();
    for round in plan["rounds"].as_array().unwrap() {
        let index = round["round_index"].as_u64().unwrap();
        for r in round["requests"].as_array().unwrap() {
            out.push((
                r["request_id"].as_str().unwrap().to_string(),
                r["lane"].as_str().unwrap().to_string(),
                index,
            ));
        }
    }
    out
}

/// The run directory a command printed (`run directory: …`).
pub fn printed_run_dir(stdout: &[u8]) -> PathBuf {
    let text = String::from_utf8_lossy(stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("run directory: "))
        .unwrap_or_else(|| panic!("no run directory in output: {text}"));
    PathBuf::from(line.trim())
}

/// Session options whose targets are this machine's (the simulator and local probes), with the
/// simulator's canned answers from the workflow, as the binary builds them.
pub fn options(inputs: &RunInputs) -> openbench_coordinator::RunOptions {
    let targets = openbench_inference::targets::LocalTargets::for_inputs(inputs).unwrap();
    openbench_coordinator::RunOptions {
        targets: Some(std::sync::Arc::new(targets)),
        ..Default::default()
    }
}

/// Options that ask the sitting to finish (release nothing new) once `after` requests of the run
/// are committed.
pub fn stopping_after(inputs: &RunInputs, after: usize) -> openbench_coordinator::RunOptions {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(openbench_coordinator::StopRequest::None);
    let on_progress = move |p: &openbench_coordinator::Progress| {
        if p.requests_done >= after {
            let _ = stop_tx.send(openbench_coordinator::StopRequest::Finish);
        }
    };
    openbench_coordinator::RunOptions {
        progress: Some(Arc::new(on_progress)),
        stop: Some(stop_rx),
        ..options(inputs)
    }
}

/// Runs the load workflow's spec at `spec` in process to completion (run id `run_id`) and reads
/// its results back as the report does; returns the run directory and the results.
pub async fn run_load(spec: &Path, run_id: &str) -> (PathBuf, openbench_load::report::LoadResults) {
    let workflow = Arc::new(openbench_load::run::LoadWorkflow);
    let inputs = prepare_inputs(spec, workflow, "test-code-digest").unwrap();
    let run = openbench_coordinator::RunDir::create(&inputs, Some(run_id), "test").unwrap();
    let outcome = openbench_coordinator::run_full(&inputs, &run, run_id, &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, openbench_coordinator::RunStatus::Complete);
    let dir = run.dir.clone();
    drop(run);
    let results = openbench_load::run::load_results(&dir).unwrap();
    (dir, results)
}

/// Nearest rank (the ceil(p·n)-th smallest), written out here, independent of the crates' own:
/// what a test checks a report's percentile against.
pub fn nearest_rank_by_hand(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (p * sorted.len() as f64 - 1e-9).ceil() as usize;
    sorted[rank.max(1) - 1]
}

/// Mean and 95% Student t interval of three values, written out here, independent of
/// `report-kit::repeats`: t₀.₉₇₅ at 2 degrees of freedom is 4.3027 (Student's table).
pub fn t_interval_of_three(v: &[f64; 3]) -> (f64, f64, f64) {
    let mean = (v[0] + v[1] + v[2]) / 3.0;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 2.0;
    let half = 4.3027 * var.sqrt() / 3f64.sqrt();
    (mean, mean - half, mean + half)
}

/// Equal to within float rounding (1e-9 relative, or absolute below 1).
pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// Every file below `dir`, at any depth (directories themselves are not listed).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// A CA and a `localhost`/`127.0.0.1` certificate it signed: (CA PEM, cert PEM, key PEM).
pub fn test_ca() -> (String, String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

/// The simulator on 127.0.0.1 (a free port): time scale 0.01, seed 7, profile `zai` unless a
/// request names another, no canned answers.
pub async fn loopback_simulator() -> openbench_simulator::SimServer {
    openbench_simulator::start(
        openbench_simulator::SimConfig {
            time_scale: 0.01,
            seed: 7,
            default_profile: "zai".into(),
            answers: Vec::new(),
        },
        ([127, 0, 0, 1], 0).into(),
    )
    .await
    .unwrap()
}
