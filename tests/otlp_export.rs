#![allow(clippy::unwrap_used, clippy::expect_used)]
//! OTLP export end to end, received by a real OTLP trace service inside the test: a simulated
//! smoke arrives as one trace per session (run → rounds → GenAI request spans) whose request spans
//! carry exactly the terminal records' values; the standard variables name the service and add
//! resource attributes; a collector that never answers cannot fail or hold a command; an
//! `https://` collector is reached with a test CA.

mod coordinator_support;
mod otlp_support;

use coordinator_support::*;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir as layout;
use otlp_support::{Got, Point, Receiver, Val};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Bearer key of the keyed provider: it must never reach the collector.
const SECRET: &str = "obt-otlp-secret-8e21d0c4";

/// A two-provider spec, one of them keyed, in `dir`.
fn spec(dir: &Path) -> std::path::PathBuf {
    let data = sample_dataset(dir, "data", 20260902);
    let keyed = Prov {
        key: "keyed".into(),
        profile: "plain".into(),
        extra: "    auth: {scheme: bearer, env: OBT_OTLP_KEY}\n".into(),
    };
    write_spec(dir, &data, &[keyed, Prov::sim("telnyx")], 1, 0.01, 400)
}

/// Runs `smoke` with `env` (plus the key); returns the run directory and the combined output.
fn smoke(dir: &Path, spec: &Path, env: &[(&str, &str)]) -> (std::path::PathBuf, String) {
    let mut all = env.to_vec();
    all.push(("OBT_OTLP_KEY", SECRET));
    let o = run_bin(dir, &["smoke", "--spec", spec.to_str().unwrap()], &all);
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "smoke failed: {out}");
    (printed_run_dir(&o.stdout), out)
}

/// Every record of the smoke attempts that ran.
fn smoke_records(run_dir: &Path) -> Vec<TerminalRecord> {
    (1..=2)
        .map(|attempt| run_dir.join(layout::smoke_results(attempt)))
        .filter(|p| p.exists())
        .flat_map(|p| records(&p))
        .collect()
}

fn s(v: &str) -> Val {
    Val::S(v.to_string())
}

fn opt_f(v: Option<f64>) -> Option<Val> {
    v.map(Val::F)
}

fn opt_i(v: Option<u64>) -> Option<Val> {
    v.map(|n| Val::I(n as i64))
}

/// Per provider, the total of metric `name` over its series (the latest point of each series:
/// cumulative points supersede earlier ones).
fn per_provider(points: &[Point], name: &str) -> BTreeMap<String, u64> {
    let mut latest: BTreeMap<String, &Point> = BTreeMap::new();
    for p in points.iter().filter(|p| p.name == name) {
        latest.insert(format!("{:?}", p.attributes), p);
    }
    let mut out = BTreeMap::new();
    for p in latest.values() {
        if let Some(Val::S(provider)) = p.attributes.get("gen_ai.provider.name") {
            *out.entry(provider.clone()).or_default() += p.count;
        }
    }
    out
}

/// Per provider, the records for which `has` holds.
fn records_per_provider(
    recs: &[TerminalRecord],
    has: impl Fn(&TerminalRecord) -> bool,
) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for r in recs.iter().filter(|r| has(r)) {
        *out.entry(r.provider.clone()).or_default() += 1;
    }
    out
}

/// The request spans (`chat …`) by `openbench.request_id`.
fn request_spans(spans: &[Got]) -> BTreeMap<String, Got> {
    spans
        .iter()
        .filter(|g| g.name.starts_with("chat "))
        .map(|g| match g.attributes.get("openbench.request_id") {
            Some(Val::S(id)) => (id.clone(), g.clone()),
            other => panic!("request span without openbench.request_id ({other:?}): {g:?}"),
        })
        .collect()
}

#[test]
fn a_smoke_arrives_as_run_round_and_genai_spans_equal_to_its_records() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = spec(tmp.path());
    let receiver = Receiver::start();
    let endpoint = format!("http://{}", receiver.addr);
    let (run_dir, out) = smoke(
        tmp.path(),
        &spec,
        &[
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint.as_str()),
            ("OTEL_SERVICE_NAME", "bench-under-test"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci"),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", endpoint.as_str()),
        ],
    );
    let recs = smoke_records(&run_dir);
    assert!(
        recs.len() == 6 || recs.len() == 12,
        "{} records: {out}",
        recs.len()
    );
    // The binary flushed before exiting, so everything is already here.
    let spans = receiver.spans();
    let by_id: BTreeMap<&str, &Got> = spans.iter().map(|g| (g.span_id.as_str(), g)).collect();
    let requests = request_spans(&spans);
    assert_eq!(
        requests.len(),
        recs.len(),
        "one request span per record: {spans:#?}"
    );

    for g in &spans {
        assert_eq!(g.service, "bench-under-test", "OTEL_SERVICE_NAME wins");
        assert_eq!(g.resource.get("deployment.environment"), Some(&s("ci")));
        assert_eq!(
            g.resource.get("service.version"),
            Some(&s(env!("CARGO_PKG_VERSION")))
        );
    }
    let runs: Vec<&Got> = spans.iter().filter(|g| g.name == "openbench.run").collect();
    let sessions = recs.len() / 6;
    assert_eq!(runs.len(), sessions, "one run span per smoke attempt");
    for run in &runs {
        assert_eq!(run.parent_id, "", "the run span is a root");
        let rounds: Vec<&Got> = spans
            .iter()
            .filter(|g| g.name == "openbench.round" && g.parent_id == run.span_id)
            .collect();
        assert_eq!(rounds.len(), 3, "a smoke attempt is three rounds");
        for round in rounds {
            assert_eq!(round.trace_id, run.trace_id);
            assert!(matches!(
                round.attributes.get("openbench.launch_skew_ms"),
                Some(Val::F(_))
            ));
        }
    }

    for rec in &recs {
        let g = requests
            .get(&rec.request_id)
            .unwrap_or_else(|| panic!("no span for {}", rec.request_id));
        let round = by_id
            .get(g.parent_id.as_str())
            .unwrap_or_else(|| panic!("request span without its round: {g:?}"));
        assert_eq!(round.name, "openbench.round");
        assert_eq!(round.trace_id, g.trace_id, "one trace across the gRPC hop");
        assert_eq!(
            round.attributes.get("openbench.round_index"),
            Some(&Val::I(rec.round_index as i64))
        );
        assert_eq!(
            round.attributes.get("openbench.item_id"),
            Some(&s(&rec.item_id))
        );
        assert_eq!(g.name, format!("chat m-{}", rec.provider));
        assert_eq!(g.kind, 3, "kind CLIENT");
        let a = &g.attributes;
        let expect: Vec<(&str, Option<Val>)> = vec![
            ("gen_ai.operation.name", Some(s("chat"))),
            ("gen_ai.provider.name", Some(s(&rec.provider))),
            ("gen_ai.request.model", Some(s(&rec.requested_model))),
            ("gen_ai.request.max_tokens", Some(Val::I(256))),
            ("gen_ai.request.temperature", Some(Val::F(0.0))),
            ("gen_ai.request.top_p", Some(Val::F(1.0))),
            ("gen_ai.request.stream", Some(Val::B(true))),
            (
                "gen_ai.response.model",
                rec.response_model.as_deref().map(s),
            ),
            (
                "gen_ai.response.id",
                rec.provider_request_id.as_deref().map(s),
            ),
            (
                "gen_ai.response.finish_reasons",
                rec.finish_reason.as_deref().map(|r| Val::A(vec![s(r)])),
            ),
            (
                "gen_ai.response.time_to_first_chunk",
                opt_f(rec.ttfo_ms.map(|ms| ms / 1000.0)),
            ),
            (
                "gen_ai.usage.input_tokens",
                opt_i(rec.usage.as_ref().and_then(|u| u.prompt_tokens)),
            ),
            (
                "gen_ai.usage.output_tokens",
                opt_i(rec.usage.as_ref().and_then(|u| u.completion_tokens)),
            ),
            ("openbench.ttfo_ms", opt_f(rec.ttfo_ms)),
            ("openbench.ttfa_ms", opt_f(rec.ttfa_ms)),
            ("openbench.e2e_ms", opt_f(rec.e2e_ms)),
            (
                "openbench.output_tokens_per_second",
                opt_f(rec.output_tokens_per_second),
            ),
            ("openbench.answer_tokens", opt_i(rec.answer_tokens)),
            (
                "openbench.reasoning_tokens_before_answer",
                opt_i(rec.reasoning_tokens_before_answer),
            ),
            ("openbench.task_family", Some(s(&rec.task_family))),
            ("openbench.item_id", Some(s(&rec.item_id))),
            ("openbench.lane", Some(s(&rec.lane))),
            ("openbench.region", Some(s(&rec.region))),
            ("server.address", Some(s("127.0.0.1"))),
            ("gen_ai.input.messages", None),
            ("gen_ai.output.messages", None),
            // Paired rounds are no load phase: nothing new on their spans.
            ("openbench.load.phase", None),
            ("openbench.load.target", None),
        ];
        for (key, want) in expect {
            let got = a.get(key);
            match (got, want.as_ref()) {
                // The record went through serde_json, whose default float parsing may miss the
                // last bit; the span has the probe's exact value.
                (Some(Val::F(g)), Some(Val::F(w))) => assert!(
                    (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                    "{key} of {}: {g} vs {w}",
                    rec.request_id
                ),
                _ => assert_eq!(got, want.as_ref(), "{key} of {}", rec.request_id),
            }
        }
        let completed = rec.outcome == Outcome::Completed;
        let outcome = serde_json::to_value(rec.outcome).unwrap();
        assert_eq!(a.get("openbench.outcome"), outcome.as_str().map(s).as_ref());
        assert_eq!(
            g.status_code == 2,
            !completed,
            "ERROR status iff not completed"
        );
        // Events sit at the record's offsets from one clock zero: their spacing is TTFA − TTFO.
        let at = |name: &str| g.events.iter().find(|(n, _)| n == name).map(|(_, t)| *t);
        if let (Some(o), Some(f), Some(ttfo), Some(ttfa)) = (
            at("openbench.first_output"),
            at("openbench.first_answer"),
            rec.ttfo_ms,
            rec.ttfa_ms,
        ) {
            let spacing_ms = (f as f64 - o as f64) / 1e6;
            assert!(
                (spacing_ms - (ttfa - ttfo)).abs() < 0.001,
                "events {spacing_ms} ms apart, record says {} ms",
                ttfa - ttfo
            );
        } else {
            assert!(!completed, "a completed request has both events: {g:?}");
        }
    }

    // Metrics: counts per provider equal the records per provider.
    let points = receiver.points();
    assert!(
        points.iter().all(|p| !p
            .attributes
            .keys()
            .any(|k| k.starts_with("openbench.load."))),
        "paired rounds label no point with a load: {points:#?}"
    );
    assert_eq!(
        per_provider(&points, "openbench.client.requests"),
        records_per_provider(&recs, |_| true),
        "requests counter: {points:#?}"
    );
    assert_eq!(
        per_provider(&points, "gen_ai.client.operation.duration"),
        records_per_provider(&recs, |r| r.stream_end_ms.is_some())
    );
    assert_eq!(
        per_provider(&points, "openbench.client.ttfa"),
        records_per_provider(&recs, |r| r.ttfa_ms.is_some())
    );
    assert_eq!(
        per_provider(&points, "gen_ai.client.token.usage"),
        records_per_provider(&recs, |r| r
            .usage
            .as_ref()
            .is_some_and(|u| u.prompt_tokens.is_some()))
        .into_iter()
        .map(|(p, n)| (p, 2 * n))
        .collect::<BTreeMap<_, _>>(),
        "one input and one output point per request with usage"
    );
    let duration = points
        .iter()
        .find(|p| p.name == "gen_ai.client.operation.duration")
        .unwrap();
    assert_eq!(
        duration.bounds,
        [
            0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92
        ],
        "the conventions' advisory buckets"
    );

    let raw = receiver.raw_text();
    assert!(!raw.contains(SECRET), "a credential reached the collector");
    let prompt_word = recs
        .iter()
        .find(|r| r.answer_text.len() > 8)
        .map(|r| r.answer_text.clone());
    if let Some(answer) = prompt_word {
        assert!(
            !raw.contains(&answer),
            "answer text exported without the capture flag"
        );
    }
}

#[test]
fn a_collector_that_never_answers_neither_fails_nor_holds_the_command() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = spec(tmp.path());
    // Accepts TCP connections (the kernel's backlog) but never speaks: every export hangs.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let started = Instant::now();
    let (run_dir, _) = smoke(
        tmp.path(),
        &spec,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            // Each export may wait ten minutes: only the bounded flush at exit can end it.
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "600000"),
        ],
    );
    let elapsed = started.elapsed();
    assert!(smoke_records(&run_dir).len() >= 6);
    assert!(
        elapsed < Duration::from_secs(300),
        "the exit waited for the export timeout: {elapsed:?}"
    );
}

#[test]
fn an_https_collector_is_reached_with_a_test_ca_and_never_fails_the_command_without_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (untrusted, trusted) = (tmp.path().join("untrusted"), tmp.path().join("trusted"));
    std::fs::create_dir_all(&untrusted).unwrap();
    std::fs::create_dir_all(&trusted).unwrap();
    let (ca, cert, key) = test_ca();
    let ca_path = tmp.path().join("collector-ca.pem");
    std::fs::write(&ca_path, ca).unwrap();
    let receiver = Receiver::start_with(Some((cert, key)));
    let endpoint = format!("https://localhost:{}", receiver.addr.port());

    // Without the CA the certificate is untrusted: no span arrives, and the command succeeds.
    let spec_untrusted = spec(&untrusted);
    smoke(
        &untrusted,
        &spec_untrusted,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())],
    );
    assert!(
        receiver.spans().is_empty(),
        "an untrusted collector got spans"
    );

    // With it, the spans arrive over TLS, under the default service name.
    let spec_trusted = spec(&trusted);
    smoke(
        &trusted,
        &spec_trusted,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", ca_path.to_str().unwrap()),
        ],
    );
    let spans = receiver.spans();
    assert!(
        spans.iter().any(|g| g.name.starts_with("chat ")),
        "no request span over TLS: {spans:#?}"
    );
    assert!(spans.iter().all(|g| g.service == "openbench-inference"));
}

/// A load run's traces: one root `openbench.load_phase` span per step, named for the step and its
/// load, and every request span a child of its step's span (so a trace says which step and load a
/// request served).
#[test]
fn a_load_run_arrives_as_one_phase_span_per_step_parenting_its_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("load.yaml");
    std::fs::write(
        &spec,
        "benchmark: {slug: load-otlp, workflow: load, schedule_version: load-otlp-v1}
request: {temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 20000,
  harness_grace_ms: 60000}
providers:
  - {key: p, endpoint: 'sim://plain?slots=4', model: m, auth: {scheme: none}, max_tokens_field: max_tokens}
dataset: {source: ., manifest: none}
simulator: {time_scale: 1.0, seed: 7}
run_root: runs
load:
  seed: 2
  phases: {warmup_s: 0.2, measure: {duration_s: 0.6}, cooldown_s: 0}
  steps: [{model: closed, concurrency: 2}, {model: constant, rate_per_s: 10}]
  workload:
    kind: synthetic
    input_tokens: {dist: fixed, tokens: 20}
    output_tokens: {dist: fixed, tokens: 8}
",
    )
    .unwrap();
    let receiver = Receiver::start();
    let endpoint = format!("http://{}", receiver.addr);
    let o = run_bin(
        tmp.path(),
        &[
            "demo",
            "--workflow",
            "load",
            "--spec",
            spec.to_str().unwrap(),
        ],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())],
    );
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "load demo failed: {out}");
    let recs = records(&printed_run_dir(&o.stdout).join(layout::FULL_RESULTS));
    let spans = receiver.spans();
    let phases: Vec<&Got> = spans
        .iter()
        .filter(|g| g.name == "openbench.load_phase")
        .collect();
    let names: Vec<(Option<&Val>, Option<&Val>, Option<&Val>)> = phases
        .iter()
        .map(|g| {
            (
                g.attributes.get("openbench.phase_index"),
                g.attributes.get("openbench.phase_name"),
                g.attributes.get("openbench.phase_kind"),
            )
        })
        .collect();
    let (i0, i1) = (Val::I(0), Val::I(1));
    let (n0, n1) = (s("step-0 closed c=2"), s("step-1 constant 10/s"));
    let (closed, open) = (s("closed_loop"), s("open_loop"));
    assert_eq!(
        names,
        vec![
            (Some(&i0), Some(&n0), Some(&closed)),
            (Some(&i1), Some(&n1), Some(&open)),
        ],
        "{out}"
    );
    let loads = [s("closed c=2"), s("constant 10/s")];
    for (phase, load) in phases.iter().zip(&loads) {
        assert_eq!(phase.attributes.get("openbench.load.target"), Some(load));
    }
    for phase in &phases {
        assert_eq!(phase.parent_id, "", "a phase span is a root");
        assert_eq!(
            phase.attributes.get("openbench.phase_lanes"),
            Some(&Val::I(1))
        );
    }
    let requests = request_spans(&spans);
    assert!(!recs.is_empty());
    assert_eq!(requests.len(), recs.len(), "one request span per record");
    for r in &recs {
        let span = &requests[&r.request_id];
        let phase = phases[r.phase.unwrap() as usize];
        assert_eq!(
            (span.parent_id.as_str(), span.trace_id.as_str()),
            (phase.span_id.as_str(), phase.trace_id.as_str()),
            "request {} under its step's span",
            r.request_id
        );
        // The request span itself says which step and load it served.
        let step = r.phase.unwrap();
        assert_eq!(
            (
                span.attributes.get("openbench.load.phase"),
                span.attributes.get("openbench.load.target"),
            ),
            (Some(&Val::I(i64::from(step))), Some(&loads[step as usize])),
            "request {}",
            r.request_id
        );
    }

    // Metrics: every point carries its step and load, and the requests counted under each step
    // are that step's records.
    let points = receiver.points();
    assert!(!points.is_empty(), "no metric point arrived: {out}");
    for p in &points {
        let step = match p.attributes.get("openbench.load.phase") {
            Some(Val::I(step)) => *step as usize,
            other => panic!("point without its step ({other:?}): {p:?}"),
        };
        assert_eq!(
            p.attributes.get("openbench.load.target"),
            Some(&loads[step]),
            "{p:?}"
        );
    }
    let mut latest: BTreeMap<String, &Point> = BTreeMap::new();
    for p in points
        .iter()
        .filter(|p| p.name == "openbench.client.requests")
    {
        latest.insert(format!("{:?}", p.attributes), p);
    }
    let mut counted: BTreeMap<i64, u64> = BTreeMap::new();
    for p in latest.values() {
        if let Some(Val::I(step)) = p.attributes.get("openbench.load.phase") {
            *counted.entry(*step).or_default() += p.count;
        }
    }
    let mut per_step: BTreeMap<i64, u64> = BTreeMap::new();
    for r in &recs {
        *per_step.entry(i64::from(r.phase.unwrap())).or_default() += 1;
    }
    assert_eq!(counted, per_step, "requests counted per step");
}
