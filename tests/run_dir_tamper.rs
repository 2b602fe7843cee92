//! A run directory is tamper-evident, and `publish` opens it exactly as `report` does (issue 36,
//! class 2). Through the real binary: a FIFO or a 2 GiB sparse file in place of `run-lock.json`
//! (or a FIFO named as the run directory) is refused at once by both, naming the file; a record whose value was edited, records deleted,
//! and a manifest edited to say `complete` after a SIGKILL are refused by both, naming the line
//! (or what the manifest lacks); a resume of the killed run extends the records chain and the
//! finished run then reports and publishes with its chain verified; a run without a chain (an
//! older run) is reported as not tamper-evident rather than refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod results_store_support;

use coordinator_support::kill::{full_args, result_lines, run_until_killed};
use coordinator_support::*;
use openbench_common::rundir::{self as layout, RunStatus};
use openbench_coordinator::{RunDir, run_full};
use results_store_support::{publish, store_cmd, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A complete full run of one simulated lane (3 families × 2 items: 6 records).
async fn complete_run(tmp: &Path) -> PathBuf {
    let data = sample_dataset(tmp, "data", 20261206);
    let spec = write_spec(tmp, &data, &[Prov::sim("plain")], 2, 0.01, 1000);
    let inputs = inputs(&spec);
    let dir = RunDir::create(&inputs, Some("T-1"), "test").unwrap().dir;
    let run = RunDir::open(&inputs, &dir, "test").unwrap();
    let outcome = run_full(&inputs, &run, "T-1", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    dir
}

/// Runs the binary, killing it after 10 s (a command that hangs fails the test, never the
/// suite); returns its output and how long it ran.
fn bounded(cwd: &Path, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = Command::new(bin())
        .current_dir(cwd)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(10) {
            child.kill().unwrap();
            let o = child.wait_with_output().unwrap();
            panic!("{args:?} hung for 10 s: {}", text(&o));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let o = child.wait_with_output().unwrap();
    (o, started.elapsed())
}

/// `report` and `publish` of `dir` both fail; their stderr, each.
fn both_refuse(tmp: &Path, dir: &Path) -> [String; 2] {
    let store = tmp.join("store.sqlite");
    let d = dir.to_str().unwrap();
    let s = store.to_str().unwrap();
    let (report, took_r) = bounded(tmp, &["report", "--run-dir", d]);
    let (publish, took_p) = bounded(tmp, &["publish", "--run-dir", d, "--store", s]);
    println!("report ended in {took_r:?}, publish in {took_p:?}");
    assert!(!report.status.success(), "{}", text(&report));
    assert!(!publish.status.success(), "{}", text(&publish));
    [report, publish].map(|o| String::from_utf8_lossy(&o.stderr).to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_or_a_huge_sparse_lock_is_refused_at_once_by_report_and_publish() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = complete_run(tmp.path()).await;
    let lock = dir.join(layout::RUN_LOCK);
    let saved = std::fs::read(&lock).unwrap();
    std::fs::remove_file(&lock).unwrap();
    let made = Command::new("mkfifo").arg(&lock).status().unwrap();
    assert!(made.success());
    for err in both_refuse(tmp.path(), &dir) {
        assert!(
            err.contains("run-lock.json is a FIFO, not a regular file"),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    // 2 GiB of holes: refused by its size before a byte is read.
    std::fs::remove_file(&lock).unwrap();
    std::fs::File::create(&lock)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    for err in both_refuse(tmp.path(), &dir) {
        assert!(
            err.contains("run-lock.json: larger than the 268435456-byte limit"),
            "{err}"
        );
    }
    // A FIFO named as the run directory itself: refused, not waited on.
    let fifo_dir = tmp.path().join("fifo-dir");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo_dir)
            .status()
            .unwrap()
            .success()
    );
    for err in both_refuse(tmp.path(), &fifo_dir) {
        assert!(err.contains("fifo-dir is not a folder"), "{err}");
    }
    // The lock put back: both read the run again, its chain verified.
    std::fs::write(&lock, saved).unwrap();
    let (o, _) = bounded(tmp.path(), &["report", "--run-dir", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("records: 6 line(s), chain verified"),
        "{}",
        text(&o)
    );
    let store = tmp.path().join("store.sqlite");
    let printed = publish(tmp.path(), store.to_str().unwrap(), &dir);
    assert!(
        printed.contains("records: 6 line(s), chain verified"),
        "{printed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_or_deleted_record_is_refused_naming_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = complete_run(tmp.path()).await;
    let results = dir.join(layout::FULL_RESULTS);
    let original = std::fs::read_to_string(&results).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    assert_eq!(lines.len(), 6);

    // Line 3's e2e_ms made 1 ms faster: still valid JSON, still a record of this run and plan.
    let mut record: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
    let e2e = record["e2e_ms"].as_f64().unwrap();
    record["e2e_ms"] = serde_json::json!(e2e - 1.0);
    let mut edited: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    edited[2] = record.to_string();
    std::fs::write(&results, edited.join("\n") + "\n").unwrap();
    for err in both_refuse(tmp.path(), &dir) {
        assert!(
            err.contains("results.jsonl: line 3 differs from the line committed there"),
            "{err}"
        );
    }

    // The last two records deleted.
    std::fs::write(&results, lines[..4].join("\n") + "\n").unwrap();
    for err in both_refuse(tmp.path(), &dir) {
        assert!(
            err.contains("6 record line(s) were committed, the file holds 4: line 5 onward"),
            "{err}"
        );
    }

    // Records and chain both cut back to 4 lines: the manifest's head (6 lines) still differs.
    let chain = layout::chain::chain_path(&results);
    let chain_text = std::fs::read(&chain).unwrap();
    std::fs::write(&chain, &chain_text[..4 * 65]).unwrap();
    for err in both_refuse(tmp.path(), &dir) {
        assert!(
            err.contains("it says `complete` with 6 committed line(s)")
                && err.contains("holds 4 line(s)"),
            "{err}"
        );
    }

    // Everything put back: an older run (no chain, no head) reads, named as not tamper-evident.
    std::fs::write(&results, &original).unwrap();
    std::fs::remove_file(&chain).unwrap();
    let manifest_path = dir.join(layout::RUN_MANIFEST);
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    manifest.as_object_mut().unwrap().remove("records_chain");
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let (o, _) = bounded(tmp.path(), &["report", "--run-dir", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("records: not tamper-evident (older run: no records chain)"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_killed_run_whose_manifest_says_complete_is_refused_and_a_resume_extends_the_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let data = sample_dataset(cwd, "data", 20261207);
    // One lane at 150 ms a request, 12 rounds: about two seconds, long enough to be killed.
    let slow = Prov {
        key: "slow".into(),
        profile: "plain".into(),
        extra: "    extra_headers: {x-sim-schedule: \"0,150\"}\n".into(),
    };
    let spec = write_spec(cwd, &data, &[slow], 4, 0.01, 5_000);
    let spec = spec.to_str().unwrap().to_string();
    let o = run_bin(cwd, &["init", "--spec", &spec], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = printed_run_dir(&o.stdout);
    let killed = run_until_killed(cwd, &spec, &dir, Some(3), Duration::ZERO, |_| {});
    assert!(killed, "the run ended before the kill");
    let on_disk = result_lines(&dir);
    assert!((3..12).contains(&on_disk), "{on_disk}");

    // The manifest edited to say `complete`: refused by both, naming what it lacks.
    let manifest_path = dir.join(layout::RUN_MANIFEST);
    let text_before = std::fs::read_to_string(&manifest_path).unwrap();
    assert!(
        text_before.contains("\"status\": \"running\""),
        "{text_before}"
    );
    std::fs::write(
        &manifest_path,
        text_before.replace("\"status\": \"running\"", "\"status\": \"complete\""),
    )
    .unwrap();
    for err in both_refuse(cwd, &dir) {
        assert!(
            err.contains("run-manifest.json: it says `complete` but carries no records chain"),
            "{err}"
        );
    }

    // Put back, the run resumes: the chain is verified, extended, and covers all 12 records.
    std::fs::write(&manifest_path, &text_before).unwrap();
    let dir_s = dir.to_str().unwrap().to_string();
    let o = run_bin(cwd, &full_args(&spec, &dir_s), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let (o, _) = bounded(cwd, &["report", "--run-dir", &dir_s]);
    assert!(
        text(&o).contains("records: 12 line(s), chain verified"),
        "{}",
        text(&o)
    );
    let store = cwd.join("store.sqlite");
    let printed = publish(cwd, store.to_str().unwrap(), &dir);
    assert!(printed.contains("(complete, 12 requests)"), "{printed}");
    // The published run cannot be edited afterwards either.
    let results = dir.join(layout::FULL_RESULTS);
    let body = std::fs::read_to_string(&results).unwrap();
    std::fs::write(
        &results,
        body.replacen("\"completed\"", "\"http_error\"", 1),
    )
    .unwrap();
    let o = store_cmd(
        cwd,
        store.to_str().unwrap(),
        &["publish", "--run-dir", &dir_s],
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("line 1 differs"), "{}", text(&o));
}
