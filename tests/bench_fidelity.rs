#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `bench fidelity --json` on a tiny run: it goes through the real coordinator against its
//! scripted upstream, compares every request, and its JSON carries every figure the docs cite.
//! No timing value is asserted (figures belong to the benchmark, not to tests).

use std::process::Command;

fn bench(args: &[&str]) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_openbench-inference"))
        .arg("bench")
        .arg("fidelity")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn fidelity_compares_every_request_with_the_upstream_log() {
    let f = bench(&["--lanes", "2", "--rounds", "3", "--chunks", "4"]);
    // 2 lanes × 3 rounds (one item per family), every request compared.
    assert_eq!(f["mode"], "run");
    assert_eq!(f["run_status"], "complete");
    assert_eq!(f["requests"], 6);
    assert_eq!(f["rounds"], 3);
    assert_eq!(f["harness_errors"], 0);
    let e = &f["errors"];
    assert_eq!(e["unmatched"], 0, "{}", e["unmatched_examples"]);
    assert_eq!(e["requests_compared"], 6);
    for name in ["ttfo", "ttfa", "e2e", "e2e_minus_ttfa"] {
        assert_eq!(e[name]["n"], 6, "{name}");
        for field in ["p50_us", "p99_us", "max_us", "mean_us"] {
            assert!(e[name][field].is_f64(), "{name}.{field}: {}", e[name]);
        }
    }
    // Every write of every stream: role, 4 answer pieces, finish, [DONE].
    assert_eq!(e["events"]["n"], 6 * 7);
    assert_eq!(e["upstream_lateness"]["n"], 6 * 7);
    // Causality: no probe stamp precedes the upstream's write of it.
    assert!(e["events"]["p50_us"].as_f64().unwrap() >= 0.0);
    assert_eq!(f["loopback_one_way"]["n"], 2000);
    assert_eq!(f["launch_skew"]["n"], 3);
    assert_eq!(f["coordinator_overhead"]["n"], 2);
    for field in [
        "cpu_seconds_per_1000_requests",
        "cpu_user_seconds",
        "cpu_sys_seconds",
        "wall_seconds",
    ] {
        assert!(f[field].is_f64(), "{field}");
    }
    assert!(f["peak_rss_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn plan_only_plans_every_request_without_running_them() {
    let f = bench(&["--lanes", "3", "--rounds", "7", "--plan-only"]);
    // 7 rounds round up to 3 items per family: 9 rounds × 3 lanes.
    assert_eq!(f["mode"], "plan");
    assert_eq!(f["rounds"], 9);
    assert_eq!(f["requests"], 27);
    assert!(f["peak_rss_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn each_layer_runs_every_request_through_its_own_client() {
    for layer in ["socket", "conn", "http", "probe"] {
        let f = bench(&[
            "--lanes", "2", "--rounds", "3", "--chunks", "4", "--layer", layer,
        ]);
        assert_eq!(f["mode"], "layer", "{layer}");
        assert_eq!(f["layer"], layer);
        assert_eq!(f["requests"], 6, "{layer}");
        assert_eq!(f["completed"], 6, "{layer}: {}", f["first_failure"]);
        assert!(f["first_failure"].is_null(), "{layer}");
        assert!(f["cpu_seconds_per_1000_requests"].is_f64(), "{layer}");
        assert!(f["context_switches_per_request"].is_f64(), "{layer}");
        let reads = f["reads_per_request"].as_f64().unwrap();
        if layer == "probe" {
            // The probe counts SSE events: role, 4 answer pieces, finish, [DONE].
            assert_eq!(reads, 7.0);
        } else {
            // Reads: at least the head and the last chunk, at most one per write and the end.
            assert!((2.0..=12.0).contains(&reads), "{layer}: {reads}");
        }
    }
}
