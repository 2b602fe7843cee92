//! A sentinel key end to end: upstreams that echo the key — split across two
//! answer events (`echo-key-split`), base64-encoded inside the echoed `Authorization` header and
//! split too (`echo-key-base64`), quoted in a 401 error (`echo-key-error`), in pieces in every
//! streamed field, split by whitespace, reversed and in hex (`echo-key-pieces`), in hex and
//! base64 in a 401 (`echo-key-encoded-error`) — are driven through `probe once`, `smoke`, a
//! paired `run`, `watch --once`, a smoke through a remote `probe serve`, a `load` run, and an
//! OTLP/gRPC export of every process to a receiver inside the test. Afterwards nothing written
//! holds any 6-character piece of the key, nor its reversed, hex or base64 form (issue 36,
//! class 4): no file under the test's folder (run directories, logs), no stdout or stderr of
//! any of our processes, no span or metric.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod otlp_support;
mod real_targets;
mod secrets_support;

use coordinator_support::*;
use otlp_support::Receiver;
use real_targets::ours::{start_probe, start_simulator};
use secrets_support::*;
use std::time::Duration;

#[test]
fn a_sentinel_key_echoed_by_hostile_upstreams_is_written_nowhere() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let receiver = Receiver::start();
    let endpoint = format!("http://{}", receiver.addr);
    let env = keyed_env(&endpoint);
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
    // The other API dialects (`--api`; Anthropic's key goes in `x-api-key`), the key quoted back.
    for api in [
        "anthropic-messages",
        "openai-responses",
        "openai-completions",
    ] {
        let o = run_bin(
            work,
            &[
                "probe",
                "once",
                "--api",
                api,
                "--base-url",
                &sim_base,
                "--model",
                "m",
                "--user",
                "hello",
                "--api-key-env",
                KEY_ENV,
                "--header",
                "x-sim-quirk:echo-key-error",
                "--json",
            ],
            &env,
        );
        outputs.push((format!("probe once --api {api}"), output_text(&o)));
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
    assert_eq!(recs.len(), 5 * 3, "one record per lane and family");
    // `watch --once` prints the run's last records, error messages included.
    let o = run_bin(
        work,
        &["watch", "--once", "--run-dir", run_dir.to_str().unwrap()],
        &env,
    );
    assert!(o.status.success(), "{}", output_text(&o));
    outputs.push(("watch --once".into(), output_text(&o)));
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
    for provider in ECHOING {
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

/// A load run (the `load` workflow: an open-loop step, then a closed-loop one) against the same
/// echoing upstreams, one of which fails every request with a 401 quoting the key, exported
/// over OTLP: no piece of the key in any file of the run directory (records, events, reports,
/// plan files, lock, manifest), in the run's stdout or stderr, or in any exported span.
#[test]
fn a_sentinel_key_echoed_under_load_is_written_nowhere() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let receiver = Receiver::start();
    let endpoint = format!("http://{}", receiver.addr);
    let env = keyed_env(&endpoint);
    let mut providers = String::new();
    for p in echoing_providers() {
        providers.push_str(&format!(
            "  - key: {}\n    endpoint: sim://{}\n    model: m\n    max_tokens_field: max_tokens\n{}",
            p.key, p.profile, p.extra
        ));
    }
    let spec = work.join("spec.yaml");
    std::fs::write(
        &spec,
        format!(
            "benchmark: {{slug: load-secrets, workflow: load, schedule_version: load-secrets-v1}}
request: {{temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 5000,
  harness_grace_ms: 60000}}
providers:
{providers}dataset: {{source: ., manifest: none}}
simulator: {{time_scale: 0.05, seed: 7}}
run_root: runs
load:
  seed: 11
  phases: {{warmup_s: 0.2, measure: {{duration_s: 0.6}}, cooldown_s: 0}}
  steps: [{{model: constant, rate_per_s: 5}}, {{model: closed, concurrency: 2}}]
  workload:
    kind: synthetic
    input_tokens: {{dist: fixed, tokens: 10}}
    output_tokens: {{dist: fixed, tokens: 16}}
"
        ),
    )
    .unwrap();
    let spec_s = spec.to_str().unwrap().to_string();
    let o = run_bin(
        work,
        &[
            "run",
            "--workflow",
            "load",
            "--spec",
            &spec_s,
            "--full",
            "--approve-full",
            "--approval-id",
            "S-LOAD",
        ],
        &env,
    );
    let text = output_text(&o);
    assert!(o.status.success(), "{text}");
    let run_dir = printed_run_dir(&o.stdout);
    assert!(run_dir.starts_with(work), "{}", run_dir.display());
    assert!(run_dir.join("report.md").exists(), "{text}");
    // The coordinator flushed its spans at exit; the load phases are among them.
    let spans = receiver.wait_for(Duration::from_secs(30), |spans| {
        spans.iter().any(|g| g.name == "openbench.load_phase")
    });
    assert!(
        spans.iter().any(|g| g.name == "openbench.load_phase"),
        "no load phase span: {spans:#?}"
    );

    let pieces = sentinel_pieces();
    let mut found = Vec::new();
    for file in files_under(work) {
        let bytes = std::fs::read(&file).unwrap();
        let leaked = leaks(&String::from_utf8_lossy(&bytes), &pieces);
        if !leaked.is_empty() {
            found.push(format!("{}: {leaked:?}", file.display()));
        }
    }
    let watch = run_bin(
        work,
        &["watch", "--once", "--run-dir", run_dir.to_str().unwrap()],
        &env,
    );
    assert!(watch.status.success(), "{}", output_text(&watch));
    let watch = output_text(&watch);
    for (what, text) in [
        ("run", text.as_str()),
        ("watch --once", watch.as_str()),
        ("spans and metrics", &receiver.raw_text()),
    ] {
        let leaked = leaks(text, &pieces);
        if !leaked.is_empty() {
            found.push(format!("{what}: {leaked:?}"));
        }
    }
    assert_eq!(found, Vec::<String>::new(), "the sentinel key leaked");
    // Both steps ran against every provider, and every provider's echo arrived redacted (the
    // 401s among them): the test exercises the leaks it looks for.
    let recs = records(&run_dir.join(openbench_common::rundir::FULL_RESULTS));
    for provider in ECHOING {
        for phase in [0, 1] {
            let mine: Vec<_> = recs
                .iter()
                .filter(|r| r.provider == provider && r.phase == Some(phase))
                .collect();
            assert!(!mine.is_empty(), "{provider}: no request in step {phase}");
            assert!(
                mine.iter().all(|r| r.answer_text.contains("[redacted]")
                    || r.error_message
                        .as_deref()
                        .unwrap_or("")
                        .contains("[redacted]")),
                "{provider}: an echo not redacted in step {phase}: {mine:#?}"
            );
        }
    }
    assert!(
        recs.iter()
            .any(|r| r.provider == "echo-error" && r.http_status == Some(401)),
        "no failing request echoing the key"
    );
}
