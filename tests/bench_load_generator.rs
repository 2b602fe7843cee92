#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `bench load-generator --json` on a tiny run: a closed loop of 3 users and an open loop of
//! 20/s, each a load-workflow run through the real runner against `sim serve` children. The
//! open loop sends exactly the requests its schedule planned, and the JSON carries every figure
//! the docs cite. Then the trace case alone: each sample trace replayed as its file. No timing
//! value is asserted (figures belong to the benchmark, not to tests).

use std::process::Command;

#[test]
fn a_tiny_run_sends_what_it_planned_and_reports_every_figure() {
    let output = Command::new(env!("CARGO_BIN_EXE_openbench-inference"))
        .args([
            "bench",
            "load-generator",
            "--users",
            "3",
            "--rates",
            "20",
            "--warmup-s",
            "0.5",
            "--duration-s",
            "1",
            "--chunks",
            "4",
            "--gap-ms",
            "5",
            "--traces",
            "--json",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let f: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(f["mode"], "load-generator");
    assert_eq!(f["lanes"], 1);
    assert_eq!(f["chunks"], 4);
    assert_eq!(f["upstream_processes"], 1);
    // The schedule of lane 0: 5 + 20 ms, then 3 gaps of 1..=9 ms.
    let stream_ms = f["stream_ms"].as_u64().unwrap();
    assert!((28..=52).contains(&stream_ms), "{stream_ms}");
    let steps = f["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    let (closed, open) = (&steps[0], &steps[1]);

    assert_eq!(closed["kind"], "closed");
    assert_eq!(closed["users_per_lane"], 3);
    assert_eq!(closed["total_load"], 3.0);
    assert!(closed["planned"].is_null());
    assert!(closed["send_lag"].is_null());
    assert!(closed["sent"].as_u64().unwrap() >= 3);
    // Never more in flight than users.
    let peak = closed["peak_in_flight"].as_u64().unwrap();
    assert!((1..=3).contains(&peak), "{peak}");

    // 20/s from 0 to 1.5 s: releases k/20 for k = 0..=29.
    assert_eq!(open["kind"], "open");
    assert_eq!(open["rate_per_lane_per_s"], 20.0);
    assert_eq!(open["planned"], 30);
    assert_eq!(open["sent"], 30);
    // The window [0.5, 1.5) s holds releases 10..=29.
    assert_eq!(open["measured"], 20);
    assert_eq!(open["send_lag"]["n"], 20);
    for step in steps {
        assert_eq!(step["run_status"], "complete", "{step}");
        assert_eq!(step["failures"], serde_json::json!({}), "{step}");
        assert_eq!(step["harness_failures"], 0, "{step}");
        for field in [
            "achieved_per_s",
            "wall_seconds",
            "cpu_user_seconds",
            "cpu_sys_seconds",
            "cpu_seconds_per_1000_requests",
            "context_switches_per_request",
        ] {
            assert!(step[field].is_f64(), "{field}: {step}");
        }
        assert!(step["peak_rss_bytes"].as_u64().unwrap() > 0, "{step}");
        assert!(step.get("load_average_before").is_some(), "{step}");
        assert!(step.get("load_average_after").is_some(), "{step}");
    }
    for field in ["p50_ms", "p99_ms", "max_ms"] {
        assert!(open["send_lag"][field].is_f64(), "{field}: {open}");
    }
    let summary = &f["summary"];
    assert_eq!(summary["send_lag_bound_ms"], 1.0);
    assert!(summary.get("highest_open_rate_per_s").is_some());
    assert!(summary.get("highest_concurrency").is_some());
}

/// `bench load-generator --users --rates --trace-time-scale 0.05 --json`: only the trace case,
/// both samples at twenty times their recorded pace on the in-process simulator. Each replay is
/// the file's (arrival offsets to the nanosecond, item keys, input and output lengths, in
/// order) and the JSON carries the density, send lag and target verdict the docs cite; no
/// timing value is asserted.
#[test]
fn the_trace_case_replays_each_sample_as_its_file_and_reports_its_send_lag() {
    let output = Command::new(env!("CARGO_BIN_EXE_openbench-inference"))
        .args([
            "bench",
            "load-generator",
            "--users",
            "--rates",
            "--trace-time-scale",
            "0.05",
            "--json",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let f: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(f["trace_time_scale"], 0.05);
    assert_eq!(f["upstream_processes"], 0);
    let steps = f["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    // Azure: 40 requests over 3,054.4931 ms recorded; Mooncake: 30 over 3,530 ms.
    for (step, file, format, requests, span_ms) in [
        (
            &steps[0],
            "azure-llm-sample.csv",
            "azure_csv",
            40,
            152.724655,
        ),
        (
            &steps[1],
            "mooncake-sample.jsonl",
            "mooncake_jsonl",
            30,
            176.5,
        ),
    ] {
        assert_eq!(step["kind"], "trace", "{step}");
        assert_eq!(step["run_status"], "complete", "{step}");
        assert_eq!(step["failures"], serde_json::json!({}), "{step}");
        assert_eq!(step["harness_failures"], 0, "{step}");
        assert_eq!(step["planned"], requests, "{step}");
        assert_eq!(step["sent"], requests, "{step}");
        assert_eq!(step["measured"], requests, "{step}");
        assert_eq!(step["send_lag"]["n"], requests, "{step}");
        for field in ["p50_ms", "p99_ms", "max_ms"] {
            assert!(step["send_lag"][field].is_f64(), "{field}: {step}");
        }
        let t = &step["trace"];
        assert_eq!(t["file"], file);
        assert_eq!(t["format"], format);
        assert_eq!(t["time_scale"], 0.05);
        assert_eq!(t["requests"], requests);
        assert_eq!(t["span_ms"], span_ms, "{t}");
        assert!(t["mean_per_s"].is_f64() && t["peak_per_s"].is_f64(), "{t}");
        assert_eq!(t["sequence_equal"], true, "{t}");
        assert_eq!(t["mismatches"], 0, "{t}");
        assert_eq!(t["first_mismatches"], serde_json::json!([]), "{t}");
        assert!(
            t["send_lag_target"] == "met" || t["send_lag_target"] == "not met",
            "{t}"
        );
    }
}
