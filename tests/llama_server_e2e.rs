#![allow(clippy::unwrap_used, clippy::expect_used)]
//! End-to-end against a real inference engine: llama.cpp's `llama-server` serving Gemma 3 270M on
//! loopback, two lanes (1 and 2 threads), `smoke` then a short full run through the real binary.
//!
//! Checks: every request completed; TTFA/E2E/tokens/s present and plausible; and our
//! visible-answer tokens/s agrees with the server's own `timings.predicted_per_second`.
//!
//! The comparison needs a unit conversion: the server counts Gemma tokens, we count o200k_base
//! tokens of the same text. llama-server streams exactly one Gemma token per chunk, so
//! (a) our answer-chunk rate, (k − 1) / (E2E − TTFA), measures the server's own quantity in our
//!     clock; it must agree with `predicted_per_second` within 25% per pooled median — the server
//!     times n decode steps from its first sampled token, we time the k − 1 gaps between arrivals
//!     on the client, and at ~30 tokens/s one scheduler hiccup of 10 ms on a loaded 2-core machine
//!     moves a 20-token answer's rate by a few percent;
//! (b) our o200k tokens/s is exactly that rate × (N_o200k − 1) / (k − 1), a tokenizer ratio; so
//!     it may differ from the server's raw figure by that ratio only: it must lie within a factor
//!     of two of it (o200k and Gemma's tokenizer split JSON answers similarly), and the printed
//!     line gives both ratios for the notes.
//!
//! The instances are started here, each on a port it binds itself (`--port 0`); one that dies at
//! start fails the test with the reason (e.g. "killed by SIGILL") and its log's last lines.
//! Without the server build, the test reports itself skipped (a skip `scripts/test.sh` counts)
//! — unless `OPENBENCH_REQUIRE_REAL_TARGETS` is set (CI sets it), where that is a failure.

mod real_targets;

use real_targets::llama::{installed, server_paths, start};
use real_targets::skip::skip_or_fail;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The test's client deadline (see where the spec is rewritten for why it is not 20 s).
const E2E_DEADLINE_MS: u64 = 180_000;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty());
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 2]
}

fn run_binary(args: &[&str], cwd: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_openbench-inference"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The run directory a command printed (its first `run-` path).
fn run_dir_of(output: &str, root: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(root.join("micro-single-task"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "expected one run dir under {}: {output}",
        root.display()
    );
    dirs[0].clone()
}

#[test]
fn smoke_and_short_run_against_llama_server() {
    if let Err(why) = installed() {
        skip_or_fail(
            "llama_server_e2e::smoke_and_short_run_against_llama_server",
            &why,
        );
        return;
    }

    let tmp = tempfile::tempdir().unwrap();
    let paths = server_paths();
    let one = start(&paths, "e2e-t1", 1, 1, tmp.path());
    let two = start(&paths, "e2e-t2", 2, 1, tmp.path());
    let (port_a, port_b) = (one.port, two.port);

    // The bundled spec, pointed at this test's ports, dataset and run root; 2 items per family.
    // The deadline is raised from the contract's 20 s to 180 s: this test checks that a real
    // engine's streams go through the whole pipeline intact, and on a shared 2-core machine a
    // 270M model's prompt processing alone can take longer than 20 s (seen at load 13: no first
    // token within 20 s). The contract's deadline is tested against the simulator.
    let spec =
        std::fs::read_to_string(repo().join("workflows/micro-single-task/specs/local-llama.yaml"))
            .unwrap()
            .replace("127.0.0.1:8091", &format!("127.0.0.1:{port_a}"))
            .replace("127.0.0.1:8092", &format!("127.0.0.1:{port_b}"))
            .replace(
                "source: ../../../data/micro-single-task",
                &format!(
                    "source: {}",
                    repo().join("data/micro-single-task").display()
                ),
            )
            .replace(
                "timeout_ms: 20000",
                &format!("timeout_ms: {E2E_DEADLINE_MS}"),
            )
            .replace("full_items_per_family: 5", "full_items_per_family: 2")
            .replace("run_root: ../../../runs", "run_root: runs");
    let spec_path = tmp.path().join("local-llama.yaml");
    std::fs::write(&spec_path, spec).unwrap();
    let spec_arg = spec_path.to_str().unwrap();

    // Smoke: 3 rounds × 2 lanes. Gemma 270M may well give schema-invalid answers, so the smoke's
    // verdict is not asserted; every request must still complete.
    let (_, smoke_out) = run_binary(&["smoke", "--spec", spec_arg], tmp.path());
    let smoke_dir = run_dir_of(&smoke_out, &tmp.path().join("runs"));
    let smoke = jsonl(&smoke_dir.join("raw/results-attempt-1.jsonl"));
    assert_eq!(smoke.len(), 6, "smoke records: {smoke_out}");
    for r in &smoke {
        assert_eq!(r["outcome"], "completed", "smoke record {r}");
    }
    std::fs::rename(tmp.path().join("runs"), tmp.path().join("smoke-runs")).unwrap();

    let (ok, out) = run_binary(
        &[
            "run",
            "--full",
            "--approve-full",
            "--approval-id",
            "llama-e2e",
            "--spec",
            spec_arg,
        ],
        tmp.path(),
    );
    assert!(ok, "full run failed: {out}");
    let dir = run_dir_of(&out, &tmp.path().join("runs"));
    let records = jsonl(&dir.join("raw/results.jsonl"));
    let events = jsonl(&dir.join("raw/stream-events.jsonl"));
    assert_eq!(records.len(), 12, "2 lanes × 6 rounds");

    let mut chunk_ratio = Vec::new();
    let mut tokenizer_ratio = Vec::new();
    let mut raw_ratio = Vec::new();
    for r in &records {
        assert_eq!(r["outcome"], "completed", "record {r}");
        assert_eq!(r["response_model"], "gemma-3-270m");
        let ttfa = r["ttfa_ms"].as_f64().unwrap();
        let e2e = r["e2e_ms"].as_f64().unwrap();
        assert!(
            ttfa > 0.0 && ttfa <= e2e && e2e < E2E_DEADLINE_MS as f64,
            "timings {ttfa} {e2e}"
        );
        let ttfo = r["ttfo_ms"].as_f64().unwrap();
        assert!(ttfo <= ttfa);
        let n = r["answer_tokens"].as_u64().unwrap();
        let server = r["server_timings"]["predicted_per_second"]
            .as_f64()
            .unwrap();
        assert!(server > 0.0);
        let id = r["request_id"].as_str().unwrap();
        let k = events
            .iter()
            .filter(|e| e["request_id"] == id)
            .filter(|e| e["answer"].as_str().is_some_and(|a| !a.is_empty()))
            .count() as f64;
        if n < 2 || k < 3.0 || e2e <= ttfa {
            continue;
        }
        let ours = r["output_tokens_per_second"].as_f64().unwrap();
        // Hand arithmetic of the definition: (N − 1) / ((E2E − TTFA) / 1000).
        let by_hand = (n as f64 - 1.0) / ((e2e - ttfa) / 1000.0);
        assert!(
            (ours - by_hand).abs() < 1e-6 * by_hand.max(1.0),
            "{ours} vs {by_hand}"
        );
        let chunk_rate = (k - 1.0) / ((e2e - ttfa) / 1000.0);
        chunk_ratio.push(chunk_rate / server);
        tokenizer_ratio.push((n as f64 - 1.0) / (k - 1.0));
        raw_ratio.push(ours / server);
    }
    assert!(
        chunk_ratio.len() >= 6,
        "too few eligible responses: {}",
        chunk_ratio.len()
    );
    let (c, t, raw) = (
        median(chunk_ratio.clone()),
        median(tokenizer_ratio.clone()),
        median(raw_ratio.clone()),
    );
    println!(
        "llama-server e2e: {} eligible; median ratios: chunk-rate/server {c:.3}, \
         o200k/gemma tokens {t:.3}, o200k tokens/s / server tokens/s {raw:.3}",
        chunk_ratio.len()
    );
    assert!(
        (0.75..=1.25).contains(&c),
        "chunk rate vs server: {chunk_ratio:?}"
    );
    assert!(
        (0.5..=2.0).contains(&raw),
        "o200k rate vs server: {raw_ratio:?}"
    );

    // The derived artifacts exist and the report names both lanes.
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("llama-server 1 thread") && report.contains("llama-server 2 threads"));
    assert!(dir.join("report.html").exists());
}
