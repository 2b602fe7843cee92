//! micro-single-task's spec section moved out of the generic spec without changing what the lock
//! hashes: the bundled specs, checked by their workflow, hash as they did when `plans:` and
//! `benchmark.families` were generic fields (values computed by the code before the split).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use openbench_common::spec::LoadedSpec;
use openbench_common::workflow::Workflow;
use openbench_coordinator::lock::spec_inputs_sha256;
use openbench_micro_single_task::MicroSingleTask;
use std::path::Path;

fn hash_of(name: &str) -> String {
    hash_with(name, |text| text)
}

/// The hash of bundled spec `name` with its text changed by `edit` first.
fn hash_with(name: &str, edit: impl Fn(String) -> String) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workflows/micro-single-task/specs")
        .join(format!("{name}.yaml"));
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join(format!("{name}.yaml"));
    std::fs::write(&copy, edit(std::fs::read_to_string(&path).unwrap())).unwrap();
    let spec = LoadedSpec::load_checked(&copy, |s| MicroSingleTask.check_spec(s)).unwrap();
    spec_inputs_sha256(&spec)
}

/// A spec's HTTP endpoints written as full `…/chat/completions` URLs, as the bundled specs had
/// them before they took the base-URL convention (issue 38).
fn full_path_endpoints(text: String) -> String {
    text.lines()
        .map(|line| match line.strip_prefix("    endpoint: http") {
            Some(rest) => format!("    endpoint: http{rest}/chat/completions\n"),
            None => format!("{line}\n"),
        })
        .collect()
}

#[test]
fn the_bundled_specs_hash_as_before_the_split() {
    // The lock's `spec_inputs_sha256` of each spec as commit 329aa56 computed it, with the
    // endpoints written as the full URLs they had then: nothing but the endpoints has changed.
    assert_eq!(
        hash_with("simulated", full_path_endpoints),
        "4c30d8c71dd453d67ae15ad868960324926a016f4f3e551fb492a6f09f6fe2c8"
    );
    assert_eq!(
        hash_with("reference", full_path_endpoints),
        "f516e2491abf2e0d0cc988822648c434d3cba50299f87d9bd827b64d2908eb22"
    );
    assert_eq!(
        hash_with("local-llama", full_path_endpoints),
        "106f895ed1197e24b3d654fab189ff436ec6c012dccce8157daf5c27da6c5ee3"
    );
    // The simulated spec has only `sim://` endpoints; the other two now hash differently.
    assert_eq!(
        hash_of("simulated"),
        hash_with("simulated", full_path_endpoints)
    );
    assert_ne!(
        hash_of("reference"),
        hash_with("reference", full_path_endpoints)
    );
    assert_ne!(
        hash_of("local-llama"),
        hash_with("local-llama", full_path_endpoints)
    );
}

#[test]
fn an_unknown_key_and_a_bad_plan_size_are_named_with_the_generic_problems() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("workflows/micro-single-task/specs/simulated.yaml"),
    )
    .unwrap();
    let bad = format!("{text}\nplanz: 1\n").replace("top_p: 1", "top_p: 7");
    let path = tmp.path().join("spec.yaml");
    std::fs::write(&path, bad).unwrap();
    let err = LoadedSpec::load_checked(&path, |s| MicroSingleTask.check_spec(s))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("planz: unknown section"), "{err}");
    assert!(err.contains("request.top_p: 7"), "{err}");
}

#[test]
fn plan_sizes_left_out_hash_as_their_defaults_written_out() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("workflows/micro-single-task/specs/simulated.yaml"),
    )
    .unwrap();
    let explicit = "plans:\n  full_items_per_family: 200\n  smoke_items_per_family: 1\n  smoke_max_attempts: 2\n";
    assert!(text.contains(explicit));
    let hash = |body: &str| {
        let path = tmp.path().join("spec.yaml");
        std::fs::write(&path, body).unwrap();
        let spec = LoadedSpec::load_checked(&path, |s| MicroSingleTask.check_spec(s)).unwrap();
        spec_inputs_sha256(&spec)
    };
    let none = hash(&text.replace(explicit, ""));
    let some = hash(&text.replace(explicit, "plans: {smoke_max_attempts: 2}\n"));
    let all = hash(&text);
    assert_eq!(none, all);
    assert_eq!(some, all);
    assert_ne!(
        hash(&text.replace("smoke_max_attempts: 2", "smoke_max_attempts: 1")),
        all
    );
}
