#![allow(clippy::unwrap_used, clippy::expect_used)]
//! One lane past one machine in containers (`deploy/compose.replicas.yaml`): region `eu` served
//! by three probe containers over TLS with a token, a closed loop of 6 users and an open loop of
//! 20 requests/s shared out over them (slot s → replica s mod 3, release k → replica k mod 3).
//! Every request id is written once, the report's pooled percentiles equal the nearest ranks
//! computed here over the same records, and the validity section reports each replica's send
//! lag and clock offset. The image is built from this test's binary, as in `tests/multi_host.rs`.
//!
//! Without docker, docker-compose or the base image the test reports itself skipped, unless
//! `OPENBENCH_REQUIRE_REAL_TARGETS` is set.

mod coordinator_support;
mod multi_host_support;
mod real_targets;

use coordinator_support::{bin, nearest_rank_by_hand};
use multi_host_support::{Topology, build_image, missing_tools};
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir::{FULL_RESULTS, RunManifest};
use real_targets::skip::skip_or_fail;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

/// The report's percentiles of `field` in the lane row of `step` equal the nearest ranks of the
/// same field over the step's records in the measured window, pooled across the replicas.
fn assert_pooled(step: &Value, records: &[&TerminalRecord], field: &str) {
    let (from, to) = (
        step["window_start_ms"].as_f64().unwrap(),
        step["window_end_ms"].as_f64().unwrap(),
    );
    let values: Vec<f64> = records
        .iter()
        .filter(|r| {
            let sent = r.sent_offset_ms.unwrap();
            sent >= from && sent < to
        })
        .filter_map(|r| match field {
            "ttfa_ms" => r.ttfa_ms,
            _ => r.e2e_ms,
        })
        .collect();
    let row = &step["lanes"][0];
    assert_eq!(row["name"], "p");
    let reported = &row["metrics"][field];
    assert_eq!(reported["count"].as_u64().unwrap() as usize, values.len());
    for (key, p) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)] {
        assert_eq!(
            reported[key].as_f64().unwrap(),
            nearest_rank_by_hand(&values, p),
            "{field} {key} of step {}",
            step["index"]
        );
    }
}

#[test]
fn three_probe_containers_share_one_lane() {
    if let Some(why) = missing_tools() {
        skip_or_fail(
            "multi_host_replicas::three_probe_containers_share_one_lane",
            &why,
        );
        return;
    }
    let started = Instant::now();
    let image = build_image(Path::new(bin()));
    let spec =
        std::fs::read_to_string(multi_host_support::repo().join("deploy/compose/replicas.yaml"))
            .unwrap();
    let topology = Topology::replicas(&image, &spec);
    topology.up();
    println!("topology up at {:.1} s", started.elapsed().as_secs_f64());
    let out = topology.coordinator(&[]).output().unwrap();
    assert!(
        out.status.success(),
        "the run failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = topology.run_dir(&out.stdout);
    println!("run done at {:.1} s", started.elapsed().as_secs_f64());

    // Every request id once, in the order the one writer got them.
    let text = std::fs::read_to_string(dir.join(FULL_RESULTS)).unwrap();
    let records: Vec<TerminalRecord> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: BTreeSet<&str> = records.iter().map(|r| r.request_id.as_str()).collect();
    assert_eq!(ids.len(), records.len());
    assert!(records.iter().all(|r| r.outcome == Outcome::Completed));
    let closed: Vec<&TerminalRecord> = records.iter().filter(|r| r.phase == Some(0)).collect();
    let open: Vec<&TerminalRecord> = records.iter().filter(|r| r.phase == Some(1)).collect();
    // 20/s over 3 s: releases 0..60, each by replica k mod 3; slot s by replica s mod 3.
    let sequences: BTreeSet<u64> = open.iter().map(|r| r.sequence.unwrap()).collect();
    assert_eq!(sequences, (0..60).collect());
    for r in &open {
        assert_eq!(r.replica, Some((r.sequence.unwrap() % 3) as u32), "{r:?}");
    }
    for r in &closed {
        assert_eq!(r.replica, Some(r.slot.unwrap() % 3), "{r:?}");
    }
    let slots: BTreeSet<u32> = closed.iter().map(|r| r.slot.unwrap()).collect();
    assert_eq!(slots, (0..6).collect());

    // Three probes, three sessions, three measured clocks.
    let manifest = RunManifest::load(&dir).unwrap();
    let keys = ["eu#0", "eu#1", "eu#2"];
    let probes: Vec<&String> = manifest.session_probes[0].probes.keys().collect();
    assert_eq!(probes, keys);
    assert_eq!(manifest.links.keys().collect::<Vec<_>>(), keys);
    // Each record names the replica whose probe (as its session's `Describe` answered: its own
    // container's host fingerprint) it went through; three containers, three probe ids.
    let session = &manifest.session_probes[0].probes;
    for r in &records {
        let key = format!("eu#{}", r.replica.unwrap());
        assert_eq!(r.probe_id.as_deref(), Some(session[&key].probe_id.as_str()));
    }
    let ids: BTreeSet<&str> = session.values().map(|p| p.probe_id.as_str()).collect();
    assert_eq!(ids.len(), 3, "{session:?}");

    // The report the run wrote: pooled percentiles over all three replicas' records.
    let metrics: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("load-metrics.json")).unwrap())
            .unwrap();
    for (step, records) in [(0, &closed), (1, &open)] {
        for field in ["ttfa_ms", "e2e_ms"] {
            assert_pooled(&metrics["steps"][step], records, field);
        }
    }
    // Each replica's send lag (20 releases each) and clock offset, labelled by replica.
    let validity = &metrics["validity"];
    for key in keys {
        let lag = &validity["replica_send_lag_ms"][key];
        assert_eq!(lag["n"], 20, "{validity}");
        let lags: Vec<f64> = open
            .iter()
            .filter(|r| format!("eu#{}", r.replica.unwrap()) == key)
            .map(|r| r.send_lag_ms.unwrap())
            .collect();
        assert!((lag["max"].as_f64().unwrap() - nearest_rank_by_hand(&lags, 1.0)).abs() < 1e-6);
        assert!(validity["clock"][key]["clock_offset_error_ms"].is_number());
        println!(
            "{key}: send lag p50 {} p99 {} max {} ms; clock offset {} ± {} ms",
            lag["p50"],
            lag["p99"],
            lag["max"],
            validity["clock"][key]["clock_offset_ms"],
            validity["clock"][key]["clock_offset_error_ms"]
        );
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("replica eu#1: send lag p50"), "{report}");
    println!(
        "replicas test took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
