//! A load sitting SIGKILLed mid-load through a remote probe, then resumed (issue 36 class 5): the
//! killed sitting's requests still in flight on the probe (50 users, each holding an upstream
//! stream that never answers) are nobody's any more. The probe cancels them (their calls were
//! dropped with the killed coordinator's connection; the resumed sitting's `OpenSession`
//! replaces their session), so the resumed sitting's users are admitted and measured: every
//! record is the probe's own timeout, none a "busy" harness record. Before, the orphans held the
//! lane until their deadline, and the resumed sitting wrote 55,312 "busy" records in 4 s and
//! ended `complete`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use coordinator_support::held::{holding_upstream, load_spec, start_probe};
use coordinator_support::{bin, lines, run_bin};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const USERS: usize = 50;
/// Long enough that an orphan not cancelled would still hold its place when the resumed
/// sitting's users arrive (the resume takes about a second to start).
const TIMEOUT_MS: u64 = 8_000;

#[test]
fn a_load_sitting_resumed_after_sigkill_measures_its_users() {
    let tmp = tempfile::tempdir().unwrap();
    let (upstream, accepted) = holding_upstream();
    let spec_path = tmp.path().join("spec.yaml");
    let spec_s = spec_path.to_str().unwrap().to_string();
    let write_spec = |probe: &str| {
        let spec = load_spec(upstream, probe, USERS, 4, TIMEOUT_MS);
        std::fs::write(&spec_path, spec).unwrap();
    };
    write_spec("http://127.0.0.1:1");
    let probe = start_probe(tmp.path(), &spec_s, "far");
    write_spec(&format!("http://{}", probe.addr));

    let o = run_bin(
        tmp.path(),
        &["init", "--workflow", "load", "--spec", &spec_s],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = coordinator_support::printed_run_dir(&o.stdout);
    let dir_s = dir.to_str().unwrap().to_string();
    let args = [
        "run",
        "--workflow",
        "load",
        "--spec",
        &spec_s,
        "--run-dir",
        &dir_s,
        "--full",
        "--approve-full",
        "--approval-id",
        "T-KILL",
    ];

    // The first sitting: killed once all its users hold an upstream stream.
    let mut child = Command::new(bin())
        .current_dir(tmp.path())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while accepted.load(Ordering::SeqCst) < USERS && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        USERS,
        "every user in flight"
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let killed_at = Instant::now();
    assert!(
        lines(&dir.join("raw/results.jsonl")).is_empty(),
        "killed before any request ended"
    );

    // The resumed sitting, at once: the orphans' deadline is still far.
    let o = run_bin(tmp.path(), &args, &[]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let records = lines(&dir.join("raw/results.jsonl"));
    let mut by_outcome = std::collections::BTreeMap::<String, usize>::new();
    for r in &records {
        let key = format!("{}: {}", r["outcome"], r["error_message"]);
        *by_outcome.entry(key).or_default() += 1;
    }
    eprintln!(
        "resume took {:?}: exit {:?}, {} upstream connections, records {by_outcome:?}",
        killed_at.elapsed(),
        o.status,
        accepted.load(Ordering::SeqCst)
    );
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join(openbench_common::rundir::RUN_MANIFEST)).unwrap(),
    )
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert_eq!(manifest["status"], "complete", "{manifest}");
    // Measured: each of the 50 users' requests ended by the probe's deadline, none refused.
    assert!(records.len() >= USERS, "{} records: {text}", records.len());
    let harness: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["outcome"] != "timeout")
        .collect();
    assert!(harness.is_empty(), "{harness:?}");
}
