//! A load run against an endpoint that takes no request (issue 38 item 3), or answers every one
//! with HTTP 500: closed-loop users whose requests fail at once must not send again at once. The upstream is a counting acceptor
//! on 127.0.0.1 that closes every connection it accepts before reading a byte, so every request
//! fails before reaching a provider, and every connection attempt is counted. Before the lane
//! guard (`coordinator::lane_guard`), this run would have made thousands of attempts in its 40 s
//! of planned load and exited 0.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use coordinator_support::{printed_run_dir, run_bin};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Accepts on 127.0.0.1 and closes each connection at once; returns its port and the count of
/// connections accepted.
fn counting_acceptor() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            counted.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (port, count)
}

fn spec(port: u16) -> String {
    format!(
        "benchmark: {{slug: load-dead, workflow: load, schedule_version: load-dead-v1}}
request: {{temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 5000,
  harness_grace_ms: 60000}}
providers:
  - key: dead
    endpoint: http://127.0.0.1:{port}/v1/chat/completions
    model: m
    auth: {{scheme: none}}
    max_tokens_field: max_tokens
dataset: {{source: ., manifest: none}}
run_root: runs
load:
  seed: 1
  phases: {{warmup_s: 0, measure: {{duration_s: 20}}, cooldown_s: 0}}
  steps: [{{model: closed, concurrency: 8}}, {{model: closed, concurrency: 16}}]
  workload:
    kind: synthetic
    input_tokens: {{dist: fixed, tokens: 10}}
    output_tokens: {{dist: fixed, tokens: 16}}
"
    )
}

#[test]
fn a_load_run_against_a_dead_endpoint_stops_within_10_s_after_at_most_100_attempts() {
    let tmp = tempfile::tempdir().unwrap();
    let (port, attempts) = counting_acceptor();
    let spec_path = tmp.path().join("spec.yaml");
    std::fs::write(&spec_path, spec(port)).unwrap();
    let spec_s = spec_path.to_str().unwrap();
    let args = [
        "run",
        "--workflow",
        "load",
        "--spec",
        spec_s,
        "--full",
        "--approve-full",
        "--approval-id",
        "T-DEAD",
    ];
    let start = Instant::now();
    let o = run_bin(tmp.path(), &args, &[]);
    let took = start.elapsed();
    let made = attempts.load(Ordering::SeqCst);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!(
        "dead endpoint: {made} connection attempts, exit {:?}, {took:?}",
        o.status
    );
    // Every lane unreachable: nothing measured (docs/faults.md, "Exit codes").
    assert_eq!(o.status.code(), Some(4), "{text}");
    assert!(took < Duration::from_secs(10), "took {took:?}: {text}");
    assert!(made <= 100, "{made} connection attempts: {text}");
    // The users' first requests were all sent, then trials alone.
    assert!(made >= 8, "{made} connection attempts: {text}");
    assert!(
        // The lane's provider and full URL, the spec's full-path endpoint not doubled.
        text.contains(&format!(
            "error: lane dead unreachable (provider dead, POST \
             http://127.0.0.1:{port}/v1/chat/completions): "
        )) && text.contains("; stopped"),
        "{text}"
    );
    let dir = printed_run_dir(&o.stdout);
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join(openbench_common::rundir::RUN_MANIFEST)).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["status"], "incomplete", "{manifest}");
    // The second step never ran: the sitting stopped after the first.
    let records = coordinator_support::lines(&dir.join("raw/results.jsonl"));
    assert!(records.iter().all(|r| r["phase"] == 0), "{records:?}");
    assert!(
        records.iter().all(|r| r["outcome"] == "transport_error"),
        "{records:?}"
    );
}

/// Answers every HTTP request on 127.0.0.1 with `500` and a JSON error body, keeping the
/// connection open; returns its port and the count of requests answered.
fn counting_500_server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let counted = counted.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut writer = stream;
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    // The request line and headers, up to the blank line.
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    std::io::Read::read_exact(&mut reader, &mut body).unwrap();
                    counted.fetch_add(1, Ordering::SeqCst);
                    let answer = r#"{"error":{"message":"internal error","type":"server_error"}}"#;
                    let response = format!(
                        "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\n\r\n{answer}",
                        answer.len()
                    );
                    if writer.write_all(response.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, count)
}

/// A closed loop of 4 users for 3 s, then an open loop of 20/s for 3 s, against an upstream that
/// answers HTTP 500 to everything. The closed loop backs off after 16 refusals in a row and then
/// trials alone at 0.1, 0.3, 0.7 and 1.5 s (about 24 requests where, unguarded, it sent
/// hundreds a second); the open loop follows its schedule and sends all 60 releases; nothing is
/// stopped (the provider answered), and every record is the provider's 500.
#[test]
fn a_closed_loop_refused_with_http_500_backs_off_and_an_open_loop_keeps_its_schedule() {
    let tmp = tempfile::tempdir().unwrap();
    let (port, requests) = counting_500_server();
    let spec = spec(port).replace(
        "  phases: {warmup_s: 0, measure: {duration_s: 20}, cooldown_s: 0}
  steps: [{model: closed, concurrency: 8}, {model: closed, concurrency: 16}]",
        "  phases: {warmup_s: 0, measure: {duration_s: 3}, cooldown_s: 0}
  steps: [{model: closed, concurrency: 4}, {model: constant, rate_per_s: 20}]",
    );
    assert!(spec.contains("rate_per_s: 20"));
    let spec_path = tmp.path().join("spec.yaml");
    std::fs::write(&spec_path, spec).unwrap();
    let args = [
        "run",
        "--workflow",
        "load",
        "--spec",
        spec_path.to_str().unwrap(),
        "--full",
        "--approve-full",
        "--approval-id",
        "T-500",
    ];
    let o = run_bin(tmp.path(), &args, &[]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let dir = printed_run_dir(&o.stdout);
    let records = coordinator_support::lines(&dir.join("raw/results.jsonl"));
    let in_phase = |phase: u64| records.iter().filter(|r| r["phase"] == phase).count();
    let (closed, open) = (in_phase(0), in_phase(1));
    eprintln!(
        "HTTP 500 upstream: {} requests answered; closed loop {closed}, open loop {open}; exit {:?}",
        requests.load(Ordering::SeqCst),
        o.status
    );
    assert_eq!(closed + open, requests.load(Ordering::SeqCst), "{text}");
    assert!(
        records
            .iter()
            .all(|r| r["outcome"] == "http_error" && r["http_status"] == 500),
        "{records:?}"
    );
    // 16 refusals (the 4 users' first waves), then trials alone: at most one more wave of 4
    // already in flight when the 16th came back, and trials at 0.1, 0.3, 0.7, 1.5 s.
    assert!(
        (16..=16 + 4 + 4).contains(&closed),
        "{closed} closed-loop requests: {text}"
    );
    // k/20 s for k = 0..60: every release sent.
    assert_eq!(open, 60, "{text}");
    assert!(!text.contains("unreachable"), "{text}");
    // One warning names the lane and the status, never the body.
    assert_eq!(
        text.matches("the provider refused every request: the lane backs off")
            .count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("last_status=500") && !text.contains("internal error"),
        "{text}"
    );
}
