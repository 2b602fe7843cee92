#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The new API dialects against a real engine: llama.cpp's `llama-server` (Gemma 3 270M) on
//! loopback, one `probe once` per dialect it serves (`/v1/completions`, `/v1/responses`,
//! `/v1/messages`) through the real binary. Each must complete with an answer and the timings
//! the dialect's events give (TTFO ≤ TTFA ≤ E2E), read from the server's own event stream.
//!
//! Without the server build, the test reports itself skipped (a skip `scripts/test.sh` counts)
//! — unless `OPENBENCH_REQUIRE_REAL_TARGETS` is set, where that is a failure.

mod real_targets;

use real_targets::llama::{installed, server_paths, start};
use real_targets::skip::skip_or_fail;
use std::process::Command;

#[test]
fn probe_once_speaks_completions_responses_and_messages_to_llama_server() {
    if let Err(why) = installed() {
        skip_or_fail(
            "llama_server_dialects::probe_once_speaks_completions_responses_and_messages_to_llama_server",
            &why,
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&server_paths(), "dialects", 2, 1, tmp.path());
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    // A 24-token ceiling in each dialect's own field keeps the test short on a shared machine
    // (the contract's 256 took 60–120 s per request at load).
    let dialects = [
        ("openai-completions", "max_tokens"),
        ("openai-responses", "max_output_tokens"),
        ("anthropic-messages", "max_tokens"),
    ];
    for (api, ceiling) in dialects {
        let extra = format!("{{\"{ceiling}\": 24}}");
        let out = Command::new(env!("CARGO_BIN_EXE_openbench-inference"))
            .args(["probe", "once", "--api", api, "--base-url", &base])
            .args(["--body-extra", &extra])
            .args([
                "--model",
                "gemma-3-270m",
                "--user",
                "Name one colour.",
                "--json",
            ])
            .args(["--timeout-ms", "120000"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let record: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "{api}: {e}: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert_eq!(record["outcome"], "completed", "{api}: {record}");
        assert!(
            !record["answer_text"].as_str().unwrap().is_empty(),
            "{api}: {record}"
        );
        let at = |field: &str| {
            record[field]
                .as_f64()
                .unwrap_or_else(|| panic!("{api}: no {field}: {record}"))
        };
        assert!(
            at("ttfo_ms") <= at("ttfa_ms") && at("ttfa_ms") <= at("e2e_ms"),
            "{api}: {record}"
        );
        println!(
            "{api}: ttfo {:.1} ms, ttfa {:.1} ms, e2e {:.1} ms, {} events, finish {}",
            at("ttfo_ms"),
            at("ttfa_ms"),
            at("e2e_ms"),
            record["event_count"],
            record["finish_reason"]
        );
    }
}
