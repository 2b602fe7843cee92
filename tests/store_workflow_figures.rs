//! The results store reaches a workflow only through the `Workflow` trait: a run of a workflow
//! that hands it neither paired nor load figures (example-echo) is refused by name, before the
//! store is touched, instead of being scored as some other workflow's run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use coordinator_support::options;
use openbench_coordinator::{RunDir, prepare_inputs, run_smoke};
use openbench_example_echo::ExampleEcho;
use openbench_store::{Store, StoreError, load, publish};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_a_workflow_without_store_figures_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("data")).unwrap();
    std::fs::write(tmp.path().join("data/prompts.txt"), "alpha\nbravo\n").unwrap();
    let spec = tmp.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "benchmark: {slug: example, workflow: example-echo, schedule_version: echo-v1}
request: {temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 20000,
  harness_grace_ms: 60000}
providers:
  - {key: zai, endpoint: 'sim://zai', model: m, auth: {scheme: none}, max_tokens_field: max_tokens}
dataset: {source: data, manifest: prompts.txt}
simulator: {time_scale: 0.05, seed: 5}
run_root: runs
echo:
  phases:
    - {kind: closed_loop, name: closed, concurrency: 1, per_slot: 1}
",
    )
    .unwrap();
    let inputs = prepare_inputs(&spec, Arc::new(ExampleEcho), "test-code-digest").unwrap();
    let run = RunDir::create(&inputs, Some("T-1"), "test").unwrap();
    let smoke = run_smoke(&inputs, &run, &options(&inputs)).await.unwrap();
    assert!(smoke.passed, "{:?}", smoke.attempts);
    let run_dir = run.dir.clone();
    drop(run);

    let db = tmp.path().join("store.sqlite");
    let mut store = Store::open(&db.display().to_string()).unwrap();
    let err = publish::publish(&mut store, &run_dir, &ExampleEcho).unwrap_err();
    assert!(matches!(err, StoreError::Unverified { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: not published: workflow \"example-echo\" hands the store neither paired nor \
             load figures",
            run_dir.display()
        )
    );
    assert!(load::runs(&mut store).unwrap().is_empty());
}
