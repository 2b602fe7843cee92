//! One lane past one probe (docs/load.md, "Probe replicas"), on loopback with in-process
//! probes: a region with three replicas shares each lane of a closed and an open loop out over
//! them (slot `s` → replica `s mod 3`, release `k` → replica `k mod 3`), each releasing on its
//! own measured clock; every planned request id is written once, the pooled percentiles are the
//! ones computed here over the same records, and the validity section reports each replica's
//! send lag and clock offset. Paired rounds refuse replicas, naming the field.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod load_workflow_support;

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
    use openbench_common::workflow::Workflow;
    openbench_load::run::LoadWorkflow
        .report(&dir, &Default::default())
        .unwrap();
    let text = std::fs::read_to_string(dir.join("load-metrics.json")).unwrap();
    let metrics: serde_json::Value = serde_json::from_str(&text).unwrap();
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
