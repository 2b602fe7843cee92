#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A run that fails part-way is published, not lost, through the real binary and real signals:
//! a run whose spec publishes (`results: {publish: true}`) interrupted by SIGINT checkpoints and
//! publishes itself as `interrupted`; resumed and SIGKILLed, it cannot publish itself, and
//! `publish --run-dir` afterwards stores it as `failed` in its place; resumed to the end, it
//! publishes itself as `complete`, replacing the unfinished publication; publishing any of these
//! states again changes nothing. `history` lists the unfinished run, marked, but trends and
//! compares only the complete runs around it, and `--baseline` refuses it.

mod coordinator_support;
mod results_store_support;

use coordinator_support::kill::{full_args, interrupt, result_lines, run_until_killed};
use coordinator_support::*;
use openbench_common::rundir as layout;
use results_store_support::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Items per family: 4 × 3 families = 12 rounds of 2 lanes, 24 requests.
const ITEMS: usize = 4;
const REQUESTS: usize = 3 * ITEMS * 2;

/// A publishing spec of two lanes, one 150 ms per request (real time), so a run lasts about two
/// seconds: long enough to be interrupted and killed mid-way.
fn publishing_spec(dir: &Path) -> String {
    let data = sample_dataset(dir, "data", 20261204);
    let slow = Prov {
        key: "slow".into(),
        profile: "plain".into(),
        extra: "    extra_headers: {x-sim-schedule: \"0,150\"}\n".into(),
    };
    let spec = write_spec(dir, &data, &[Prov::sim("plain"), slow], ITEMS, 0.01, 5_000);
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, format!("{text}results:\n  publish: true\n")).unwrap();
    spec.to_str().unwrap().to_string()
}

fn manifest_status(dir: &Path) -> String {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(layout::RUN_MANIFEST)).unwrap()).unwrap();
    manifest["status"].as_str().unwrap().to_string()
}

/// A fresh full run of `spec` to its end; it publishes itself (complete) to `store`.
fn complete_run(cwd: &Path, spec: &str, store: &str, approval: &str) -> String {
    let o = run_bin(
        cwd,
        &[
            "run",
            "--spec",
            spec,
            "--full",
            "--approve-full",
            "--approval-id",
            approval,
        ],
        &[("OPENBENCH_STORE", store)],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("(complete, {REQUESTS} requests)")),
        "{}",
        text(&o)
    );
    let dir = printed_run_dir(&o.stdout);
    dir.file_name().unwrap().to_str().unwrap().to_string()
}

/// The runs table of `history.md`: (run id, status, requests) per row, in order.
fn history_runs(md: &str) -> Vec<(String, String, String)> {
    section(md, "Runs")
        .iter()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| # "))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            (cells[1].into(), cells[2].into(), cells[4].into())
        })
        .collect()
}

/// The run labels of the trend table rows (`#1 run-…`), in order.
fn trend_rows(md: &str) -> Vec<String> {
    section(md, "Trends")
        .iter()
        .filter(|l| l.starts_with("| #"))
        .map(|l| {
            l.split(" | ")
                .next()
                .unwrap()
                .trim_start_matches("| ")
                .to_string()
        })
        .collect()
}

/// The stored runs when the store holds the complete run `first` and `other`, by run id.
fn with_first(first: &str, other: (String, String, i64)) -> Vec<(String, String, i64)> {
    let mut all = vec![
        (first.to_string(), "complete".into(), REQUESTS as i64),
        other,
    ];
    all.sort();
    all
}

/// Newline-terminated records on disk, each one committed request (no harness faults here).
fn committed(dir: &Path) -> usize {
    result_lines(dir)
}

#[test]
fn a_run_interrupted_then_killed_is_published_unfinished_and_replaced_once_complete() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let spec = publishing_spec(cwd);
    // `run` publishes to the default store, `openbench-results.sqlite` in its working directory.
    let store_path = cwd.join("openbench-results.sqlite");
    let store = store_path.to_str().unwrap();
    // Run 1 of the store's history: complete.
    let before = complete_run(cwd, &spec, store, "B-1");
    let o = run_bin(cwd, &["init", "--spec", &spec], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = printed_run_dir(&o.stdout);
    let dir_s = dir.to_str().unwrap().to_string();
    let run_id = dir.file_name().unwrap().to_str().unwrap().to_string();

    // Ctrl-C once the first round is on disk: the run finishes its round, checkpoints, exits 130
    // and publishes itself as interrupted with every record it committed.
    let child = Command::new(bin())
        .current_dir(cwd)
        .args(full_args(&spec, &dir_s))
        .env_remove("OPENBENCH_STORE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rounds = dir.join(layout::ROUNDS);
    let started = Instant::now();
    while lines(&rounds).is_empty() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    interrupt(&child);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert_eq!(manifest_status(&dir), "interrupted");
    let first = committed(&dir);
    assert!(
        (2..REQUESTS).contains(&first),
        "{first} records after SIGINT"
    );
    assert!(
        text(&o).contains(&format!(
            "published: run {run_id} (interrupted, {first} requests) to openbench-results.sqlite "
        )),
        "{}",
        text(&o)
    );
    assert_eq!(
        stored(store),
        (
            with_first(
                &before,
                (run_id.clone(), "interrupted".into(), first as i64)
            ),
            (REQUESTS + first) as i64
        )
    );

    // Resumed and SIGKILLed two rounds later: a killed process publishes nothing, so the store
    // still holds the interrupted state, and the manifest still says `running`.
    assert!(
        run_until_killed(cwd, &spec, &dir, Some(first + 4), Duration::ZERO, |_| {}),
        "the kill landed after the run ended"
    );
    assert_eq!(manifest_status(&dir), "running");
    assert!(
        stored(store)
            .0
            .contains(&(run_id.clone(), "interrupted".into(), first as i64))
    );
    // `publish --run-dir` afterwards records it as failed, in place of the interrupted state.
    // A kill inside a write can leave a torn last line, which is not a record.
    let killed = committed(&dir);
    assert!((first + 4..REQUESTS).contains(&killed), "{killed} records");
    let said = publish(cwd, store, &dir);
    assert!(
        said.starts_with(&format!(
            "published, replacing its earlier unfinished publication: run {run_id} \
             (failed, {killed} requests)"
        )),
        "{said}"
    );
    assert_eq!(
        stored(store),
        (
            with_first(&before, (run_id.clone(), "failed".into(), killed as i64)),
            (REQUESTS + killed) as i64
        )
    );
    let again = publish(cwd, store, &dir);
    assert!(
        again.starts_with(&format!(
            "already published, unchanged: run {run_id} (failed"
        )),
        "{again}"
    );

    // Run 3: complete. `history` lists the failed run, marked, and compares run 1 with run 3;
    // the trend tables hold runs 1 and 3 only (2 lanes × pooled and 3 families each).
    let after = complete_run(cwd, &spec, store, "C-1");
    let requests = REQUESTS.to_string();
    let (code, md) = history(cwd, store, &cwd.join("history-failed"), &[]);
    assert_eq!(code, Some(0), "{md}");
    assert_eq!(
        history_runs(&md),
        [
            (before.clone(), "complete".into(), requests.clone()),
            (
                run_id.clone(),
                "failed (unfinished: not compared)".into(),
                killed.to_string()
            ),
            (after.clone(), "complete".into(), requests.clone()),
        ]
    );
    assert!(md.contains("\nCompared: #1 → #3.\n"), "{md}");
    let (one, three) = (format!("#1 {before}"), format!("#3 {after}"));
    let expected: Vec<String> = (0..2 * 4)
        .flat_map(|_| [one.clone(), three.clone()])
        .collect();
    assert_eq!(trend_rows(&md), expected, "{md}");
    // The failed run cannot be a baseline.
    let o = store_cmd(
        cwd,
        store,
        &["history", "--out", "refused", "--baseline", &run_id],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains(&format!(
            "history --baseline {run_id}: the run is stored as failed: only a complete run can \
             be a baseline"
        )),
        "{}",
        text(&o)
    );

    // Resumed to the end: it publishes itself as complete, replacing the failed publication.
    let o = run_bin(
        cwd,
        &full_args(&spec, &dir_s),
        &[("OPENBENCH_STORE", store)],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(manifest_status(&dir), "complete");
    assert!(
        text(&o).contains(&format!(
            "published, replacing its earlier unfinished publication: run {run_id} \
             (complete, {REQUESTS} requests)"
        )),
        "{}",
        text(&o)
    );
    let mut all = vec![
        (before.clone(), "complete".to_string(), REQUESTS as i64),
        (run_id.clone(), "complete".into(), REQUESTS as i64),
        (after.clone(), "complete".into(), REQUESTS as i64),
    ];
    all.sort();
    assert_eq!(stored(store), (all, 3 * REQUESTS as i64));
    // Now complete, it is compared in its place between runs 1 and 3.
    let (_, md) = history(cwd, store, &cwd.join("history-complete"), &[]);
    assert_eq!(
        history_runs(&md)[1],
        (run_id.clone(), "complete".into(), requests)
    );
    assert!(md.contains("\nCompared: #1 → #2, #2 → #3.\n"), "{md}");
    assert_eq!(trend_rows(&md).len(), 2 * 4 * 3, "{md}");
    let again = publish(cwd, store, &dir);
    assert!(
        again.starts_with(&format!(
            "already published, unchanged: run {run_id} (complete, {REQUESTS} requests)"
        )),
        "{again}"
    );
}
