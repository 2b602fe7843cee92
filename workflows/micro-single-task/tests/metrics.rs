#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Percentiles as metrics use them, populations, eligibility thresholds at their exact
//! boundaries, harness records kept out of the submitted population, the model-echo check,
//! ranking and paired tie-splitting, on observations and records built by hand.

use openbench_common::record::{ErrorType, Outcome, TerminalRecord};
use openbench_common::rundir::{Lane, Plan, PlanKind, PlannedLane, PlannedRound};
use openbench_common::rundir::{LockedProvider, RunLock};
use openbench_micro_single_task::metrics::observe::{
    self, FailureInfo, LaneKey, LaneTable, Observation,
};
use openbench_micro_single_task::metrics::summary::{sorted_percentile, summarize};
use openbench_micro_single_task::metrics::{self, MetricsInput, ProviderMetrics};
use openbench_micro_single_task::paired::{self, PairedLane};
use openbench_micro_single_task::scoring::{EvalClass, Family, GoldRef};
use std::collections::BTreeMap;

fn obs(lane: u32, round: u64, e2e: Option<f64>, class: EvalClass) -> Observation {
    let failed = class == EvalClass::FailedRequest;
    Observation {
        request_id: format!("req-{lane}-{round}"),
        round_index: round,
        item_id: "i".into(),
        lane,
        family: Family::TicketTriage,
        outcome: if failed {
            Outcome::Timeout
        } else {
            Outcome::Completed
        },
        class,
        error_type: None,
        schema_valid: matches!(class, EvalClass::ValidResult | EvalClass::IncorrectResult),
        field_bits: if class == EvalClass::ValidResult {
            0b11
        } else {
            0
        },
        ttfo_ms: e2e,
        ttfa_ms: e2e,
        e2e_ms: e2e,
        tokens_per_second: e2e.map(|v| 1000.0 / v),
        reasoning_tokens_before_answer: None,
        reasoning_emitted: false,
        truncated_by_length: false,
        usage: None,
        model_mismatch: None,
        completed: !failed,
        failure: failed.then(|| {
            Box::new(FailureInfo {
                outcome: Outcome::Timeout,
                error_type: Some(ErrorType::Timeout),
                http_status: None,
                message: None,
            })
        }),
        out_of_round: false,
    }
}

#[test]
fn nearest_rank_edges_as_metrics_use_them() {
    // n = 1: every p gives the only value.
    assert_eq!(sorted_percentile(&[7.0], 0.5), Some(7.0));
    assert_eq!(sorted_percentile(&[7.0], 0.01), Some(7.0));
    // n = 2: p50 → ceil(1) − 1 = 0; p99 → ceil(1.98) − 1 = 1; floor p = .05 → ceil(0.1) − 1 = 0.
    assert_eq!(sorted_percentile(&[1.0, 2.0], 0.5), Some(1.0));
    assert_eq!(sorted_percentile(&[1.0, 2.0], 0.99), Some(2.0));
    assert_eq!(sorted_percentile(&[1.0, 2.0], 0.05), Some(1.0));
    // n = 100 (1..=100): p95 → idx 94 → 95 (not 96: 0.95 × 100 is exactly 95); p99 → 99;
    // floors p = .05 → 5, p = .01 → 1.
    let h: Vec<f64> = (1..=100).map(f64::from).collect();
    assert_eq!(sorted_percentile(&h, 0.95), Some(95.0));
    assert_eq!(sorted_percentile(&h, 0.99), Some(99.0));
    assert_eq!(sorted_percentile(&h, 0.05), Some(5.0));
    assert_eq!(sorted_percentile(&h, 0.01), Some(1.0));
    // n = 101: p50 → ceil(50.5) − 1 = 50 → 51; p99 → ceil(99.99) − 1 = 99 → 100;
    // p = .05 → ceil(5.05) − 1 = 5 → 6; p = .01 → ceil(1.01) − 1 = 1 → 2.
    let h: Vec<f64> = (1..=101).map(f64::from).collect();
    assert_eq!(sorted_percentile(&h, 0.5), Some(51.0));
    assert_eq!(sorted_percentile(&h, 0.99), Some(100.0));
    assert_eq!(sorted_percentile(&h, 0.05), Some(6.0));
    assert_eq!(sorted_percentile(&h, 0.01), Some(2.0));
    assert_eq!(sorted_percentile(&[], 0.5), None);
}

#[test]
fn floors_and_populations_exclude_failures_but_success_keeps_them() {
    // 20 completed with E2E 1..=20 s (tokens/s = 1000 / E2E ms), plus 5 timeouts.
    let mut all: Vec<Observation> = (1..=20)
        .map(|i| obs(0, i, Some(1000.0 * i as f64), EvalClass::ValidResult))
        .collect();
    all.extend((21..=25).map(|i| obs(0, i, None, EvalClass::FailedRequest)));
    let refs: Vec<&Observation> = all.iter().collect();
    let s = summarize("ticket-triage", &refs, Some(Family::TicketTriage), None);
    assert_eq!(s.submitted_count, 25);
    assert_eq!(s.e2e_latency_population, 20);
    // E2E p50: ceil(10) − 1 = idx 9 → 10,000 ms; p95: ceil(19) − 1 = 18 → 19,000.
    assert_eq!(s.e2e_latency_p50, Some(10_000.0));
    assert_eq!(s.e2e_latency_p95, Some(19_000.0));
    // tokens/s ascending: 1000/20000 = 0.05, 1000/19000, …, 1. Floor p = .05 → ceil(1) − 1 = 0
    // → 0.05 (the slowest); p = .01 → idx 0 → 0.05; p50 → idx 9 → the 10th slowest = 1000/11000.
    assert_eq!(s.output_tokens_per_second_p95, Some(0.05));
    assert_eq!(s.output_tokens_per_second_p99, Some(0.05));
    assert_eq!(s.output_tokens_per_second_p50, Some(1000.0 / 11_000.0));
    // Task success 20 / 25 = 0.8 (failures stay in the denominator); failure rate 5 / 25 = 0.2.
    assert_eq!(s.task_success_rate, Some(0.8));
    assert_eq!(s.failure_rate, Some(0.2));
    assert_eq!(s.failure_breakdown.timeout, 5);
    assert_eq!(s.field_accuracy["category"], 0.8);
}

fn provider(name: &str, success: f64, failure: f64, p99: f64) -> ProviderMetrics {
    let all: Vec<Observation> = vec![obs(0, 0, Some(p99), EvalClass::ValidResult)];
    let refs: Vec<&Observation> = all.iter().collect();
    let mut pooled = summarize("pooled", &refs, None, None);
    pooled.task_success_rate = Some(success);
    pooled.failure_rate = Some(failure);
    // Eligibility is set by hand here: `rank` reads the flag; the thresholds themselves are
    // tested on `metrics::compute` (`eligibility_thresholds_are_inclusive_at_exact_boundaries`).
    let eligible = matches!(name, "Alpha" | "Bravo" | "Delta");
    ProviderMetrics {
        provider: name.to_lowercase(),
        lane: name.to_lowercase(),
        region: "local".into(),
        display_name: name.into(),
        requested_model: "m".into(),
        pooled,
        families: vec![],
        compatibility: metrics::Compatibility {
            configuration_compatible: true,
            checked_responses: 1,
            mismatched_responses: 0,
            observed_models: Default::default(),
        },
        planned_requests: Some(1),
        missing_requests: 0,
        complete: true,
        harness_failures: 0,
        eligible,
        ineligibility_reasons: vec![],
        rank: None,
    }
}

#[test]
fn ranking_orders_eligible_by_pooled_p99_with_ties_by_name() {
    // Charlie and Echo are fast but ineligible: they must not be ranked.
    let mut ps = vec![
        provider("Delta", 0.95, 0.01, 500.0),
        provider("Bravo", 0.99, 0.0, 300.0),
        provider("Alpha", 0.99, 0.0, 300.0),
        provider("Charlie", 0.9499, 0.0, 100.0),
        provider("Echo", 1.0, 0.0101, 50.0),
    ];
    let ranking = metrics::rank(&mut ps);
    let order: Vec<(&str, u32)> = ranking
        .iter()
        .map(|r| (r.display_name.as_str(), r.rank))
        .collect();
    assert_eq!(order, [("Alpha", 1), ("Bravo", 2), ("Delta", 3)]);
    assert_eq!(ps[3].rank, None);
    assert_eq!(ps[4].rank, None);
}

#[test]
fn paired_wins_split_exact_ties() {
    // Three lanes. Round 0: all 100 → ⅓ each. Round 1: lanes 0, 1 tie at 50, lane 2 at 60 →
    // ½, ½. Round 2: lane 2 alone has an E2E → 1. Round 3: nobody → no winner.
    let o = vec![
        obs(0, 0, Some(100.0), EvalClass::ValidResult),
        obs(1, 0, Some(100.0), EvalClass::ValidResult),
        obs(2, 0, Some(100.0), EvalClass::ValidResult),
        obs(0, 1, Some(50.0), EvalClass::ValidResult),
        obs(1, 1, Some(50.0), EvalClass::IncorrectResult),
        obs(2, 1, Some(60.0), EvalClass::ValidResult),
        obs(0, 2, None, EvalClass::FailedRequest),
        obs(2, 2, Some(70.0), EvalClass::ValidResult),
        obs(0, 3, None, EvalClass::FailedRequest),
    ];
    let lanes: Vec<PairedLane> = (0..3)
        .map(|i| PairedLane {
            index: i,
            lane: format!("l{i}"),
            display_name: format!("L{i}"),
        })
        .collect();
    let p = paired::compute(&o, &lanes, vec![], 4);
    assert_eq!(p.rounds_with_winner, 3);
    assert!((p.wins[0].wins - (1.0 / 3.0 + 0.5)).abs() < 1e-12);
    assert!((p.wins[1].wins - (1.0 / 3.0 + 0.5)).abs() < 1e-12);
    assert!((p.wins[2].wins - (1.0 / 3.0 + 1.0)).abs() < 1e-12);
    // Credits add up to the rounds with a winner.
    let total: f64 = p.wins.iter().map(|w| w.wins).sum();
    assert!((total - 3.0).abs() < 1e-12);
    // l0 − l2 over rounds 0, 1: [0, −10] → sorted [−10, 0]: p50 idx 0 → −10; p99 idx 1 → 0;
    // count 2, coverage 2 / 4.
    let d = p.pairs.iter().find(|d| d.a == "l0" && d.b == "l2").unwrap();
    assert_eq!((d.count, d.coverage), (2, Some(0.5)));
    assert_eq!((d.e2e_diff_p50, d.e2e_diff_p99), (Some(-10.0), Some(0.0)));
    assert_eq!(p.pairs.len(), 6);
}

/// The lock of a one-provider run (`p`, model `m`) over the ticket-triage family.
fn lock() -> RunLock {
    let provider = LockedProvider {
        key: "p".into(),
        display_name: "P".into(),
        model: "m".into(),
        input_price_per_mtok: None,
        output_price_per_mtok: None,
        cached_input_price_per_mtok: None,
        cache_write_input_price_per_mtok: None,
    };
    RunLock {
        model_label: "M".into(),
        regions: vec![],
        ..RunLock::synthetic(
            "micro-single-task",
            "run-metrics",
            vec!["ticket-triage".into()],
            vec![provider],
        )
    }
}

/// Lane `p` of `metrics::compute` over `observations` (all on lane 0), with a plan that lists
/// every observation's request.
fn lane_p(observations: &[Observation]) -> ProviderMetrics {
    let mut lanes = LaneTable::default();
    lanes.intern(LaneKey {
        lane: "p".into(),
        provider: "p".into(),
        region: String::new(),
    });
    let plan = Plan {
        plan_version: 1,
        kind: PlanKind::Full,
        attempt: 0,
        benchmark_slug: String::new(),
        schedule_version: String::new(),
        dataset_release_hash: String::new(),
        families: vec![],
        lanes: vec![Lane {
            label: "p".into(),
            provider: "p".into(),
            region: String::new(),
        }],
        items_per_family: observations.len(),
        repeats: None,
        rounds: observations
            .iter()
            .map(|o| PlannedRound {
                round_index: o.round_index,
                round_id: String::new(),
                task_family: String::new(),
                item_id: String::new(),
                item_hash: String::new(),
                requests: vec![PlannedLane {
                    lane: "p".into(),
                    provider: "p".into(),
                    region: String::new(),
                    request_id: o.request_id.clone(),
                }]
                .into(),
            })
            .collect(),
    };
    let lock = lock();
    let mut run = metrics::compute(&MetricsInput {
        lock: &lock,
        lanes: &lanes,
        observations,
        plan: Some(&metrics::PlanView::from(&plan)),
        records_file: "raw/results.jsonl",
    });
    assert_eq!(run.providers.len(), 1);
    run.providers.remove(0)
}

/// 100 requests on lane 0: `valid` correct answers, `failed` timeouts, the rest wrong answers.
fn hundred(valid: u64, failed: u64) -> Vec<Observation> {
    (0..100)
        .map(|i| {
            let class = if i < valid {
                EvalClass::ValidResult
            } else if i < valid + failed {
                EvalClass::FailedRequest
            } else {
                EvalClass::IncorrectResult
            };
            let e2e = (class != EvalClass::FailedRequest).then_some(100.0 + i as f64);
            obs(0, i, e2e, class)
        })
        .collect()
}

#[test]
fn eligibility_thresholds_are_inclusive_at_exact_boundaries() {
    // Exactly 95% success and exactly 1% failures: eligible, and ranked.
    let p = lane_p(&hundred(95, 1));
    assert_eq!(p.pooled.task_success_rate, Some(0.95));
    assert_eq!(p.pooled.failure_rate, Some(0.01));
    assert_eq!(p.ineligibility_reasons, Vec::<String>::new());
    assert!(p.eligible);
    assert_eq!(p.rank, Some(1));

    // One correct answer fewer: 94% success.
    let p = lane_p(&hundred(94, 1));
    assert_eq!(p.pooled.task_success_rate, Some(0.94));
    assert_eq!(
        p.ineligibility_reasons,
        vec!["task success 94.00% is below 95%".to_string()]
    );
    assert!(!p.eligible);
    assert_eq!(p.rank, None);

    // One failure more: 2% failures (success stays at 95%).
    let p = lane_p(&hundred(95, 2));
    assert_eq!(p.pooled.failure_rate, Some(0.02));
    assert_eq!(
        p.ineligibility_reasons,
        vec!["operational failure rate 2.00% is above 1%".to_string()]
    );
    assert!(!p.eligible);
}

#[test]
fn harness_records_are_not_submitted_and_leave_their_request_missing() {
    // 20 correct answers and 2 harness failures (our machinery, not the provider's).
    let mut all: Vec<Observation> = (0..20)
        .map(|i| obs(0, i, Some(100.0), EvalClass::ValidResult))
        .collect();
    for round in [20, 21] {
        let mut h = obs(0, round, None, EvalClass::FailedRequest);
        h.outcome = Outcome::HarnessError;
        h.failure = Some(Box::new(FailureInfo {
            outcome: Outcome::HarnessError,
            error_type: Some(ErrorType::Harness),
            http_status: None,
            message: Some("probe did not answer".into()),
        }));
        all.push(h);
    }
    let p = lane_p(&all);
    assert_eq!(p.harness_failures, 2);
    assert_eq!(p.pooled.submitted_count, 20);
    assert_eq!(p.families[0].submitted_count, 20);
    assert_eq!(p.pooled.failed_request_count, 0);
    assert_eq!(p.pooled.task_success_rate, Some(1.0));
    assert_eq!(p.pooled.failure_rate, Some(0.0));
    assert_eq!((p.planned_requests, p.missing_requests), (Some(22), 2));
    assert!(!p.complete);
    assert_eq!(
        p.ineligibility_reasons,
        vec!["incomplete: 2 of 22 planned requests have no record".to_string()]
    );
}

/// A completed ticket-triage record of lane `p` answering `tt-1` correctly, echoing `model`.
fn completed_record(request_id: &str, round: u64, model: Option<&str>) -> TerminalRecord {
    let mut r = TerminalRecord::new("2026-01-01T00:00:00Z".into(), Outcome::Completed);
    r.request_id = request_id.into();
    r.round_index = round;
    r.task_family = "ticket-triage".into();
    r.item_id = "tt-1".into();
    r.provider = "p".into();
    r.lane = "p".into();
    r.requested_model = "m".into();
    r.response_model = model.map(str::to_string);
    r.answer_text = r#"{"category":"bug","priority":"p1"}"#.into();
    r.ttfa_ms = Some(50.0);
    r.e2e_ms = Some(100.0);
    r
}

#[test]
fn a_response_without_a_model_echo_is_incompatible() {
    let gold = |id: &str| {
        (id == "tt-1").then(|| GoldRef::TicketTriage {
            category: "bug".into(),
            priority: "p1".into(),
        })
    };
    let requested = |_: &str| Some("m".to_string());
    let mut lanes = LaneTable::default();
    let mut reduce = |r: TerminalRecord| observe::observe(r, &mut lanes, &gold, &requested);
    let echoed = reduce(completed_record("req-0", 0, Some("m"))).unwrap();
    let silent = reduce(completed_record("req-1", 1, None)).unwrap();
    let other = reduce(completed_record("req-2", 2, Some("m-other"))).unwrap();
    assert_eq!(echoed.class, EvalClass::ValidResult);
    assert_eq!(echoed.model_mismatch, None);
    assert_eq!(silent.model_mismatch, Some(String::new()));
    assert_eq!(other.model_mismatch, Some("m-other".to_string()));

    // One silent response is enough to make the lane incompatible, and ineligible.
    let p = lane_p(&[echoed.clone(), silent]);
    assert_eq!(
        p.compatibility,
        metrics::Compatibility {
            configuration_compatible: false,
            checked_responses: 2,
            mismatched_responses: 1,
            observed_models: BTreeMap::from([("(none)".to_string(), 1), ("m".to_string(), 1)]),
        }
    );
    assert_eq!(
        p.ineligibility_reasons,
        vec![
            "configuration incompatible: 1 of 2 completed responses did not echo \"m\"".to_string()
        ]
    );
    assert!(lane_p(&[echoed]).compatibility.configuration_compatible);
}
