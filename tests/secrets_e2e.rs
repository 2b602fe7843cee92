#![allow(clippy::unwrap_used, clippy::expect_used)]
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
//!
//! Then a `probe serve` whose owner's spec names only honest endpoints: a coordinator naming an
//! attacker's endpoint (on 127.0.0.2) is refused at session open and the attacker sees no
//! connection; a redirect to it is not followed; a key straddling the error-message cut, split
//! between reasoning and answer, or between answer and an SSE error event, leaves no piece; a
//! key with a trailing space is refused at load, naming only its variable.

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
const QUIRKS: [&str; 5] = [
    "echo-key-split",
    "echo-key-base64",
    "echo-key-error",
    "echo-key-pieces",
    "echo-key-encoded-error",
];
/// The providers of [`echoing_providers`], one per quirk.
const ECHOING: [&str; 5] = [
    "echo-split",
    "echo-base64",
    "echo-error",
    "echo-pieces",
    "echo-encoded-error",
];

/// Every piece of the key a leak would show (the rule of docs/faults.md "Secrets"): its
/// 6-character windows as written and reversed, their hex in both cases, and the 8-character
/// windows of its base64 forms (both alphabets, the key behind 0, 1 and 2 bytes and behind
/// `Bearer `) that only the key's bytes determine.
fn sentinel_pieces() -> Vec<String> {
    let windows = |text: &str, width: usize| -> Vec<String> {
        (0..=text.len() - width)
            .map(|i| text[i..i + width].to_string())
            .collect()
    };
    let reversed: String = KEY.chars().rev().collect();
    let mut pieces = windows(KEY, 6);
    pieces.extend(windows(&reversed, 6));
    for piece in windows(KEY, 6) {
        let hex: String = piece.bytes().map(|b| format!("{b:02x}")).collect();
        pieces.push(hex.to_uppercase());
        pieces.push(hex);
    }
    for engine in [&STANDARD, &URL_SAFE] {
        for prefix in ["", ":", "::", "Bearer "] {
            let encoded = engine.encode(format!("{prefix}{KEY}"));
            // Past the groups the prefix touches, characters depend on the key's bytes only;
            // the last 4 may mix padding.
            let skip = prefix.len().div_ceil(3) * 4;
            pieces.extend(windows(&encoded[skip..encoded.len() - 4], 8));
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

/// The environment of a run holding the key and exporting OTLP to `endpoint`.
fn keyed_env(endpoint: &str) -> [(&str, &str); 3] {
    [
        (KEY_ENV, KEY),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
    ]
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

/// What the in-test hostile upstream answers on each path (`/<case>/v1/chat/completions`).
fn hostile_answer(path: &str, attacker: &str) -> String {
    let (head_part, tail_part) = KEY.split_at(11);
    let sse = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    let case = path.trim_start_matches('/').split('/').next().unwrap_or("");
    match case {
        // The key straddles the 512-character cut of the stored error message.
        "straddle" => {
            let body = format!("{{\"error\":\"{}{KEY} is not valid\"}}", "p".repeat(492));
            format!(
                "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
        }
        // The key split between reasoning and answer.
        "split-ra" => format!(
            "{sse}data: {{\"choices\":[{{\"delta\":{{\"reasoning_content\":\"key {head_part}\"}}}}]}}\n\n\
             data: {{\"choices\":[{{\"delta\":{{\"content\":\"{tail_part} ok\"}},\"finish_reason\":\"stop\"}}]}}\n\n\
             data: [DONE]\n\n"
        ),
        // The key split between answer and an SSE error event.
        "split-ae" => format!(
            "{sse}data: {{\"choices\":[{{\"delta\":{{\"content\":\"key {head_part}\"}}}}]}}\n\n\
             event: error\ndata: {tail_part} revoked\n\n"
        ),
        // A redirect to the attacker: never followed.
        _ => format!(
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: {attacker}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
    }
}

/// A one-response-per-connection HTTP server on `ip` in a thread: answers with `answer(path)`
/// and counts connections. Returns its address and the count.
fn serve_hostile(
    ip: &str,
    answer: impl Fn(&str) -> String + Send + 'static,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind((ip, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).to_string();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    l.to_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap_or(0))
                })
                .unwrap_or(0);
            let mut body = vec![0u8; length];
            let _ = stream.read_exact(&mut body);
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            let _ = stream.write_all(answer(&path).as_bytes());
        }
    });
    (addr, count)
}

#[test]
fn a_probe_sends_its_key_only_where_its_owner_allows_and_cut_or_split_echoes_leave_no_piece() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let data = sample_dataset(work, "data", 20260902);
    // Whoever controls the coordinator runs this server; it must never see a connection.
    let (attacker, stolen) = serve_hostile("127.0.0.2", |_| {
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
    });
    let attacker_url = format!("http://{attacker}/v1/chat/completions");
    let to_attacker = attacker_url.clone();
    let (upstream, _) = serve_hostile("127.0.0.1", move |path| hostile_answer(path, &to_attacker));
    let cases = ["straddle", "split-ra", "split-ae", "redirect"];
    let auth = format!("    auth: {{scheme: bearer, env: {KEY_ENV}}}\n");
    let spec_in = |dir: &str, with_attacker: bool, probe: &str| {
        let dir = work.join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut provs: Vec<Prov> = cases
            .iter()
            .map(|c| Prov {
                key: c.replace('-', "_"),
                profile: c.to_string(),
                extra: auth.clone(),
            })
            .collect();
        if with_attacker {
            provs.push(Prov {
                key: "attacker".into(),
                profile: "attacker".into(),
                extra: auth.clone(),
            });
        }
        let path = write_spec(&dir, &data, &provs, 1, 0.01, 5_000);
        let mut text = std::fs::read_to_string(&path).unwrap();
        for c in cases {
            text = text.replace(
                &format!("sim://{c}"),
                &format!("http://{upstream}/{c}/v1/chat/completions"),
            );
        }
        text = text.replace("sim://attacker", &attacker_url);
        std::fs::write(
            &path,
            format!("{text}regions:\n  - name: east\n    probe: {probe}\n"),
        )
        .unwrap();
        path.to_str().unwrap().to_string()
    };
    // The owner's probe: its spec names only the honest provider's endpoints.
    let owner_spec = spec_in("owner", false, "http://127.0.0.1:1");
    let (probe, probe_addr) = start_probe(
        work,
        "probe",
        &owner_spec,
        "east",
        "127.0.0.1:0",
        &[(KEY_ENV, KEY)],
    );
    let probe_url = format!("http://{probe_addr}");
    let mut outputs: Vec<(String, String)> = Vec::new();

    // A coordinator naming the attacker's endpoint: refused at open, nothing sent.
    let hostile_spec = spec_in("hostile", true, &probe_url);
    let o = run_bin(work, &["smoke", "--spec", &hostile_spec], &[]);
    let text = output_text(&o);
    assert!(!o.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "provider attacker: endpoint {attacker_url}: credential {KEY_ENV} may not be sent there"
        )),
        "{text}"
    );
    outputs.push(("hostile smoke".into(), text));

    // The owner's endpoints: cut, split and redirected echoes.
    let honest_spec = spec_in("honest", false, &probe_url);
    let o = run_bin(work, &["smoke", "--spec", &honest_spec], &[]);
    let run_dir = printed_run_dir(&o.stdout);
    outputs.push(("honest smoke".into(), output_text(&o)));
    let recs = records(&run_dir.join(openbench_common::rundir::smoke_results(1)));
    assert_eq!(recs.len(), 4 * 3, "{}", output_text(&o));
    let message = |p: &str| {
        let r = recs.iter().find(|r| r.provider == p).unwrap();
        (
            r.error_message.clone().unwrap_or_default(),
            r.reasoning_text.clone(),
            r.answer_text.clone(),
        )
    };
    assert!(
        message("straddle").0.ends_with("p[redacted]…"),
        "{:?}",
        message("straddle")
    );
    assert_eq!(message("split_ra").1, "key [redacted]");
    assert_eq!(message("split_ra").2, "[redacted] ok");
    assert_eq!(message("split_ae").2, "key [redacted]");
    assert_eq!(message("split_ae").0, "event: error: [redacted] revoked");
    assert_eq!(
        message("redirect").0,
        "HTTP 307 (redirects are not followed)"
    );
    assert_eq!(
        stolen.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the attacker got a request"
    );

    // A key with a trailing space (a quoted `.env` value) is refused at load, naming only the
    // variable.
    let padded = format!("{KEY} ");
    let o = run_bin(
        work,
        &[
            "probe",
            "once",
            "--base-url",
            &format!("http://{upstream}/split-ra/v1"),
            "--model",
            "m",
            "--user",
            "hi",
            "--api-key-env",
            KEY_ENV,
        ],
        &[(KEY_ENV, padded.as_str())],
    );
    let text = output_text(&o);
    assert!(!o.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "credential variable {KEY_ENV} begins or ends with whitespace"
        )),
        "{text}"
    );
    outputs.push(("padded probe once".into(), text));

    outputs.push(("probe serve log".into(), probe.log_text()));
    drop(probe);
    let pieces = sentinel_pieces();
    let mut found = Vec::new();
    for file in files_under(work) {
        let leaked = leaks(
            &String::from_utf8_lossy(&std::fs::read(&file).unwrap()),
            &pieces,
        );
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
    assert_eq!(found, Vec::<String>::new(), "the sentinel key leaked");
}
