#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Traces over OTLP to a real collector: `rotel-agent` (a Rust OpenTelemetry collector from PyPI)
//! receives the binary's spans over OTLP/gRPC and prints them. A smoke run's probe spans must
//! arrive as children of the coordinator's call spans — the W3C trace context crossed the gRPC
//! hop — one per request, and no credential value may appear in any exported span.
//!
//! Without `rotel-agent` the test reports itself skipped (a skip `scripts/test.sh` counts),
//! unless `OPENBENCH_REQUIRE_REAL_TARGETS` is set (CI sets it), where that is a failure.

mod coordinator_support;
mod real_targets;

use coordinator_support::*;
use real_targets::child::{LoggedChild, NotReady};
use real_targets::skip::skip_or_fail;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Path of the `rotel-agent` binary the PyPI package ships, when installed.
fn rotel_agent() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import os, rotel; print(os.path.join(os.path.dirname(rotel.__file__), 'rotel-agent'))",
        ])
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (out.status.success() && path.exists()).then_some(path)
}

/// Attempts at starting the collector (see [`start_collector`]).
const COLLECTOR_ATTEMPTS: usize = 5;

/// Starts the collector; returns it, its OTLP/gRPC port and its log.
///
/// rotel cannot bind port 0 (it panics), and a listening socket cannot be handed to it. So each
/// attempt takes two ports the kernel just handed out and lets rotel bind them: rotel binds
/// both before it logs `Starting Rotel`, and exits with `unable to bind …` when another process
/// took one meanwhile — then the attempt is retried with fresh ports. A lost race costs a retry,
/// never a wrong server: the test only uses ports rotel reported bound.
fn start_collector(agent: &Path, dir: &Path) -> (LoggedChild, u16, PathBuf) {
    let mut failures = Vec::new();
    for attempt in 1..=COLLECTOR_ATTEMPTS {
        let (grpc, http) = (unused_port(), unused_port());
        let mut command = Command::new(agent);
        command
            .args(["start", "--otlp-grpc-endpoint"])
            .arg(format!("127.0.0.1:{grpc}"))
            .arg("--otlp-http-endpoint")
            .arg(format!("127.0.0.1:{http}"))
            .args(["--exporter", "blackhole", "--debug-log", "traces"])
            .args(["--debug-log-verbosity", "detailed"]);
        let log = dir.join(format!("collector-{attempt}.log"));
        let mut child =
            LoggedChild::spawn("rotel-agent", command, &log).unwrap_or_else(|e| panic!("{e}"));
        match child.wait_ready(Duration::from_secs(60), |line| {
            line.contains("Starting Rotel").then_some(())
        }) {
            Ok(()) => return (child, grpc, log),
            Err(NotReady::Died(message)) if message.contains("unable to bind") => {
                failures.push(message)
            }
            Err(e) => panic!("{e}"),
        }
    }
    panic!(
        "the collector could not bind its ports in {COLLECTOR_ATTEMPTS} attempts: {failures:#?}"
    );
}

/// A loopback port the kernel had free a moment ago (only for [`start_collector`], which
/// retries when another process takes it first).
fn unused_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("cannot bind a loopback port: {e}"))
}

/// One exported span as the collector printed it.
#[derive(Debug, Default, Clone)]
struct Span {
    trace_id: String,
    parent_id: String,
    id: String,
    name: String,
    attributes: BTreeMap<String, String>,
}

/// Parses rotel's detailed debug log (`Span #n`, `Trace ID : …`, `-> key: Str(value)`).
fn parse_spans(log: &str) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut current: Option<Span> = None;
    for line in log.lines() {
        let t = line.trim();
        if t.starts_with("Span #") {
            spans.extend(current.take());
            current = Some(Span::default());
            continue;
        }
        let Some(span) = current.as_mut() else {
            continue;
        };
        let field = |prefix: &str| {
            t.strip_prefix(prefix)
                .and_then(|rest| rest.trim_start().strip_prefix(':'))
                .map(|v| v.trim().to_string())
        };
        if let Some(v) = field("Trace ID") {
            span.trace_id = v;
        } else if let Some(v) = field("Parent ID") {
            span.parent_id = v;
        } else if let Some(v) = field("ID") {
            span.id = v;
        } else if let Some(v) = field("Name") {
            span.name = v;
        } else if let Some(rest) = t.strip_prefix("-> ")
            && let Some((k, v)) = rest.split_once(": ")
        {
            span.attributes.insert(k.to_string(), v.to_string());
        }
    }
    spans.extend(current);
    spans
}

#[test]
fn probe_spans_join_the_coordinators_trace_over_otlp() {
    let Some(agent) = rotel_agent() else {
        skip_or_fail(
            "otlp_traces::probe_spans_join_the_coordinators_trace_over_otlp",
            "rotel-agent is not installed (pip install rotel)",
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (_collector, grpc, log_path) = start_collector(&agent, tmp.path());

    // Two providers, one with bearer auth whose key must never be exported.
    let secret = "obt-otlp-secret-3f9a1c77";
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let keyed = Prov {
        key: "keyed".into(),
        profile: "plain".into(),
        extra: "    auth: {scheme: bearer, env: OBT_OTLP_KEY}\n".into(),
    };
    let spec = write_spec(
        tmp.path(),
        &data,
        &[keyed, Prov::sim("telnyx")],
        1,
        0.01,
        400,
    );
    let endpoint = format!("http://127.0.0.1:{grpc}");
    let o = run_bin(
        tmp.path(),
        &["smoke", "--spec", spec.to_str().unwrap()],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OBT_OTLP_KEY", secret),
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(out.contains("smoke attempt 1"), "{out}");

    // The binary flushes its exporter before exiting; give the collector a moment to print.
    let mut spans = Vec::new();
    let waited = Instant::now();
    while waited.elapsed() < Duration::from_secs(10) {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        spans = parse_spans(&text);
        if spans.iter().filter(|s| s.name == "probe.execute").count() >= 6 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert!(!text.contains(secret), "a credential reached the collector");

    // A smoke attempt is 3 rounds × 2 lanes = 6 requests (attempt 2 may add 6 more).
    let calls: BTreeMap<(String, String), &Span> = spans
        .iter()
        .filter(|s| s.name == "openbench.probe_call")
        .map(|s| ((s.trace_id.clone(), s.id.clone()), s))
        .collect();
    let executes: Vec<&Span> = spans.iter().filter(|s| s.name == "probe.execute").collect();
    assert!(
        executes.len() == 6 || executes.len() == 12,
        "{} probe spans: {text}",
        executes.len()
    );
    for e in &executes {
        let parent = calls
            .get(&(e.trace_id.clone(), e.parent_id.clone()))
            .unwrap_or_else(|| panic!("probe span without its coordinator parent: {e:?}"));
        assert_eq!(
            e.attributes.get("request_id"),
            parent.attributes.get("request_id")
        );
        assert!(
            e.attributes
                .get("request_id")
                .is_some_and(|r| r.contains("req-"))
        );
    }
    assert_eq!(calls.len(), executes.len());
}
