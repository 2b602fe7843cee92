#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A sentinel key end to end (issue 11, item 4): upstreams that echo the key — split across two
//! answer events (`echo-key-split`), base64-encoded inside the echoed `Authorization` header and
//! split too (`echo-key-base64`), quoted in a 401 error (`echo-key-error`) — are driven through
//! `probe once`, `smoke`, `run`, a smoke through a remote `probe serve`, and an OTLP/gRPC export
//! of every process to a receiver inside the test. Afterwards nothing written holds any
//! 8-character piece of the key or a 12-character piece of its base64 form: no file under the
//! test's folder (run directories, logs), no stdout or stderr of any of our processes, no span.

mod coordinator_support;
mod otlp_support;
mod real_targets;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use coordinator_support::*;
use otlp_support::Receiver;
use real_targets::ours::{start_probe, start_simulator};
use std::time::Duration;

/// The sentinel: random-looking, so any piece of it found anywhere is a leak, not a coincidence.
const KEY: &str = "obk-Q7vXp2LmZ9sR4tYw8NcB3hJ6fD1k";
/// The variable the specs and `probe once` read the key from.
const KEY_ENV: &str = "OBT_SENTINEL_KEY";
/// The echoing quirks of the simulator's catalogue.
const QUIRKS: [&str; 3] = ["echo-key-split", "echo-key-base64", "echo-key-error"];

/// Every piece of the key a leak would show: 8-character windows of the key, and 12-character
/// windows of the part of its base64 forms (both alphabets, the key alone and after `Bearer `)
/// that only the key's bytes determine.
fn sentinel_pieces() -> Vec<String> {
    let mut pieces: Vec<String> = (0..=KEY.len() - 8)
        .map(|i| KEY[i..i + 8].to_string())
        .collect();
    for engine in [&STANDARD, &URL_SAFE] {
        for (prefix, skip) in [("", 0usize), ("Bearer ", 10)] {
            let encoded = engine.encode(format!("{prefix}{KEY}"));
            // Characters past `skip` depend on the key's bytes only; the last 4 may mix padding.
            let inner = &encoded[skip..encoded.len() - 4];
            pieces.extend((0..=inner.len() - 12).map(|i| inner[i..i + 12].to_string()));
        }
    }
    pieces
}

/// The pieces of the key found in `text`.
fn leaks(text: &str, pieces: &[String]) -> Vec<String> {
    pieces
        .iter()
        .filter(|p| text.contains(p.as_str()))
        .cloned()
        .collect()
}

/// One provider per echoing quirk, all with the sentinel as their bearer key.
fn echoing_providers() -> Vec<Prov> {
    QUIRKS
        .iter()
        .map(|q| Prov {
            key: q.replace("echo-key-", "echo-"),
            profile: "plain".into(),
            extra: format!(
                "    auth: {{scheme: bearer, env: {KEY_ENV}}}\n    extra_headers: {{x-sim-quirk: {q}}}\n"
            ),
        })
        .collect()
}

/// Combined stdout and stderr of a finished command.
fn output_text(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

#[test]
fn a_sentinel_key_echoed_by_hostile_upstreams_is_written_nowhere() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let receiver = Receiver::start();
    let endpoint = format!("http://{}", receiver.addr);
    let env: [(&str, &str); 3] = [
        (KEY_ENV, KEY),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
    ];
    let mut outputs: Vec<(String, String)> = Vec::new();
    let data = sample_dataset(work, "data", 20260902);

    // The upstream for `probe once` and the remote probe: a simulator process.
    let (sim, sim_base) = start_simulator(work, &data);

    // 1. `probe once`, one request per echoing quirk.
    for quirk in QUIRKS {
        let header = format!("x-sim-quirk:{quirk}");
        let o = run_bin(
            work,
            &[
                "probe",
                "once",
                "--base-url",
                &sim_base,
                "--model",
                "m",
                "--user",
                "hello",
                "--api-key-env",
                KEY_ENV,
                "--header",
                &header,
                "--json",
            ],
            &env,
        );
        outputs.push((format!("probe once {quirk}"), output_text(&o)));
    }

    // 2. `smoke` and 3. `run` against the embedded simulator.
    let spec = write_spec(work, &data, &echoing_providers(), 1, 0.01, 5_000);
    let spec_s = spec.to_str().unwrap().to_string();
    let o = run_bin(work, &["smoke", "--spec", &spec_s], &env);
    let smoke_dir = printed_run_dir(&o.stdout);
    outputs.push(("smoke".into(), output_text(&o)));
    let o = run_bin(
        work,
        &[
            "run",
            "--spec",
            &spec_s,
            "--full",
            "--approve-full",
            "--approval-id",
            "S-1",
        ],
        &env,
    );
    let run_dir = printed_run_dir(&o.stdout);
    outputs.push(("run".into(), output_text(&o)));
    let recs = records(&run_dir.join(openbench_common::rundir::FULL_RESULTS));
    assert_eq!(recs.len(), 3 * 3, "one record per lane and family");
    // 4. A smoke through a remote probe serving the simulator process.
    let remote_dir = work.join("remote");
    std::fs::create_dir_all(&remote_dir).unwrap();
    let remote_spec = write_spec(&remote_dir, &data, &echoing_providers(), 1, 0.01, 5_000);
    let chat = format!("{sim_base}/chat/completions");
    let with_probe = |probe: &str| {
        let text = std::fs::read_to_string(&remote_spec)
            .unwrap()
            .replace("sim://plain", &chat);
        let text = match text.find("regions:") {
            Some(at) => text[..at].to_string(),
            None => text,
        };
        std::fs::write(
            &remote_spec,
            format!("{text}regions:\n  - name: east\n    probe: {probe}\n"),
        )
        .unwrap();
    };
    with_probe("http://127.0.0.1:1");
    let remote_spec_s = remote_spec.to_str().unwrap().to_string();
    let (probe, probe_addr) = start_probe(
        &remote_dir,
        "probe",
        &remote_spec_s,
        "east",
        "127.0.0.1:0",
        &env,
    );
    with_probe(&format!("http://{probe_addr}"));
    let o = run_bin(&remote_dir, &["smoke", "--spec", &remote_spec_s], &env);
    let remote_run = printed_run_dir(&o.stdout);
    outputs.push(("remote smoke".into(), output_text(&o)));
    assert!(
        remote_run
            .join(openbench_common::rundir::smoke_results(1))
            .exists(),
        "{}",
        output_text(&o)
    );

    // 5. The exported spans: the coordinator flushed at exit; the probe exports in batches.
    let spans = receiver.wait_for(Duration::from_secs(60), |spans| {
        spans.iter().any(|g| g.service == "openbench-probe")
    });
    assert!(
        spans.iter().any(|g| g.service == "openbench-probe"),
        "no span from the remote probe: {spans:#?}"
    );
    let probe_log = probe.log_text();
    drop(probe);
    outputs.push(("probe serve log".into(), probe_log));
    outputs.push(("exported spans".into(), receiver.raw_text()));

    // Scan everything written.
    let pieces = sentinel_pieces();
    let mut found = Vec::new();
    let sim_log = work.join("simulator.log");
    for file in files_under(work).into_iter().filter(|f| *f != sim_log) {
        let bytes = std::fs::read(&file).unwrap();
        let leaked = leaks(&String::from_utf8_lossy(&bytes), &pieces);
        if !leaked.is_empty() {
            found.push(format!("{}: {leaked:?}", file.display()));
        }
    }
    for (what, text) in &outputs {
        let leaked = leaks(text, &pieces);
        if !leaked.is_empty() {
            found.push(format!("{what}: {leaked:?}"));
        }
    }
    drop(sim);
    assert_eq!(found, Vec::<String>::new(), "the sentinel key leaked");
    // The echoes arrived (redacted): the test exercises the leaks it looks for.
    for (what, text) in outputs.iter().filter(|(w, _)| w.starts_with("probe once")) {
        assert!(
            text.contains("[redacted]"),
            "{what}: nothing was redacted: {text}"
        );
    }
    let redacted = |provider: &str| {
        recs.iter().filter(|r| r.provider == provider).all(|r| {
            r.answer_text.contains("[redacted]")
                || r.error_message
                    .as_deref()
                    .unwrap_or("")
                    .contains("[redacted]")
        })
    };
    for provider in ["echo-split", "echo-base64", "echo-error"] {
        assert!(
            redacted(provider),
            "{provider}: no redacted echo in {recs:#?}"
        );
    }

    // The run directories scanned are the real ones.
    for dir in [&smoke_dir, &run_dir, &remote_run] {
        assert!(dir.starts_with(work), "{}", dir.display());
    }
}
