//! One lane past one probe (docs/load.md, "Probe replicas"), on loopback with in-process
//! probes: a region with three replicas shares each lane of a closed and an open loop out over
//! them (slot `s` → replica `s mod 3`, release `k` → replica `k mod 3`), each releasing on its
//! own measured clock; every planned request id is written once, the pooled percentiles are the
//! ones computed here over the same records, and the validity section reports each replica's
//! send lag and clock offset. A replica stopped mid-run loses only its share, named; back at its
//! address, a resume re-sends that share through it. Paired rounds refuse replicas, naming the
//! field.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod load_workflow_support;
mod real_targets;

use coordinator_support::nearest_rank_by_hand;
use load_workflow_support::*;
use openbench_common::record::TerminalRecord;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Three in-process replicas of region `eu`.
const REGIONS: &str = "regions:\n  - name: eu\n    replicas: [local, local, local]\n";

/// Every line of the run's results file, in the order written.
fn raw_records(dir: &Path) -> Vec<TerminalRecord> {
    let text = std::fs::read_to_string(dir.join(openbench_common::rundir::FULL_RESULTS)).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Reports the run in `dir` and reads back its `load-metrics.json`.
fn reported_metrics(dir: &Path) -> serde_json::Value {
    use openbench_common::workflow::Workflow;
    openbench_load::run::LoadWorkflow
        .report(dir, &Default::default())
        .unwrap();
    let text = std::fs::read_to_string(dir.join("load-metrics.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_share_one_lane_and_pool_it_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let load = format!(
        "  seed: 11
  phases: {{warmup_s: 0, measure: {{duration_s: 2}}, cooldown_s: 0}}
  steps: [{{model: closed, concurrency: 4}}, {{model: constant, rate_per_s: 10}}]
{WORKLOAD}
  ignore_eos: [p]"
    );
    let spec = write_spec(
        tmp.path(),
        &provider("p", "sim://plain?slots=8"),
        &load,
        REGIONS,
    );
    let (dir, results) = run(&spec).await;
    let records = raw_records(&dir);

    // Every request id once: the file holds no id twice, and the open loop's 20 releases
    // (10/s over 2 s) are all there.
    let ids: BTreeSet<&str> = records.iter().map(|r| r.request_id.as_str()).collect();
    assert_eq!(ids.len(), records.len());
    let open: Vec<&TerminalRecord> = records.iter().filter(|r| r.phase == Some(1)).collect();
    let sequences: BTreeSet<u64> = open.iter().map(|r| r.sequence.unwrap()).collect();
    assert_eq!(sequences, (0..20).collect());

    // The shares: release k by replica k mod 3, slot s by replica s mod 3; all three used.
    for r in &open {
        assert_eq!(r.replica, Some((r.sequence.unwrap() % 3) as u32), "{r:?}");
    }
    let closed: Vec<&TerminalRecord> = records.iter().filter(|r| r.phase == Some(0)).collect();
    for r in &closed {
        assert_eq!(r.replica, Some(r.slot.unwrap() % 3), "{r:?}");
    }
    let used: BTreeSet<u32> = closed.iter().map(|r| r.replica.unwrap()).collect();
    assert_eq!(used, BTreeSet::from([0, 1, 2]));
    assert!(records.iter().all(|r| r.region == "eu" && r.lane == "p"));

    // Each replica is its own probe to the sitting: its own session and measured clock, and
    // each release went out no earlier than its time on that replica's clock.
    let manifest = openbench_common::rundir::RunManifest::load(&dir).unwrap();
    let keys = ["eu#0", "eu#1", "eu#2"];
    let probes: Vec<&String> = manifest.session_probes[0].probes.keys().collect();
    assert_eq!(probes, keys);
    assert_eq!(manifest.links.keys().collect::<Vec<_>>(), keys);
    assert_eq!(assert_released_on_time(&dir), 20);

    // Pooled percentiles of the open loop's one lane: the report's are the nearest ranks of
    // all three replicas' records taken together.
    let ttfa: Vec<f64> = open.iter().filter_map(|r| r.ttfa_ms).collect();
    assert_eq!(ttfa.len(), 20);
    let step = &results.steps[1];
    let lane = lane_metrics(step, "p");
    assert_eq!(lane.ttfa_ms.count, 20);
    assert_eq!(lane.ttfa_ms.p50, Some(nearest_rank_by_hand(&ttfa, 0.5)));
    assert_eq!(lane.ttfa_ms.p99, Some(nearest_rank_by_hand(&ttfa, 0.99)));
    assert_eq!(lane.ttfa_ms.p90, Some(nearest_rank_by_hand(&ttfa, 0.9)));

    // The validity section holds each replica's send lag (7, 7 and 6 of the 20 releases) and
    // clock offset, labelled by replica.
    let metrics = reported_metrics(&dir);
    let validity = &metrics["validity"];
    let counts: BTreeMap<String, u64> = validity["replica_send_lag_ms"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v["n"].as_u64().unwrap()))
        .collect();
    let expected: BTreeMap<String, u64> = [("eu#0", 7), ("eu#1", 7), ("eu#2", 6)]
        .into_iter()
        .map(|(k, n)| (k.to_string(), n))
        .collect();
    assert_eq!(counts, expected);
    for key in keys {
        let scope = format!("replica {key}");
        for item in ["send lag p99", "clock offset bound"] {
            let found = validity["checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["item"] == item && c["scope"] == scope.as_str());
            assert!(found, "no {item} for {scope}: {validity}");
        }
        // Its own p99, from its own records.
        let lags: Vec<f64> = open
            .iter()
            .filter(|r| format!("eu#{}", r.replica.unwrap()) == key)
            .map(|r| r.sent_offset_ms.unwrap() - r.scheduled_offset_ms.unwrap())
            .collect();
        let p99 = validity["replica_send_lag_ms"][key]["p99"]
            .as_f64()
            .unwrap();
        assert!(
            (p99 - nearest_rank_by_hand(&lags, 0.99)).abs() < 1e-9,
            "{key}"
        );
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("replica eu#2: send lag p50"), "{report}");
    assert_resume_sends_nothing(&spec, &dir).await;

    // The store keeps each replica's send lag and clock offset and gives them back: the values
    // computed here from the records (nearest ranks of actual − scheduled send) and the
    // manifest's links, exactly.
    let mut expected = Vec::new();
    for key in keys {
        let lags: Vec<f64> = open
            .iter()
            .filter(|r| format!("eu#{}", r.replica.unwrap()) == key)
            .map(|r| r.sent_offset_ms.unwrap() - r.scheduled_offset_ms.unwrap())
            .collect();
        let max = lags.iter().copied().fold(f64::MIN, f64::max);
        let link = &manifest.links[key];
        expected.push(openbench_store::load::ReplicaValidity {
            replica: key.to_string(),
            send_lag_count: Some(lags.len() as i64),
            send_lag_p50_ms: Some(nearest_rank_by_hand(&lags, 0.5)),
            send_lag_p99_ms: Some(nearest_rank_by_hand(&lags, 0.99)),
            send_lag_max_ms: Some(max),
            clock_offset_ms: Some(link.clock_offset_ms),
            clock_offset_bound_ms: Some(link.clock_offset_error_ms),
        });
    }
    let locations = real_targets::skip::store_locations(tmp.path(), "load_replicas::postgres");
    for location in locations {
        let (dir, expected) = (dir.clone(), expected.clone());
        // The store's PostgreSQL client is synchronous: it runs off the runtime.
        tokio::task::spawn_blocking(move || {
            let mut store = openbench_store::Store::open(&location).unwrap();
            let run_id = openbench_store::publish::publish(
                &mut store,
                &dir,
                &openbench_load::run::LoadWorkflow,
            )
            .unwrap()
            .run_id;
            let stored = openbench_store::load::stored_replica_validity(&mut store, &run_id);
            assert_eq!(stored.unwrap(), expected, "{location}");
        })
        .await
        .unwrap();
    }
}

/// A remote probe of region `eu` listening on `addr` (no key: the providers need none), which
/// the test can stop.
async fn remote_probe(addr: &str) -> openbench_probe::server::ProbeServerHandle {
    use openbench_probe::server::{ProbeConfig, serve_on};
    use openbench_probe::session_open::{CredentialSource, EndpointRules};
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let config = ProbeConfig {
        region: "eu".into(),
        credentials: CredentialSource::Given(openbench_probe::Credentials::empty()),
        endpoints: EndpointRules::default(),
        code_digest: "test-code-digest".into(),
    };
    serve_on(listener, config).await.unwrap()
}

/// A lane of three remote replicas whose replica 1 was stopped part-way through its open loop
/// (a 4 s step of 10 releases/s, the probe server shut down once six requests are done): the
/// run directory, its spec, the probes (replica 1's taken and shut down) and the address
/// replica 1 listened on. The sitting ended `incomplete`.
struct Killed {
    _tmp: tempfile::TempDir,
    _sim: openbench_simulator::SimServer,
    dir: std::path::PathBuf,
    spec: std::path::PathBuf,
    probes: Vec<Option<openbench_probe::server::ProbeServerHandle>>,
    dead: std::net::SocketAddr,
}

async fn killed_replica_run() -> Killed {
    let tmp = tempfile::tempdir().unwrap();
    let sim = coordinator_support::loopback_simulator().await;
    let mut probes = Vec::new();
    for _ in 0..3 {
        probes.push(Some(remote_probe("127.0.0.1:0").await));
    }
    let urls: Vec<String> = probes
        .iter()
        .flatten()
        .map(|p| format!("'http://{}'", p.addr()))
        .collect();
    let regions = format!(
        "regions:\n  - name: eu\n    replicas: [{}]\n",
        urls.join(", ")
    );
    let load = format!(
        "  seed: 11
  phases: {{warmup_s: 0, measure: {{duration_s: 4}}, cooldown_s: 0}}
  steps: [{{model: constant, rate_per_s: 10}}]
{WORKLOAD}
  ignore_eos: [p]"
    );
    let endpoint = sim.profile_endpoint("plain?slots=8");
    let spec = write_spec(tmp.path(), &provider("p", &endpoint), &load, &regions);
    let inputs = openbench_coordinator::prepare_inputs(
        &spec,
        std::sync::Arc::new(openbench_load::run::LoadWorkflow),
        "test-code-digest",
    )
    .unwrap();
    let run = openbench_coordinator::RunDir::create(&inputs, Some("K-1"), "test").unwrap();
    let dir = run.dir.clone();
    // The stop comes once six requests are done (about 0.7 s into the step), whatever the
    // sitting's start took.
    let (done_tx, mut done_rx) = tokio::sync::watch::channel(0usize);
    let on_progress = move |p: &openbench_coordinator::Progress| {
        let _ = done_tx.send(p.requests_done);
    };
    let options = openbench_coordinator::RunOptions {
        progress: Some(std::sync::Arc::new(on_progress)),
        ..coordinator_support::options(&inputs)
    };
    let sitting = openbench_coordinator::run_full(&inputs, &run, "K-1", &options);
    let mut dead = None;
    let kill = async {
        done_rx.wait_for(|n| *n >= 6).await.unwrap();
        let stopped = probes[1].take().unwrap();
        dead = Some(stopped.addr());
        stopped.shutdown().await.unwrap();
    };
    let (outcome, ()) = tokio::join!(sitting, kill);
    let status = outcome.unwrap().status;
    drop(run);
    // Harness failures leave the run `incomplete`: a resume re-sends them (through the same
    // replica, once it is back: `a_killed_replica_back_at_its_address_resends_its_share`).
    assert_eq!(status, openbench_coordinator::RunStatus::Incomplete);
    Killed {
        _tmp: tmp,
        _sim: sim,
        dir,
        spec,
        probes,
        dead: dead.unwrap(),
    }
}

/// One of three remote replicas of a lane stops part-way through an open loop
/// ([`killed_replica_run`]). We record, never re-deal (docs/faults.md): its releases from then
/// on are `region_unreachable` harness records naming the replica, the other two replicas'
/// shares all complete, every planned id is in the file once, and the validity section fails a
/// `harness failures` check scoped to that replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_run_loses_only_its_share_and_is_named() {
    use openbench_common::record::{ErrorType, Outcome};
    let killed = killed_replica_run().await;
    let dir = killed.dir.clone();
    let records = raw_records(&dir);
    let ids: BTreeSet<&str> = records.iter().map(|r| r.request_id.as_str()).collect();
    assert_eq!(ids.len(), records.len(), "a request id twice");
    let sequences: BTreeSet<u64> = records.iter().map(|r| r.sequence.unwrap()).collect();
    assert_eq!(sequences, (0..40).collect());
    let mut by_sequence: Vec<&TerminalRecord> = records.iter().collect();
    by_sequence.sort_by_key(|r| r.sequence);
    // Replicas 0 and 2 sent their whole share; replica 1 its releases before the stop, then
    // none: from its first harness record on, every one of its releases is one.
    let mut lost = 0;
    for r in &by_sequence {
        assert_eq!(r.replica, Some((r.sequence.unwrap() % 3) as u32), "{r:?}");
        if r.replica != Some(1) {
            assert_eq!(r.outcome, Outcome::Completed, "{r:?}");
            continue;
        }
        if r.outcome == Outcome::HarnessError {
            lost += 1;
            assert_eq!(r.error_type, Some(ErrorType::RegionUnreachable), "{r:?}");
            let message = r.error_message.as_deref().unwrap_or_default();
            assert!(
                message.starts_with("probe replica eu#1 (region eu) unreachable"),
                "{message}"
            );
        } else {
            assert_eq!(lost, 0, "replica 1 sent after it was stopped: {r:?}");
            assert_eq!(r.outcome, Outcome::Completed, "{r:?}");
        }
    }
    // Releases 1, 4, …, 37 are replica 1's (13): release 1 was done before the stop, and the
    // last ones were due long after it.
    assert!((1..=12).contains(&lost), "{lost} lost");
    println!("replica eu#1 stopped: {lost} of its 13 releases are harness records");

    let metrics = reported_metrics(&dir);
    let validity = &metrics["validity"];
    assert_eq!(
        validity["replica_harness_failures"],
        serde_json::json!({"eu#1": lost})
    );
    let check = validity["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["item"] == "harness failures" && c["scope"] == "replica eu#1")
        .unwrap_or_else(|| panic!("no replica check: {validity}"));
    assert_eq!(
        (check["value"].as_f64(), &check["passed"]),
        (Some(lost as f64), &serde_json::json!(false))
    );
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("Validity: FAILED"), "{report}");
    let line = format!("FAILED: {lost} of its requests are harness failures (probe lost)");
    assert!(report.contains(&line), "{report}");
    for p in killed.probes.into_iter().flatten() {
        p.shutdown().await.unwrap();
    }
}

/// The run of [`killed_replica_run`] resumed once replica 1 is back: a new probe server on the
/// address the spec names for it. The resume sends only the requests without a committed
/// record (replica 1's harness records), each through its own replica again (release k →
/// replica k mod 3), at its planned offset; afterwards every planned id has exactly one
/// committed record, each harness record is followed in the file by replica 1's completed send
/// of that id, and the validity section no longer fails (or lists) replica 1's harness check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_back_at_its_address_resends_its_share() {
    use openbench_common::record::Outcome;
    let mut killed = killed_replica_run().await;
    let dir = killed.dir.clone();
    let before = raw_records(&dir);
    let lost: BTreeSet<String> = before
        .iter()
        .filter(|r| r.outcome == Outcome::HarnessError)
        .map(|r| r.request_id.clone())
        .collect();
    assert!(!lost.is_empty(), "replica 1 lost nothing");
    // Replica 1 is back where the spec says it is.
    killed.probes[1] = Some(remote_probe(&killed.dead.to_string()).await);
    let inputs = openbench_coordinator::prepare_inputs(
        &killed.spec,
        std::sync::Arc::new(openbench_load::run::LoadWorkflow),
        "test-code-digest",
    )
    .unwrap();
    let run = openbench_coordinator::RunDir::open(&inputs, &dir, "test").unwrap();
    let outcome = openbench_coordinator::run_full(
        &inputs,
        &run,
        "K-1",
        &coordinator_support::options(&inputs),
    )
    .await
    .unwrap();
    drop(run);
    assert_eq!(outcome.status, openbench_coordinator::RunStatus::Complete);

    let after = raw_records(&dir);
    // The resume wrote one record per lost request and nothing else.
    let resent = &after[before.len()..];
    let resent_ids: BTreeSet<String> = resent.iter().map(|r| r.request_id.clone()).collect();
    assert_eq!(resent.len(), lost.len());
    assert_eq!(resent_ids, lost);
    for r in resent {
        assert_eq!(r.outcome, Outcome::Completed, "{r:?}");
        assert_eq!(r.replica, Some(1), "{r:?}");
        assert_eq!(r.sequence.unwrap() % 3, 1, "{r:?}");
    }
    // Every planned id (releases 0..40) has exactly one committed record.
    let mut committed: BTreeMap<u64, usize> = BTreeMap::new();
    for r in after.iter().filter(|r| r.outcome != Outcome::HarnessError) {
        *committed.entry(r.sequence.unwrap()).or_default() += 1;
    }
    assert_eq!(
        committed.keys().copied().collect::<Vec<_>>(),
        (0..40).collect::<Vec<_>>()
    );
    assert!(committed.values().all(|&n| n == 1), "{committed:?}");

    let metrics = reported_metrics(&dir);
    let validity = &metrics["validity"];
    assert!(validity["replica_harness_failures"].is_null(), "{validity}");
    let failed_replica_check = validity["checks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["scope"] == "replica eu#1" && c["item"] == "harness failures");
    assert!(!failed_replica_check, "{validity}");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        !report.contains("of its requests are harness failures (probe lost)"),
        "{report}"
    );
    for p in killed.probes.into_iter().flatten() {
        p.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn paired_rounds_refuse_replicas_naming_the_field() {
    use coordinator_support::{Prov, inputs, options, sample_dataset, write_spec};
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let spec = write_spec(tmp.path(), &data, &[Prov::sim("baseten")], 1, 0.01, 400);
    let mut text = std::fs::read_to_string(&spec).unwrap();
    text.push_str(REGIONS);
    std::fs::write(&spec, text).unwrap();
    let inputs = inputs(&spec);
    let run = openbench_coordinator::RunDir::create(&inputs, Some("P-1"), "test").unwrap();
    let err = openbench_coordinator::run_full(&inputs, &run, "P-1", &options(&inputs))
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("regions[0].replicas: region eu has probe replicas"),
        "{err}"
    );
    // Refused before any probe was started or record written.
    assert!(
        !run.dir
            .join(openbench_common::rundir::FULL_RESULTS)
            .exists()
    );
}
