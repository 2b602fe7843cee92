//! Crash safety of the real binary: a full run killed with SIGKILL at seeded random moments and
//! resumed each time ends with exactly one committed record per planned request (none lost, none
//! duplicated); SIGINT stops cleanly with the run resumable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use coordinator_support::kill::{
    Lcg, check_invariants, full_args, interrupt, result_lines, run_until_killed,
};
use coordinator_support::*;
use openbench_common::rundir as layout;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn sigkill_at_random_moments_loses_and_duplicates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let providers: Vec<Prov> = PROFILES.iter().map(|p| Prov::sim(p)).collect();
    let spec = write_spec(tmp.path(), &data, &providers, 6, 0.01, 400);
    let spec_s = spec.to_str().unwrap().to_string();
    let o = run_bin(tmp.path(), &["init", "--spec", &spec_s], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = printed_run_dir(&o.stdout);
    let dir_s = dir.to_str().unwrap().to_string();

    // Each kill lands after a seeded random number of new records plus a random few ms, so it
    // hits every phase: mid-request, mid-write, between rounds.
    let mut rng = Lcg(0x5eed_0001);
    let mut kills = 0;
    for _ in 0..5 {
        let target = result_lines(&dir) + rng.next_in(1, 30) as usize;
        let extra = Duration::from_millis(rng.next_in(0, 40));
        if run_until_killed(tmp.path(), &spec_s, &dir, Some(target), extra, |_| {}) {
            kills += 1;
        }
        check_invariants(&dir, true, 10);
    }
    assert!(kills >= 4, "only {kills} kills landed mid-run");
    // A torn last line (a kill inside a write) is dropped by the resume, not parsed.
    for name in [layout::FULL_RESULTS, layout::STREAM_EVENTS] {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join(name))
            .unwrap();
        std::io::Write::write_all(&mut f, b"{\"schema_version\":1,\"request_id\":\"req-tor")
            .unwrap();
    }
    // That is a state a kill can leave: the checks right after a kill accept it.
    check_invariants(&dir, true, 10);

    let o = run_bin(tmp.path(), &full_args(&spec_s, &dir_s), &[]);
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    check_invariants(&dir, false, 10);
    let plan = planned(&dir.join(layout::FULL_PLAN));
    let counts = committed_counts(&records(&dir.join(layout::FULL_RESULTS)));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(layout::RUN_MANIFEST)).unwrap()).unwrap();
    // A kill takes the in-process probe down with the coordinator, so it leaves no harness
    // record; and the specs' harness grace is far beyond what load adds. The final resume
    // therefore completes the run.
    assert!(o.status.success(), "{out}");
    assert_eq!(manifest["status"], "complete", "{out} {manifest}");
    assert_eq!(
        counts.len(),
        plan.len(),
        "every planned request has its one record"
    );
    let harness: Vec<String> = records(&dir.join(layout::FULL_RESULTS))
        .into_iter()
        .filter(|r| r.outcome == openbench_common::record::Outcome::HarnessError)
        .map(|r| format!("{}: {:?}", r.request_id, r.error_message))
        .collect();
    assert_eq!(harness, Vec::<String>::new(), "harness failures");
    // One session per launch that got as far as opening the run: the five killed ones (a kill
    // can land before a session starts) and the final resume.
    let sessions = manifest["sessions"].as_u64().unwrap();
    assert!((2..=6).contains(&sessions), "{sessions} sessions");
}

#[test]
fn sigint_stops_after_the_round_and_the_run_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let slow = Prov {
        key: "slow".into(),
        profile: "plain".into(),
        extra: "    extra_headers: {x-sim-schedule: \"0,150\"}\n".into(),
    };
    let spec = write_spec(
        tmp.path(),
        &data,
        &[Prov::sim("plain"), slow],
        4,
        0.01,
        5_000,
    );
    let spec_s = spec.to_str().unwrap().to_string();
    let o = run_bin(tmp.path(), &["init", "--spec", &spec_s], &[]);
    let dir = printed_run_dir(&o.stdout);
    let dir_s = dir.to_str().unwrap().to_string();
    let child = Command::new(bin())
        .current_dir(tmp.path())
        .args(full_args(&spec_s, &dir_s))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first round is on disk, then interrupt.
    let rounds = dir.join(layout::ROUNDS);
    let started = Instant::now();
    while lines(&rounds).is_empty() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    interrupt(&child);
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(130), "{out}");
    assert!(out.contains("resume with"), "{out}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(layout::RUN_MANIFEST)).unwrap()).unwrap();
    assert_eq!(manifest["status"], "interrupted");
    let done = lines(&rounds).len();
    assert!(done < 12, "stopped early: {done} rounds");
    // Every round it started, it finished: no lane of a started round is missing.
    let recs = records(&dir.join(layout::FULL_RESULTS));
    assert_eq!(recs.len(), done * 2);

    let o = run_bin(tmp.path(), &full_args(&spec_s, &dir_s), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    check_invariants(&dir, false, 10);
    assert_eq!(
        committed_counts(&records(&dir.join(layout::FULL_RESULTS))).len(),
        24
    );
}
