#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A small recorded run (3 providers × 3 families × 2 items, hand-chosen timings) reported twice:
//! byte-identical artifacts, and metrics equal to values computed by hand below.

use openbench_common::record::{ErrorType, Outcome, TerminalRecord, Usage};
use openbench_common::rundir::{self as layout, LockedProvider, RunLock};
use openbench_micro_single_task::metrics::RunMetrics;
use openbench_micro_single_task::paired::PairedComparisons;
use openbench_micro_single_task::report::{self, GoldTable};
use openbench_micro_single_task::scoring::{Family, GoldRef};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

const MODEL: &str = "glm-test";
const PROVIDERS: [(&str, &str); 3] = [("alpha", "Alpha"), ("beta", "Beta"), ("gamma", "Gamma")];
/// Round r: (family, item). Item index 0 then 1, families in order.
const ROUNDS: [(&str, &str); 6] = [
    ("meeting-notes-lookup", "mn-1"),
    ("ticket-triage", "tt-1"),
    ("contract-terms-extraction", "ct-1"),
    ("meeting-notes-lookup", "mn-2"),
    ("ticket-triage", "tt-2"),
    ("contract-terms-extraction", "ct-2"),
];

fn contract(payment: i64) -> Value {
    json!({"agreement_type":"software_license","effective_date":"2027-01-01",
           "initial_term_end_date":"2028-01-01","auto_renews":true,"renewal_term_months":12,
           "non_renewal_notice_days":30,"payment_terms_days":payment,
           "termination_for_convenience":false,"termination_notice_days":null,
           "security_incident_notice_hours":48})
}

fn gold() -> GoldTable {
    let mut t = HashMap::new();
    t.insert(
        "mn-1".into(),
        GoldRef::MeetingNotes {
            value: "Oslo".into(),
            aliases: vec![],
        },
    );
    t.insert(
        "mn-2".into(),
        GoldRef::MeetingNotes {
            value: "Bergen".into(),
            aliases: vec!["Bergen, Norway".into()],
        },
    );
    t.insert(
        "tt-1".into(),
        GoldRef::TicketTriage {
            category: "bug".into(),
            priority: "p1".into(),
        },
    );
    t.insert(
        "tt-2".into(),
        GoldRef::TicketTriage {
            category: "feature".into(),
            priority: "p2".into(),
        },
    );
    for (id, pay) in [("ct-1", 30), ("ct-2", 45)] {
        t.insert(
            id.into(),
            GoldRef::from_json(Family::ContractTermsExtraction, &contract(pay), &[]).unwrap(),
        );
    }
    GoldTable(t)
}

fn correct_answer(round: usize) -> String {
    match round {
        0 => r#"{"answer": "oslo"}"#.into(),
        1 => r#"{"category": "bug", "priority": "p1"}"#.into(),
        2 => contract(30).to_string(),
        3 => r#"{"answer": "BERGEN,  norway"}"#.into(),
        4 => r#"{"category": "feature", "priority": "p2"}"#.into(),
        _ => contract(45).to_string(),
    }
}

fn req_id(provider: &str, round: usize) -> String {
    format!("req-{provider}-{round}")
}

fn lock() -> RunLock {
    let providers = PROVIDERS
        .iter()
        .map(|(k, d)| LockedProvider {
            key: k.to_string(),
            display_name: d.to_string(),
            model: MODEL.into(),
            input_price_per_mtok: Some(1.0),
            output_price_per_mtok: Some(2.0),
            // Alpha discounts cached input; the others bill it at the input price.
            cached_input_price_per_mtok: (*k == "alpha").then_some(0.25),
            cache_write_input_price_per_mtok: None,
        })
        .collect();
    let families = ROUNDS[..3].iter().map(|r| r.0.to_string()).collect();
    RunLock {
        model_label: "GLM Test".into(),
        spec_sha256: "aa".repeat(32),
        spec_inputs_sha256: None,
        dataset_dir: "/nonexistent".into(),
        dataset_manifest: "manifest.json".into(),
        dataset_release_hash: "bb".repeat(32),
        adapters_sha256: "cc".repeat(32),
        tokenizer_ranks_sha256: "dd".repeat(32),
        code_sha256: "ee".repeat(32),
        program_version: "0.1.0".into(),
        simulator_time_scale: Some(0.01),
        created_at: "2026-01-01T00:00:00Z".into(),
        ..RunLock::synthetic("micro-single-task", "run-test", families, providers)
    }
}

fn plan() -> Value {
    json!({
        "plan_version": 1, "kind": "full", "attempt": 0,
        "benchmark_slug": "test", "schedule_version": "v1", "dataset_release_hash": "00",
        "families": ["meeting-notes-lookup", "ticket-triage", "contract-terms-extraction"],
        "items_per_family": 2,
        "lanes": PROVIDERS.iter().map(|(k, _)| json!({"label": k, "provider": k, "region": "local"})).collect::<Vec<_>>(),
        "rounds": ROUNDS.iter().enumerate().map(|(r, (family, item))| json!({
            "round_index": r, "round_id": format!("round-{r}"), "task_family": family,
            "item_id": item, "item_hash": "00",
            "requests": PROVIDERS.iter().map(|(k, _)| json!({
                "lane": k, "provider": k, "region": "local", "request_id": req_id(k, r)
            })).collect::<Vec<_>>()
        })).collect::<Vec<_>>()
    })
}

/// A completed record: TTFA = E2E − 50, TTFO = TTFA − 10.
fn completed(provider: &str, round: usize, e2e: f64, answer: &str) -> TerminalRecord {
    let mut r = base(provider, round, Outcome::Completed);
    r.http_status = Some(200);
    r.response_model = Some(MODEL.into());
    r.ttfa_ms = Some(e2e - 50.0);
    r.ttfo_ms = Some(e2e - 60.0);
    r.e2e_ms = Some(e2e);
    r.answer_text = answer.into();
    r.usage = Some(Usage {
        prompt_tokens: Some(100),
        completion_tokens: Some(20),
        total_tokens: Some(120),
        cached_tokens: Some(40),
        ..Usage::default()
    });
    r
}

fn base(provider: &str, round: usize, outcome: Outcome) -> TerminalRecord {
    let mut r = TerminalRecord::new(format!("2026-01-01T00:00:0{round}Z"), outcome);
    r.run_id = "run-test".into();
    r.round_id = format!("round-{round}");
    r.request_id = req_id(provider, round);
    r.round_index = round as u64;
    r.task_family = ROUNDS[round].0.into();
    r.item_id = ROUNDS[round].1.into();
    r.provider = provider.into();
    r.region = "local".into();
    r.lane = provider.into();
    r.requested_model = MODEL.into();
    r
}

fn records() -> Vec<TerminalRecord> {
    let mut out = Vec::new();
    // alpha: everything correct; E2E 100..600, tokens/s 10..60.
    for r in 0..6 {
        let mut rec = completed("alpha", r, 100.0 * (r as f64 + 1.0), &correct_answer(r));
        rec.output_tokens_per_second = Some(10.0 * (r as f64 + 1.0));
        rec.reasoning_text = if r < 3 { "think".into() } else { String::new() };
        rec.reasoning_tokens_before_answer = Some(if r < 3 { 4 } else { 0 });
        out.push(rec);
    }
    // beta: r0 correct (ties alpha at 100), r1 HTTP 429, r2 wrong payment term, r3 fenced JSON,
    // r4 correct, r5 stream error after a first answer token at 1000 ms.
    out.push(completed("beta", 0, 100.0, &correct_answer(0)));
    let mut r1 = base("beta", 1, Outcome::HttpError);
    r1.error_type = Some(ErrorType::Http429);
    r1.http_status = Some(429);
    r1.error_message = Some("rate limited".into());
    out.push(r1);
    out.push(completed("beta", 2, 250.0, &contract(60).to_string()));
    out.push(completed(
        "beta",
        3,
        350.0,
        "```json\n{\"answer\": \"Bergen\"}\n```",
    ));
    out.push(completed("beta", 4, 450.0, &correct_answer(4)));
    let mut r5 = base("beta", 5, Outcome::StreamError);
    r5.error_type = Some(ErrorType::StreamError);
    r5.http_status = Some(200);
    r5.ttfa_ms = Some(1000.0);
    r5.ttfo_ms = Some(1000.0);
    r5.response_model = Some(MODEL.into());
    out.push(r5);
    // gamma: all correct but echoes another model in r2 (configuration-incompatible); r5 first
    // has a harness failure, then the real record after a resume.
    for (r, e2e) in [90.0, 210.0, 310.0, 390.0, 510.0].into_iter().enumerate() {
        let mut rec = completed("gamma", r, e2e, &correct_answer(r));
        if r == 2 {
            rec.response_model = Some("glm-other".into());
        }
        out.push(rec);
    }
    let mut harness = base("gamma", 5, Outcome::HarnessError);
    harness.error_type = Some(ErrorType::Harness);
    out.push(harness);
    out.push(completed("gamma", 5, 610.0, &correct_answer(5)));
    out
}

fn write_run(dir: &Path) {
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    std::fs::create_dir_all(dir.join("artifacts")).unwrap();
    std::fs::write(
        dir.join(layout::RUN_LOCK),
        serde_json::to_vec_pretty(&lock()).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join(layout::FULL_PLAN), plan().to_string()).unwrap();
    let mut f = std::fs::File::create(dir.join(layout::FULL_RESULTS)).unwrap();
    for r in records() {
        writeln!(f, "{}", serde_json::to_string(&r).unwrap()).unwrap();
    }
    // A crash mid-write leaves half a line at the end: ignored.
    write!(f, "{{\"schema_version\":1,\"run_id\":\"run-te").unwrap();
}

const DERIVED: [&str; 6] = [
    layout::METRICS,
    layout::PAIRED,
    layout::EVALUATIONS,
    layout::FAILURES,
    layout::REPORT_MD,
    layout::REPORT_HTML,
];

#[test]
fn rereporting_is_byte_identical_and_matches_hand_values() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_run(dir);
    let gold = gold();
    let (table, written) = report::write_all(dir, &lock(), &gold).unwrap();
    assert_eq!(written.len(), 6);
    let first: Vec<Vec<u8>> = DERIVED
        .iter()
        .map(|n| std::fs::read(dir.join(n)).unwrap())
        .collect();
    report::write_all(dir, &lock(), &gold).unwrap();
    for (name, before) in DERIVED.iter().zip(&first) {
        assert_eq!(
            &std::fs::read(dir.join(name)).unwrap(),
            before,
            "{name} changed"
        );
    }

    let m: RunMetrics = serde_json::from_slice(&first[0]).unwrap();
    assert_eq!(m.rounds, 6);
    let names: Vec<&str> = m
        .providers
        .iter()
        .map(|p| p.display_name.as_str())
        .collect();
    assert_eq!(names, ["Alpha", "Beta", "Gamma"]);
    let (a, b, g) = (&m.providers[0], &m.providers[1], &m.providers[2]);

    // alpha: E2E [100..600], n = 6: p50 → ceil(3) − 1 = idx 2 → 300; p95, p99 → idx 5 → 600.
    assert_eq!(a.pooled.e2e_latency_p50, Some(300.0));
    assert_eq!(a.pooled.e2e_latency_p95, Some(600.0));
    assert_eq!(a.pooled.e2e_latency_p99, Some(600.0));
    // TTFA = E2E − 50 → p50 250; TTFO = E2E − 60 → p50 240.
    assert_eq!(a.pooled.ttfa_p50, Some(250.0));
    assert_eq!(a.pooled.ttfo_p50, Some(240.0));
    // tokens/s [10..60]: p50 → 30; floors p = .05 → ceil(0.3) − 1 = idx 0 → 10; p = .01 → 10.
    assert_eq!(a.pooled.output_tokens_per_second_p50, Some(30.0));
    assert_eq!(a.pooled.output_tokens_per_second_p95, Some(10.0));
    assert_eq!(a.pooled.output_tokens_per_second_p99, Some(10.0));
    // Reasoning before answer [0,0,0,4,4,4]: p50 → idx 2 → 0; mean 12 / 6 = 2; emitted 3 / 6.
    assert_eq!(a.pooled.pre_answer_reasoning_tokens_p50, Some(0.0));
    assert_eq!(a.pooled.pre_answer_reasoning_tokens_mean, Some(2.0));
    assert_eq!(a.pooled.reasoning_emission_rate, Some(0.5));
    // Usage: 6 × (100 prompt of which 40 cached, 20 completion); Alpha's cost
    // (360 × 1 + 240 × 0.25 + 120 × 2) / 1e6 = 0.00066; Beta, without a cached price, bills
    // its cached tokens at the input price: (prompt × 1 + completion × 2) / 1e6.
    assert_eq!(a.pooled.usage.prompt_tokens, 600);
    assert_eq!(a.pooled.usage.cached_tokens, 240);
    assert_eq!(a.pooled.usage.completion_tokens, 120);
    assert_eq!(a.pooled.usage.usage_coverage, Some(1.0));
    assert!((a.pooled.usage.cost_usd.unwrap() - 0.00066).abs() < 1e-12);
    let bu = &b.pooled.usage;
    assert!(bu.cached_tokens > 0, "{bu:?}");
    let beta = (bu.prompt_tokens as f64 + 2.0 * bu.completion_tokens as f64) / 1e6;
    assert!((bu.cost_usd.unwrap() - beta).abs() < 1e-12, "{bu:?}");
    assert_eq!(a.pooled.task_success_rate, Some(1.0));
    assert_eq!(a.pooled.balanced, Some(true));
    assert!(a.eligible && a.complete);
    assert_eq!(a.rank, Some(1));

    // beta: 6 submitted, 2 correct (r0, r4) → 2/6; failures r1 (429), r5 (stream) → 2/6.
    assert_eq!(b.pooled.submitted_count, 6);
    assert_eq!(b.pooled.task_success_rate, Some(2.0 / 6.0));
    assert_eq!(b.pooled.failure_rate, Some(2.0 / 6.0));
    assert_eq!(b.pooled.failure_breakdown.http_429, 1);
    assert_eq!(b.pooled.failure_breakdown.stream_error, 1);
    assert_eq!(
        (
            b.pooled.valid_result_count,
            b.pooled.incorrect_result_count,
            b.pooled.invalid_result_count
        ),
        (2, 1, 1)
    );
    // Latency populations leave the failed r5 out (its TTFA 1000 would make the p50 300):
    // TTFA [50, 200, 300, 400], n = 4: p50 → idx 1 → 200. E2E [100, 250, 350, 450]: p99 → 450.
    assert_eq!(b.pooled.ttfa_population, 4);
    assert_eq!(b.pooled.ttfa_p50, Some(200.0));
    assert_eq!(b.pooled.e2e_latency_population, 4);
    assert_eq!(b.pooled.e2e_latency_p50, Some(250.0));
    assert_eq!(b.pooled.e2e_latency_p99, Some(450.0));
    // Per family: ticket = {r1 failed, r4 correct} → success 1/2, failure 1/2.
    let ticket = &b.families[1];
    assert_eq!(ticket.task_family, "ticket-triage");
    assert_eq!(ticket.task_success_rate, Some(0.5));
    assert_eq!(ticket.failure_rate, Some(0.5));
    // Contract: r2 has 9 of 10 fields right (payment 60 ≠ 30), r5 failed → 0/2 and 1/2.
    let contract_row = &b.families[2];
    assert_eq!(contract_row.field_accuracy["payment_terms_days"], 0.0);
    assert_eq!(contract_row.field_accuracy["auto_renews"], 0.5);
    assert!(!b.eligible);
    assert_eq!(b.rank, None);

    // gamma: all correct but one response echoed another model → incompatible, not ranked.
    assert!(!g.compatibility.configuration_compatible);
    assert_eq!(g.compatibility.mismatched_responses, 1);
    assert_eq!(g.pooled.submitted_count, 6); // the harness record was superseded
    assert_eq!(g.harness_failures, 0);
    assert!(g.complete && !g.eligible);
    assert_eq!(g.pooled.e2e_latency_p50, Some(310.0));
    assert_eq!(m.ranking.len(), 1);

    // Paired (alpha, beta; gamma excluded). Wins: r0 tie 100/100 → ½ each; r1 alpha (beta
    // failed); r2, r3, r4 beta (250 < 300, 350 < 400, 450 < 500); r5 alpha. alpha 2.5, beta 3.5.
    let p: PairedComparisons = serde_json::from_slice(&first[1]).unwrap();
    assert_eq!(p.lanes, ["alpha", "beta"]);
    assert_eq!(p.excluded_incompatible, ["gamma"]);
    assert_eq!(p.wins[0].wins, 2.5);
    assert_eq!(p.wins[1].wins, 3.5);
    assert_eq!(p.wins[1].rounds_with_e2e, 4);
    // alpha − beta over r0, r2, r3, r4: [0, 50, 50, 50] → p50 idx 1 → 50; coverage 4 / 6.
    let ab = &p.pairs[0];
    assert_eq!((ab.a.as_str(), ab.b.as_str()), ("alpha", "beta"));
    assert_eq!(ab.count, 4);
    assert_eq!(ab.e2e_diff_p50, Some(50.0));
    assert_eq!(ab.coverage, Some(4.0 / 6.0));
    // beta − alpha: [−50, −50, −50, 0] → p50 −50, p99 idx 3 → 0.
    let ba = &p.pairs[1];
    assert_eq!((ba.e2e_diff_p50, ba.e2e_diff_p99), (Some(-50.0), Some(0.0)));

    // Evaluations: 18 submitted lines; failures: the two beta failures.
    let evals = String::from_utf8(first[2].clone()).unwrap();
    assert_eq!(evals.lines().count(), 18);
    let fenced: Value =
        serde_json::from_str(evals.lines().find(|l| l.contains("req-beta-3")).unwrap()).unwrap();
    assert_eq!(fenced["classification"], "invalid_result");
    assert_eq!(fenced["error_type"], "invalid_json");
    let failures = String::from_utf8(first[3].clone()).unwrap();
    assert_eq!(failures.lines().count(), 2);
    assert!(failures.contains("\"error_type\":\"http_429\""));

    // The markdown: seed layout, simulator notice, numbers formatted like the seed.
    let md = String::from_utf8(first[4].clone()).unwrap();
    assert!(md.starts_with("# GLM Test — run run-test\n"));
    assert!(md.contains("time-scaled simulator"));
    assert!(md.contains(
        "| Provider | E2E p50 (ms) | E2E p99 (ms) | TTFA p50 (ms) | Tokens/s p50 | Tokens/s p95 floor | Task success | Operational failures |"
    ));
    assert!(
        md.contains("| Alpha | 300.0 | 600.0 | 250.0 | 30.0 | 10.0 | 100.00% | 0.00% |"),
        "{md}"
    );
    assert!(
        md.contains("| Beta | 250.0 | 450.0 | 200.0 | — | — | 33.33% | 33.33% |"),
        "{md}"
    );
    // Simulated run (time scale 0.01): the terminal shows the measured table, then the same
    // figures in simulated time: 300.0 ms / 0.01 = 30,000.0 ms; 30.0 tokens/s × 0.01 = 0.3.
    let mut lines = table.lines();
    assert_eq!(
        lines.next(),
        Some("As measured on the simulator (time scale 0.01):")
    );
    assert!(lines.next().unwrap().starts_with("Provider"));
    assert!(table.contains("In simulated time (ms ÷ 0.01, tokens/s × 0.01)"));
    assert!(
        md.contains("| Alpha | 30,000.0 | 60,000.0 | 25,000.0 | 0.3 | 0.1 | 100.00% | 0.00% |"),
        "{md}"
    );
}
