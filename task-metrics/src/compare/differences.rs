//! What differs between two runs' configuration and dataset, listed before any change is shown.
//!
//! A difference in one of the lock's input hashes (spec, dataset release, adapters, tokenizer
//! ranks, code) is *loud*: the runs were made under different locks. They are still compared,
//! but the report says so at the top. Everything else (model label, timeout, regions, providers'
//! models, plan size) is listed as context.

use crate::metrics::RunMetrics;
use openbench_common::rundir::RunLock;

/// One configuration or dataset difference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// What differs (`dataset release hash`, `provider together: model`, …).
    pub what: String,
    /// Run A's value.
    pub a: String,
    /// Run B's value.
    pub b: String,
    /// True for a lock input hash: the runs were made under different locks.
    pub loud: bool,
}

fn push(out: &mut Vec<Difference>, what: &str, a: &str, b: &str, loud: bool) {
    if a != b {
        out.push(Difference {
            what: what.to_string(),
            a: a.to_string(),
            b: b.to_string(),
            loud,
        });
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".into()
    } else {
        items.join(", ")
    }
}

/// The differences between two locks, loud ones first.
pub fn between(a: &RunLock, b: &RunLock) -> Vec<Difference> {
    let mut out = Vec::new();
    let hashes = [
        ("spec (sha256)", &a.spec_sha256, &b.spec_sha256),
        (
            "dataset release hash",
            &a.dataset_release_hash,
            &b.dataset_release_hash,
        ),
        ("adapters (sha256)", &a.adapters_sha256, &b.adapters_sha256),
        (
            "tokenizer ranks (sha256)",
            &a.tokenizer_ranks_sha256,
            &b.tokenizer_ranks_sha256,
        ),
        ("code (sha256)", &a.code_sha256, &b.code_sha256),
    ];
    for (what, x, y) in hashes {
        push(&mut out, what, x, y, true);
    }
    push(
        &mut out,
        "benchmark slug",
        &a.benchmark_slug,
        &b.benchmark_slug,
        false,
    );
    push(
        &mut out,
        "schedule version",
        &a.schedule_version,
        &b.schedule_version,
        false,
    );
    push(
        &mut out,
        "families",
        &list(&a.families),
        &list(&b.families),
        false,
    );
    push(
        &mut out,
        "dataset folder",
        &a.dataset_dir,
        &b.dataset_dir,
        false,
    );
    push(
        &mut out,
        "model label",
        &a.model_label,
        &b.model_label,
        false,
    );
    push(&mut out, "tokenizer", &a.tokenizer, &b.tokenizer, false);
    push(
        &mut out,
        "program version",
        &a.program_version,
        &b.program_version,
        false,
    );
    push(
        &mut out,
        "client deadline (ms)",
        &a.timeout_ms.to_string(),
        &b.timeout_ms.to_string(),
        false,
    );
    push(
        &mut out,
        "regions",
        &list(&a.regions),
        &list(&b.regions),
        false,
    );
    let scale = |s: Option<f64>| s.map_or("real time".to_string(), |x| format!("{x}"));
    push(
        &mut out,
        "simulator time scale",
        &scale(a.simulator_time_scale),
        &scale(b.simulator_time_scale),
        false,
    );
    for pa in &a.providers {
        match b.providers.iter().find(|pb| pb.key == pa.key) {
            Some(pb) => push(
                &mut out,
                &format!("provider {}: model", pa.key),
                &pa.model,
                &pb.model,
                false,
            ),
            None => push(
                &mut out,
                &format!("provider {}", pa.key),
                "present",
                "absent",
                false,
            ),
        }
    }
    for pb in b
        .providers
        .iter()
        .filter(|pb| !a.providers.iter().any(|pa| pa.key == pb.key))
    {
        push(
            &mut out,
            &format!("provider {}", pb.key),
            "absent",
            "present",
            false,
        );
    }
    out
}

/// Differences seen in the scored runs: rounds planned, items per family.
pub fn of_runs(a: &RunMetrics, b: &RunMetrics) -> Vec<Difference> {
    let mut out = Vec::new();
    push(
        &mut out,
        "rounds",
        &a.rounds.to_string(),
        &b.rounds.to_string(),
        false,
    );
    out
}
