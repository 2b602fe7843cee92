#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Traces through a real collector, across processes: `rotel-agent` (a Rust OpenTelemetry
//! collector from PyPI) receives OTLP/HTTP (`http/protobuf`) from the coordinator and from a
//! separate `probe serve` process, and forwards it over OTLP/gRPC to a trace service inside the
//! test. A smoke must arrive as one trace per session in which each request span, exported by
//! the probe process under its own service name and region, is a child of the coordinator's
//! round span; no span may arrive outside a run's trace (one per attempt), and no credential value
//! may appear in anything exported.
//!
//! Without `rotel-agent` the test reports itself skipped (a skip `scripts/test.sh` counts),
//! unless `OPENBENCH_REQUIRE_REAL_TARGETS` is set (CI sets it), where that is a failure.

mod coordinator_support;
mod otlp_support;
mod real_targets;

use coordinator_support::*;
use otlp_support::{Receiver, Val};
use real_targets::child::{LoggedChild, NotReady};
use real_targets::ours::{start_probe, start_simulator};
use real_targets::skip::skip_or_fail;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

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

/// Starts the collector forwarding to `forward_to` (OTLP/gRPC); returns it and its OTLP/HTTP port.
///
/// rotel cannot bind port 0 (it panics), and a listening socket cannot be handed to it. So each
/// attempt takes two ports the kernel just handed out and lets rotel bind them: rotel binds
/// both before it logs `Starting Rotel`, and exits with `unable to bind …` when another process
/// took one meanwhile — then the attempt is retried with fresh ports. A lost race costs a retry,
/// never a wrong server: the test only uses ports rotel reported bound.
fn start_collector(agent: &Path, dir: &Path, forward_to: &str) -> (LoggedChild, u16) {
    let mut failures = Vec::new();
    for attempt in 1..=COLLECTOR_ATTEMPTS {
        let (grpc, http) = (unused_port(), unused_port());
        let mut command = Command::new(agent);
        command
            .args(["start", "--otlp-grpc-endpoint"])
            .arg(format!("127.0.0.1:{grpc}"))
            .arg("--otlp-http-endpoint")
            .arg(format!("127.0.0.1:{http}"))
            .args(["--exporter", "otlp", "--otlp-exporter-endpoint", forward_to]);
        let log = dir.join(format!("collector-{attempt}.log"));
        let mut child =
            LoggedChild::spawn("rotel-agent", command, &log).unwrap_or_else(|e| panic!("{e}"));
        match child.wait_ready(Duration::from_secs(60), |line| {
            line.contains("Starting Rotel").then_some(())
        }) {
            Ok(()) => return (child, http),
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
    let receiver = Receiver::start();
    let (collector_child, http) =
        start_collector(&agent, tmp.path(), &format!("http://{}", receiver.addr));
    let collector = format!("http://127.0.0.1:{http}");
    let otel: [(&str, &str); 2] = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
    ];

    // Two providers, one with bearer auth whose key must never be exported.
    let secret = "obt-otlp-secret-3f9a1c77";
    let data = sample_dataset(tmp.path(), "data", 20260902);
    // The providers: a simulator process (a remote probe cannot serve `sim://`).
    let (_sim, sim_base) = start_simulator(tmp.path(), &data);
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
    let with_probe = |probe: &str| {
        let text = std::fs::read_to_string(&spec).unwrap();
        let chat = format!("{sim_base}/chat/completions");
        let text = text
            .replace("sim://plain", &chat)
            .replace("sim://telnyx", &chat);
        let text = match text.find("regions:") {
            Some(at) => text[..at].to_string(),
            None => text,
        };
        std::fs::write(
            &spec,
            format!("{text}regions:\n  - name: east\n    probe: {probe}\n"),
        )
        .unwrap();
    };
    // The probe reads its providers from the spec; the coordinator then learns its address.
    with_probe("http://127.0.0.1:1");
    let mut probe_env = otel.to_vec();
    probe_env.push(("OBT_OTLP_KEY", secret));
    let spec_arg = spec.to_str().unwrap().to_string();
    let (_probe, probe_addr) = start_probe(
        tmp.path(),
        "probe",
        &spec_arg,
        "east",
        "127.0.0.1:0",
        &probe_env,
    );
    with_probe(&format!("http://{probe_addr}"));

    let mut run_env = otel.to_vec();
    run_env.push(("OBT_OTLP_KEY", secret));
    let o = run_bin(tmp.path(), &["smoke", "--spec", &spec_arg], &run_env);
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    // The smoke's verdict (it checks answers) is not this test's business; its records are.
    assert!(out.contains("smoke attempt 1"), "{out}");
    let run_dir = printed_run_dir(&o.stdout);
    let recs: Vec<_> = (1..=2)
        .map(|a| run_dir.join(openbench_common::rundir::smoke_results(a)))
        .filter(|p| p.exists())
        .flat_map(|p| records(&p))
        .collect();
    assert!(recs.len() == 6 || recs.len() == 12, "{out}");

    // The coordinator flushed at exit; the probe's batch goes out on its schedule (≤ 5 s).
    let spans = receiver.wait_for(Duration::from_secs(60), |spans| {
        spans.iter().filter(|g| g.name.starts_with("chat ")).count() >= recs.len()
    });
    let requests: Vec<_> = spans
        .iter()
        .filter(|g| g.name.starts_with("chat "))
        .collect();
    assert_eq!(
        requests.len(),
        recs.len(),
        "one request span per record: {spans:#?}\ncollector log:\n{}\ncommand output:\n{out}",
        collector_child.log_text()
    );
    for g in &requests {
        assert_eq!(
            g.service, "openbench-probe",
            "the probe reports as its own service"
        );
        assert_eq!(g.resource.get("cloud.region"), Some(&Val::S("east".into())));
        let round = spans
            .iter()
            .find(|r| r.span_id == g.parent_id && r.trace_id == g.trace_id)
            .unwrap_or_else(|| panic!("request span without its round: {g:?}"));
        assert_eq!(round.name, "openbench.round");
        assert_eq!(round.service, "openbench-inference");
        let run = spans
            .iter()
            .find(|r| r.span_id == round.parent_id && r.trace_id == g.trace_id)
            .unwrap_or_else(|| panic!("round span without its run: {round:?}"));
        assert_eq!(run.name, "openbench.run");
        let id = match g.attributes.get("openbench.request_id") {
            Some(Val::S(id)) => id.clone(),
            other => panic!("no request id: {other:?}"),
        };
        let rec = recs.iter().find(|r| r.request_id == id).unwrap();
        assert_eq!(
            g.attributes.get("openbench.ttfa_ms"),
            rec.ttfa_ms.map(Val::F).as_ref()
        );
    }
    // Only run traces leave the processes: one per smoke attempt, and no span outside them (the
    // actor framework's own spans stay home).
    let attempts = recs.len() / 6;
    let run_traces: std::collections::BTreeSet<_> = spans
        .iter()
        .filter(|g| g.name == "openbench.run")
        .map(|g| g.trace_id.clone())
        .collect();
    assert_eq!(
        run_traces.len(),
        attempts,
        "one run trace per attempt: {spans:#?}"
    );
    let stray: Vec<_> = spans
        .iter()
        .filter(|g| !run_traces.contains(&g.trace_id))
        .map(|g| (g.service.as_str(), g.name.as_str()))
        .collect();
    assert_eq!(
        stray,
        Vec::<(&str, &str)>::new(),
        "spans outside a run trace"
    );
    assert!(
        !receiver.raw_text().contains(secret),
        "a credential reached the collector"
    );
}
