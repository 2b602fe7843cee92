//! A `local` region's probe is reached in memory by default (its gRPC services called without a
//! socket) or, with `OPENBENCH_LOCAL_PROBE=loopback`, over a loopback gRPC server. The two are
//! the same calls on the same probe: the same spec and seed give the same records in both, every
//! field but the measured times, on all ten simulator profiles and their failures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use coordinator_support::*;
use openbench_common::rundir as layout;
use openbench_coordinator::{RunDir, RunStatus, run_full};
use openbench_inference::targets::{LocalLink, LocalTargets};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Record fields that hold a measured time or depend on one (a pooled connection's reuse, a
/// probe's host-derived id, the run's own id), left out of the comparison; every other field,
/// the outcome, error class, answer, tokens, usage and tool calls among them, must be equal.
fn measured(key: &str) -> bool {
    key.ends_with("_ms")
        || matches!(
            key,
            "started_at"
                | "run_id"
                | "round_id"
                | "output_tokens_per_second"
                | "server_timings"
                | "probe_id"
                | "resent_on_fresh_connection"
                | "rate_limit_headers"
                | "error_message"
        )
}

/// (lane, round) → the record's fields that are not measured times.
fn contents(dir: &std::path::Path) -> BTreeMap<(String, u64), serde_json::Value> {
    records(&dir.join(layout::FULL_RESULTS))
        .into_iter()
        .map(|r| {
            let key = (r.lane.clone(), r.round_index);
            let mut value = serde_json::to_value(&r).unwrap();
            let fields = value.as_object_mut().unwrap();
            fields.retain(|k, _| !measured(k));
            (key, value)
        })
        .collect()
}

/// Runs the spec at `spec` to completion with local probes served as `link`; returns its
/// directory (kept in `tmp`).
async fn run(spec: &std::path::Path, run_id: &str, link: LocalLink) -> std::path::PathBuf {
    let inputs = inputs(spec);
    let targets = LocalTargets::for_inputs(&inputs).unwrap().with_link(link);
    let options = openbench_coordinator::RunOptions {
        targets: Some(Arc::new(targets)),
        ..Default::default()
    };
    let run = RunDir::create(&inputs, Some(run_id), "test").unwrap();
    let outcome = run_full(&inputs, &run, run_id, &options).await.unwrap();
    assert_eq!(outcome.status, RunStatus::Complete, "{link:?}");
    assert_eq!(outcome.sitting.records_written, 60, "{link:?}");
    run.dir.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_and_loopback_local_probes_write_the_same_records() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let providers: Vec<Prov> = PROFILES.iter().map(|p| Prov::sim(p)).collect();
    let spec = write_spec(tmp.path(), &data, &providers, 2, 0.01, 2000);

    let in_memory = contents(&run(&spec, "T-memory", LocalLink::InProcess).await);
    let loopback = contents(&run(&spec, "T-loopback", LocalLink::Loopback).await);

    assert_eq!(in_memory.len(), 60);
    assert_eq!(
        in_memory.keys().collect::<Vec<_>>(),
        loopback.keys().collect::<Vec<_>>()
    );
    for (key, record) in &in_memory {
        assert_eq!(record, &loopback[key], "lane {} round {}", key.0, key.1);
    }
    // The comparison has teeth: the runs hold answers and failures, not only empty records.
    let outcomes: std::collections::BTreeSet<String> = in_memory
        .values()
        .map(|r| r["outcome"].as_str().unwrap().to_string())
        .collect();
    assert!(outcomes.contains("completed"), "{outcomes:?}");
    assert!(outcomes.len() >= 2, "only {outcomes:?}");
    assert!(
        in_memory
            .values()
            .any(|r| !r["answer_text"].as_str().unwrap().is_empty())
    );
}
