#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Percentiles as metrics use them, populations, eligibility thresholds, ranking and paired
//! tie-splitting, on observations built by hand.

use openbench_common::record::Outcome;
use openbench_micro_single_task::metrics::observe::{FailureInfo, Observation};
use openbench_micro_single_task::metrics::summary::{sorted_percentile, summarize};
use openbench_micro_single_task::metrics::{self, ProviderMetrics};
use openbench_micro_single_task::paired::{self, PairedLane};
use openbench_micro_single_task::scoring::{EvalClass, Family};

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
                error_type: Some("timeout"),
                http_status: None,
                message: None,
            })
        }),
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
    let eligible =
        success >= metrics::MIN_TASK_SUCCESS_RATE && failure <= metrics::MAX_FAILURE_RATE;
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
    // Exactly at the thresholds (95% success, 1% failures) is eligible.
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
