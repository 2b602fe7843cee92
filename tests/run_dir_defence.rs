//! A run directory defends itself against what a careless user or someone with write access to a
//! shared run folder can do to it: links planted in place of its files, a deleted lock file, an
//! edited run lock, records of another run or outside the plan. Each is refused, naming the file
//! (and line and request), and nothing outside the run directory is touched. And `init` refuses,
//! all at once, what `run` would refuse only later.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use coordinator_support::*;
use openbench_common::rundir::{self as layout, RunStatus};
use openbench_coordinator::{RunDir, run_full};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A one-lane simulated spec and its freshly created run directory (not held).
fn fresh_run(tmp: &Path) -> (PathBuf, PathBuf) {
    let data = sample_dataset(tmp, "data", 20260902);
    let spec = write_spec(tmp, &data, &[Prov::sim("plain")], 1, 0.01, 1000);
    let dir = RunDir::create(&inputs(&spec), Some("D-1"), "test")
        .unwrap()
        .dir;
    (spec, dir)
}

/// A complete full run of [`fresh_run`].
async fn complete_run(tmp: &Path) -> (PathBuf, PathBuf) {
    let (spec, dir) = fresh_run(tmp);
    let inputs = inputs(&spec);
    let run = RunDir::open(&inputs, &dir, "test").unwrap();
    let outcome = run_full(&inputs, &run, "D-1", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    (spec, dir)
}

/// Resumes the full run; the error's text.
async fn resume_refusal(spec: &Path, dir: &Path) -> String {
    let inputs = inputs(spec);
    let run = match RunDir::open(&inputs, dir, "test") {
        Ok(run) => run,
        Err(e) => return e.to_string(),
    };
    match run_full(&inputs, &run, "D-1", &options(&inputs)).await {
        Ok(outcome) => panic!("resumed: {:?}", outcome.status),
        Err(e) => e.to_string(),
    }
}

fn append_line(path: &Path, value: &serde_json::Value) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(f, "{value}").unwrap();
}

fn manifest_status(dir: &Path) -> String {
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(layout::RUN_MANIFEST)).unwrap()).unwrap();
    m["status"].as_str().unwrap_or_default().to_string()
}

#[test]
fn report_refuses_a_lock_file_linked_elsewhere_and_leaves_its_target_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, dir) = fresh_run(tmp.path());
    let target = tmp.path().join("precious.txt");
    std::fs::write(&target, b"precious\n").unwrap();
    let lock_file = dir.join(layout::WRITER_LOCK);
    std::fs::remove_file(&lock_file).unwrap();
    std::os::unix::fs::symlink(&target, &lock_file).unwrap();
    let o = run_bin(
        tmp.path(),
        &["report", "--run-dir", dir.to_str().unwrap()],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains(".writer.lock ->"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), b"precious\n");
}

#[test]
fn a_deleted_lock_file_admits_no_second_writer() {
    let tmp = tempfile::tempdir().unwrap();
    let (spec, dir) = fresh_run(tmp.path());
    let held = RunDir::open(&inputs(&spec), &dir, "run").unwrap();
    std::fs::remove_file(dir.join(layout::WRITER_LOCK)).unwrap();
    let args = [
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--run-dir",
        dir.to_str().unwrap(),
        "--full",
        "--approve-full",
        "--approval-id",
        "D-1",
    ];
    let o = run_bin(tmp.path(), &args, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "a second writer ran");
    assert!(err.contains("being written by another process"), "{err}");
    assert!(!dir.join(layout::FULL_RESULTS).exists());
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_refuses_a_results_file_linked_outside_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (spec, dir) = fresh_run(tmp.path());
    let outside = tmp.path().join("outside.jsonl");
    std::fs::write(&outside, b"").unwrap();
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join(layout::FULL_RESULTS)).unwrap();
    let err = resume_refusal(&spec, &dir).await;
    assert!(
        err.contains(&format!(
            "raw/results.jsonl -> {}, outside the run directory",
            outside.display()
        )),
        "{err}"
    );
    assert_eq!(std::fs::read(&outside).unwrap(), b"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_refuses_an_edited_run_lock_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let (spec, dir) = fresh_run(tmp.path());
    let lock_path = dir.join(layout::RUN_LOCK);
    let original = std::fs::read(&lock_path).unwrap();
    let mut lock: serde_json::Value = serde_json::from_slice(&original).unwrap();
    assert_eq!(lock["timeout_ms"], 1000);
    lock["timeout_ms"] = 60_000.into();
    std::fs::write(&lock_path, serde_json::to_vec_pretty(&lock).unwrap()).unwrap();
    // The manifest recorded the lock's hash when the run was made.
    let err = resume_refusal(&spec, &dir).await;
    assert!(
        err.contains("run-lock.json was changed after it was written"),
        "{err}"
    );
    // Without that record (an edited manifest too), the field itself is named.
    std::fs::remove_file(dir.join(layout::RUN_MANIFEST)).unwrap();
    let err = resume_refusal(&spec, &dir).await;
    assert!(
        err.contains("run-lock.json field timeout_ms was edited (it holds 60000, the locked inputs give 1000)"),
        "{err}"
    );
    assert!(!dir.join(layout::FULL_RESULTS).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_refuses_an_unplanned_record_naming_it_and_keeps_the_run_complete() {
    let tmp = tempfile::tempdir().unwrap();
    let (spec, dir) = complete_run(tmp.path()).await;
    let results = dir.join(layout::FULL_RESULTS);
    let planned = records(&results).len();
    let mut extra = lines(&results)[0].clone();
    extra["request_id"] = "req-unplanned".into();
    append_line(&results, &extra);
    let err = resume_refusal(&spec, &dir).await;
    let line = planned + 1;
    assert!(
        err.contains(&format!(
            "raw/results.jsonl: 1 record(s) this run did not write: line {line}: req-unplanned \
             (not a request of full-plan.json)"
        )),
        "{err}"
    );
    assert_eq!(manifest_status(&dir), "complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_and_report_refuse_records_of_another_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (spec, dir) = complete_run(tmp.path()).await;
    let results = dir.join(layout::FULL_RESULTS);
    let mut foreign = lines(&results)[1].clone();
    let id = foreign["request_id"].as_str().unwrap().to_string();
    let run_id = foreign["run_id"].as_str().unwrap().to_string();
    foreign["run_id"] = "run-elsewhere".into();
    append_line(&results, &foreign);
    let line = lines(&results).len();
    let err = resume_refusal(&spec, &dir).await;
    let named = format!("line {line}: {id} (run_id \"run-elsewhere\", this run is {run_id:?})");
    assert!(err.contains(&named), "{err}");
    assert_eq!(manifest_status(&dir), "complete");

    let o = run_bin(
        tmp.path(),
        &["report", "--run-dir", dir.to_str().unwrap()],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "report counted another run's record");
    assert!(
        err.contains(&format!(
            "line 2, {line}: {id} (run_id \"run-elsewhere\", this run is {run_id:?})"
        )),
        "{err}"
    );
}

#[test]
fn init_lists_every_problem_run_would_meet_and_makes_no_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let providers = [
        Prov::sim("plain"),
        Prov::sim("no-such-profile"),
        Prov::sim("spaced"),
    ];
    let spec = write_spec(tmp.path(), &data, &providers, 1, 0.01, 1000);
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("sim://spaced", "https://exa mple.test/v1")
        .replace(
            "full_items_per_family: 1",
            "full_items_per_family: 18446744073709551615",
        );
    std::fs::write(&spec, text).unwrap();
    let o = run_bin(tmp.path(), &["init", "--spec", spec.to_str().unwrap()], &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "init accepted the spec");
    for part in [
        "providers[1] (no-such-profile).endpoint: unknown profile \"no-such-profile\"; known:",
        "providers[2] (spaced).endpoint: \"https://exa mple.test/v1\" is not a valid URL",
        "plans.full_items_per_family: 18446744073709551615 items per family, but family",
    ] {
        assert!(err.contains(part), "{part:?} missing from: {err}");
    }
    assert!(
        !tmp.path().join("runs").exists(),
        "init made a run directory"
    );
}
