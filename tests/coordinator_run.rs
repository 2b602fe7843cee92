//! The coordinator end to end on the embedded simulator: one terminal record per lane × round,
//! rotation, the round barrier, the lock refusing tampered inputs, the full-run guard and no
//! credential value anywhere in a run directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use coordinator_support::*;
use openbench_common::rundir as layout;
use openbench_coordinator::{RunDir, RunStatus, run_full, run_smoke};
use std::collections::{BTreeMap, BTreeSet};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_simulated_run_writes_one_record_per_lane_and_round() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let providers: Vec<Prov> = PROFILES.iter().map(|p| Prov::sim(p)).collect();
    let spec = write_spec(tmp.path(), &data, &providers, 4, 0.01, 400);
    let inputs = inputs(&spec);
    let run = RunDir::create(&inputs, Some("T-1"), "test").unwrap();
    // A smoke first, in the same run directory (its own files), then the full run.
    let smoke = run_smoke(&inputs, &run, &options(&inputs)).await.unwrap();
    assert!(smoke.finished);
    assert_eq!(records(&run.dir.join(layout::smoke_results(1))).len(), 30);
    let outcome = run_full(&inputs, &run, "T-1", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.sitting.rounds_executed, 12);
    assert_eq!(outcome.sitting.records_written, 120);

    // Let go of the run directory so the resumes below may take its writer lock.
    let dir = &run.dir.clone();
    drop(run);
    let plan = planned(&dir.join(layout::FULL_PLAN));
    assert_eq!(plan.len(), 120);
    let recs = records(&dir.join(layout::FULL_RESULTS));
    assert_eq!(recs.len(), 120, "exactly one record per lane × round");
    let mut seen = BTreeSet::new();
    for r in &recs {
        assert!(
            seen.insert((r.lane.clone(), r.round_index)),
            "duplicate {} {}",
            r.lane,
            r.round_index
        );
    }
    let want: BTreeSet<(String, u64)> = plan.iter().map(|(_, l, i)| (l.clone(), *i)).collect();
    assert_eq!(seen, want);
    let ids: BTreeSet<&str> = recs.iter().map(|r| r.request_id.as_str()).collect();
    let planned_ids: BTreeSet<&str> = plan.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, planned_ids);

    // Rotation: round r launches the base order rotated left by r mod 10.
    let rounds = lines(&dir.join(layout::ROUNDS));
    assert_eq!(rounds.len(), 12);
    for line in &rounds {
        let r = line["round_index"].as_u64().unwrap() as usize;
        let order: Vec<&str> = line["launch_order"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut want = PROFILES.to_vec();
        want.rotate_left(r % 10);
        assert_eq!(order, want, "round {r}");
        assert!(line["launch_skew_ms"].as_f64().unwrap() >= 0.0);
    }
    assert!(rounds[0]["coordinator_overhead_ms"].is_null());
    for line in &rounds[1..] {
        let overhead = line["coordinator_overhead_ms"].as_f64();
        assert!(
            overhead.is_some_and(|ms| ms >= 0.0),
            "round {}: coordinator_overhead_ms {overhead:?}",
            line["round_index"]
        );
    }

    // No harness failure: the specs' harness grace (HARNESS_GRACE_MS) is far beyond what load
    // adds, so one here is a real fault, never noise to tolerate.
    let harness: Vec<(&str, Option<&str>)> = recs
        .iter()
        .filter(|r| r.outcome == openbench_common::record::Outcome::HarnessError)
        .map(|r| (r.request_id.as_str(), r.error_message.as_deref()))
        .collect();
    assert_eq!(harness, vec![], "harness failures");

    // Answers and events belong to committed requests only, once each.
    let answers = lines(&dir.join(layout::RECONSTRUCTED));
    assert_eq!(answers.len(), 120);
    let mut event_keys = BTreeSet::new();
    for e in lines(&dir.join(layout::STREAM_EVENTS)) {
        let id = e["request_id"].as_str().unwrap().to_string();
        assert!(planned_ids.contains(id.as_str()));
        assert!(event_keys.insert((id, e["index"].as_u64().unwrap())));
    }

    // Lock, selection, manifest.
    let lock: openbench_common::rundir::RunLock =
        serde_json::from_slice(&std::fs::read(dir.join(layout::RUN_LOCK)).unwrap()).unwrap();
    assert_eq!(lock.code_sha256, "test-code-digest");
    assert_eq!(lock.approval_id.as_deref(), Some("T-1"));
    let selection: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(layout::SELECTION)).unwrap()).unwrap();
    assert_eq!(
        selection["dataset_release_hash"],
        lock.dataset_release_hash.as_str()
    );
    assert_eq!(
        selection["families"]["ticket-triage"]["full_family_order"]
            .as_array()
            .unwrap()
            .len(),
        6
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(layout::RUN_MANIFEST)).unwrap()).unwrap();
    assert_eq!(manifest["status"], "complete");
    assert_eq!(manifest["approval_id"], "T-1");
    assert_eq!(manifest["mode"], "full");
    assert!(!manifest["smoke"].as_array().unwrap().is_empty());
    let start = manifest["period_start"].as_str().unwrap();
    let end = manifest["period_end"].as_str().unwrap();
    assert!(start <= end, "{start} .. {end}");
    assert_eq!(
        manifest["artifacts"][layout::FULL_PLAN]
            .as_str()
            .map(str::len),
        Some(64),
        "the plan's sha256 in the manifest"
    );

    // `watch --once` on the finished run.
    let o = run_bin(
        tmp.path(),
        &["watch", "--once", "--run-dir", dir.to_str().unwrap()],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let snap: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(snap["rounds_total"], 12);
    assert_eq!(snap["requests_done"], 120);
    assert_eq!(snap["lanes"].as_array().unwrap().len(), 10);

    // Resuming a finished run executes nothing; a different approval id is refused.
    let again = run_full(
        &inputs,
        &RunDir::open(&inputs, dir, "test").unwrap(),
        "T-1",
        &options(&inputs),
    )
    .await
    .unwrap();
    assert_eq!(again.sitting.records_written, 0);
    assert_eq!(again.status, RunStatus::Complete);
    assert_eq!(records(&dir.join(layout::FULL_RESULTS)).len(), 120);
    let err = run_full(
        &inputs,
        &RunDir::open(&inputs, dir, "test").unwrap(),
        "OTHER",
        &options(&inputs),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("T-1"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_lane_holds_the_next_round() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    // The slow lane streams on an exact, unscaled schedule: its answer ends 250 ms after start.
    let slow = Prov {
        key: "slow".into(),
        profile: "plain".into(),
        extra: "    extra_headers: {x-sim-schedule: \"0,250\"}\n".into(),
    };
    let providers = vec![
        Prov::sim("plain"),
        slow,
        Prov {
            key: "fast".into(),
            profile: "plain".into(),
            extra: String::new(),
        },
    ];
    let spec = write_spec(tmp.path(), &data, &providers, 2, 0.01, 5_000);
    let inputs = inputs(&spec);
    let run = RunDir::create(&inputs, None, "test").unwrap();
    let outcome = run_full(&inputs, &run, "B", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    let recs = records(&run.dir.join(layout::FULL_RESULTS));
    let by_lane: BTreeMap<(String, u64), &openbench_common::record::TerminalRecord> = recs
        .iter()
        .map(|r| ((r.lane.clone(), r.round_index), r))
        .collect();
    for round in 0..6u64 {
        let slow = by_lane[&("slow".to_string(), round)];
        assert!(slow.e2e_ms.unwrap() >= 250.0, "{:?}", slow.e2e_ms);
        let fast = by_lane[&("fast".to_string(), round)];
        // Measured on its own, not until the round ends: an E2E that waited for the slow lane
        // would be at least its 250 ms.
        assert!(
            fast.e2e_ms.unwrap() < 250.0,
            "fast lane e2e {:?}",
            fast.e2e_ms
        );
    }
    let rounds = lines(&run.dir.join(layout::ROUNDS));
    assert_eq!(rounds.len(), 6);
    for pair in rounds.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let round_ms = a["round_ms"].as_f64().unwrap();
        assert!(
            round_ms >= 250.0,
            "the round lasted as long as its slowest lane: {round_ms}"
        );
        let gap =
            b["released_offset_ms"].as_f64().unwrap() - a["released_offset_ms"].as_f64().unwrap();
        assert!(
            gap >= round_ms,
            "round {} released {gap} ms after the previous, before it ended ({round_ms} ms)",
            b["round_index"]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_refuses_changed_spec_adapters_dataset_or_code() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let spec = write_spec(tmp.path(), &data, &[Prov::sim("plain")], 1, 0.01, 1000);
    let original = std::fs::read_to_string(&spec).unwrap();
    let run_dir = RunDir::create(&inputs(&spec), None, "test").unwrap().dir;
    let held = RunDir::open(&inputs(&spec), &run_dir, "smoke").unwrap();
    // A second writer is refused at once, naming the holder; it may open once the first lets go.
    let err = RunDir::open(&inputs(&spec), &run_dir, "run")
        .unwrap_err()
        .to_string();
    let holder = format!("pid {} (smoke)", std::process::id());
    assert!(err.contains(&holder), "{err}");
    drop(held);

    let refuse = |inputs: &openbench_coordinator::RunInputs| {
        RunDir::open(inputs, &run_dir, "test")
            .unwrap_err()
            .to_string()
    };

    // The spec is compared as data without its probe addresses: a comment changes nothing.
    std::fs::write(&spec, format!("{original}# a comment\n")).unwrap();
    drop(RunDir::open(&inputs(&spec), &run_dir, "test").unwrap());

    std::fs::write(
        &spec,
        original.replace("max_output_tokens: 256", "max_output_tokens: 255"),
    )
    .unwrap();
    let err = refuse(&inputs(&spec));
    assert!(
        err.contains("spec changed") && !err.contains("adapters"),
        "{err}"
    );
    assert!(err.contains("run-lock.json"), "{err}");

    std::fs::write(&spec, original.replace("model: m-plain", "model: m-other")).unwrap();
    let err = refuse(&inputs(&spec));
    assert!(
        err.contains("spec changed") && err.contains("adapters changed"),
        "{err}"
    );

    std::fs::write(&spec, &original).unwrap();
    let mut code = inputs(&spec);
    code.code_sha256 = "another-build".into();
    let err = refuse(&code);
    assert!(
        err.contains("code changed") && !err.contains("spec"),
        "{err}"
    );

    // A different (valid) release in the same folder: same spec bytes, new release hash.
    sample_dataset(tmp.path(), "data", 99);
    let err = refuse(&inputs(&spec));
    assert!(
        err.contains("dataset changed") && !err.contains("spec"),
        "{err}"
    );
}

/// While one process writes a run directory, `report`, `smoke` and `run` on it are refused before
/// executing anything, naming the holder's pid; once it lets go, they proceed.
#[test]
fn a_second_writer_process_is_refused_naming_the_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let spec = write_spec(tmp.path(), &data, &[Prov::sim("plain")], 1, 0.01, 1000);
    let spec = spec.to_str().unwrap();
    let o = run_bin(tmp.path(), &["init", "--spec", spec], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = printed_run_dir(&o.stdout);
    let d = dir.to_str().unwrap();

    let held = layout::WriterLock::acquire(&dir, "held by the test").unwrap();
    let holder = format!("pid {} (held by the test)", std::process::id());
    let full = ["--full", "--approve-full", "--approval-id", "W-1"];
    let commands: [Vec<&str>; 3] = [
        vec!["report", "--run-dir", d],
        vec!["smoke", "--spec", spec, "--run-dir", d],
        [vec!["run", "--spec", spec, "--run-dir", d], full.to_vec()].concat(),
    ];
    for args in &commands {
        let o = run_bin(tmp.path(), args, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} was not refused");
        assert!(err.contains(&holder), "{args:?}: {err}");
        for results in [layout::smoke_results(1), layout::FULL_RESULTS.to_string()] {
            assert!(!dir.join(&results).exists(), "{args:?} wrote {results}");
        }
    }
    drop(held);
    let o = run_bin(tmp.path(), &["smoke", "--spec", spec, "--run-dir", d], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(records(&dir.join(layout::smoke_results(1))).len(), 3);
}

#[test]
fn full_run_guard_names_what_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let o = run_bin(tmp.path(), &["run", "--spec", "absent.yaml"], &[]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    for flag in ["--full", "--approve-full", "--approval-id"] {
        assert!(err.contains(flag), "{flag}: {err}");
    }
    let o = run_bin(
        tmp.path(),
        &[
            "run",
            "--full",
            "--approval-id",
            "X",
            "--spec",
            "absent.yaml",
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("missing: --approve-full") && !err.contains("missing: --full"),
        "{err}"
    );
    assert!(!tmp.path().join("runs").exists());
}

#[test]
fn no_credential_value_reaches_the_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let providers = vec![
        Prov {
            key: "zai".into(),
            profile: "zai".into(),
            extra: "    auth: {scheme: bearer, env: OBT_ZAI_KEY}\n".into(),
        },
        Prov {
            key: "modal".into(),
            profile: "modal".into(),
            extra: "    auth:\n      scheme: headers\n      headers: {Modal-Key: OBT_MODAL_ID, Modal-Secret: OBT_MODAL_SECRET}\n".into(),
        },
    ];
    let spec = write_spec(tmp.path(), &data, &providers, 1, 0.01, 1000);
    let secrets = [
        ("OBT_ZAI_KEY", "zk-9f1c0e7a-unique-secret-one"),
        ("OBT_MODAL_ID", "mid-4b2d88-unique-secret-two"),
    ];
    // The third credential comes from ./.env (the environment lacks it).
    let dotenv_secret = "msec-77aa31-unique-secret-three";
    std::fs::write(
        tmp.path().join(".env"),
        format!("OBT_MODAL_SECRET={dotenv_secret}\n"),
    )
    .unwrap();

    // Missing credentials are named before any network call, values never printed.
    let o = run_bin(
        tmp.path(),
        &["init", "--spec", spec.to_str().unwrap()],
        &secrets[..1],
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("OBT_MODAL_ID") && !err.contains(secrets[0].1),
        "{err}"
    );

    let o = run_bin(
        tmp.path(),
        &["smoke", "--spec", spec.to_str().unwrap()],
        &secrets,
    );
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    let dir = printed_run_dir(&o.stdout);
    assert!(dir.join(layout::smoke_results(1)).exists(), "{out}");
    let files = files_under(&dir);
    assert!(files.len() >= 6, "{files:?}");
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for secret in secrets.iter().map(|(_, v)| *v).chain([dotenv_secret]) {
            assert!(
                !text.contains(secret),
                "{} holds a credential value",
                file.display()
            );
        }
    }
    for secret in secrets.iter().map(|(_, v)| *v).chain([dotenv_secret]) {
        assert!(!out.contains(secret), "output holds a credential value");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke_retries_once_and_the_retry_is_a_fresh_draw() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    // `broken` answers HTTP 500 to everything, so attempt 1 fails and attempt 2 must run (and
    // fail again); `nebius` is a stochastic profile whose draws must differ between attempts.
    let broken = Prov {
        key: "broken".into(),
        profile: "plain".into(),
        extra: "    extra_headers: {x-sim-quirk: http-500}\n".into(),
    };
    let providers = vec![broken, Prov::sim("nebius")];
    let spec = write_spec(tmp.path(), &data, &providers, 2, 0.01, 400);
    let inputs = inputs(&spec);
    let run = RunDir::create(&inputs, None, "test").unwrap();
    let smoke = run_smoke(&inputs, &run, &options(&inputs)).await.unwrap();
    assert!(smoke.finished);
    assert!(!smoke.passed);
    assert_eq!(
        smoke.attempts.len(),
        2,
        "attempt 2 only after attempt 1 failed"
    );
    let first = records(&run.dir.join(layout::smoke_results(1)));
    let second = records(&run.dir.join(layout::smoke_results(2)));
    assert_eq!((first.len(), second.len()), (6, 6));
    for r in first
        .iter()
        .chain(&second)
        .filter(|r| r.provider == "broken")
    {
        assert_eq!(r.http_status, Some(500));
    }
    // The simulator's x-request-id is its per-request seed: fresh draws give fresh ids.
    let ids = |rs: &[openbench_common::record::TerminalRecord]| -> BTreeSet<String> {
        rs.iter()
            .filter(|r| r.provider == "nebius")
            .filter_map(|r| r.provider_request_id.clone())
            .collect()
    };
    let (a, b) = (ids(&first), ids(&second));
    assert_eq!(a.len(), 3, "{first:?}");
    assert!(
        a.is_disjoint(&b),
        "attempt 2 replayed attempt 1's draws: {a:?} {b:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_regions_make_two_lanes_per_provider_with_their_own_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let providers = vec![Prov::sim("baseten"), Prov::sim("telnyx")];
    let spec = write_spec(tmp.path(), &data, &providers, 2, 0.01, 400);
    // Two regions, each with its own in-process probe server behind gRPC.
    let mut text = std::fs::read_to_string(&spec).unwrap();
    text.push_str("regions:\n  - name: west\n    probe: local\n  - name: east\n    probe: local\n");
    std::fs::write(&spec, text).unwrap();
    let inputs = inputs(&spec);
    let run = RunDir::create(&inputs, Some("R-2"), "test").unwrap();
    let outcome = run_full(&inputs, &run, "R-2", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    // 2 providers × 2 regions = 4 lanes; 2 items × 3 families = 6 rounds.
    let recs = records(&run.dir.join(layout::FULL_RESULTS));
    assert_eq!(recs.len(), 24);
    let ids: BTreeSet<&str> = recs.iter().map(|r| r.request_id.as_str()).collect();
    assert_eq!(ids.len(), 24, "every lane-round has its own request id");
    let lanes: BTreeSet<(&str, &str, &str)> = recs
        .iter()
        .map(|r| (r.lane.as_str(), r.provider.as_str(), r.region.as_str()))
        .collect();
    let want: BTreeSet<(&str, &str, &str)> = [
        ("baseten@east", "baseten", "east"),
        ("baseten@west", "baseten", "west"),
        ("telnyx@east", "telnyx", "east"),
        ("telnyx@west", "telnyx", "west"),
    ]
    .into_iter()
    .collect();
    assert_eq!(lanes, want);
}
