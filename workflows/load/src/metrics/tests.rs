//! Every expected value below is computed by hand in the comment beside it.

use super::saturation::{self, StepResult, next_rate, saturation_point};
use super::step::{is_measured, step_report};
use super::*;
use crate::arrivals::Window;
use crate::spec::{Arrivals, SaturationSearch};
use openbench_common::record::{ErrorType, Outcome};
use openbench_report_kit::bootstrap::sample_percentile_interval as percentile_interval;
use std::collections::BTreeMap;

const MS: u64 = 1_000_000;

fn sample(
    lane: &str,
    scheduled: Option<f64>,
    sent: f64,
    chunks: &[f64],
    tokens: u64,
) -> RequestSample {
    RequestSample {
        lane: lane.to_string(),
        scheduled_ms: scheduled,
        sent_ms: sent,
        ttfo_ms: chunks.first().map(|c| c - 10.0),
        answer_events_ms: chunks.to_vec(),
        read_groups: chunks
            .iter()
            .map(|&at_ms| ReadGroup { at_ms, tokens: 1 })
            .collect(),
        finished_ms: chunks.last().map_or(5.0, |c| c + 10.0),
        input_tokens: 10,
        answer_tokens: tokens,
        usage_prompt_tokens: None,
        usage_completion_tokens: None,
        outcome: Outcome::Completed,
        error_type: None,
        correct: None,
        held_tokens: None,
        stopped_at_length: false,
        replica: None,
    }
}

fn failed(mut s: RequestSample, outcome: Outcome, error_type: Option<ErrorType>) -> RequestSample {
    s.outcome = outcome;
    s.error_type = error_type;
    s.answer_events_ms.clear();
    s.ttfo_ms = None;
    s
}

fn settings(start_ms: u64, end_ms: u64, target: Option<f64>, slo: &[(&str, f64)]) -> StepSettings {
    let map: BTreeMap<String, f64> = slo.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    StepSettings {
        window: Window {
            start_ns: start_ms * MS,
            end_ns: end_ms * MS,
            load_end_ns: end_ms * MS + 1000 * MS,
        },
        target_rate_per_lane: target,
        sustain_fraction: 0.95,
        goodput_threshold: 0.9,
        slo: Slo::from_spec(&map),
    }
}

#[test]
fn one_request_timings_by_hand() {
    // Scheduled 1000, sent 1004: lag 4. Answer chunks at 100, 130, 150, 220 ms; 7 tokens.
    // TTFA 100, E2E 220, TPOT (220 − 100)/(7 − 1) = 20, tokens/s 6 / 0.120 = 50,
    // ITL 30, 20, 70; from the schedule: TTFA 104, E2E 224, TTFO 90 + 4 = 94.
    let mut s = sample("a", Some(1000.0), 1004.0, &[100.0, 130.0, 150.0, 220.0], 7);
    s.ttfo_ms = Some(90.0);
    let t = RequestTimings::of(&s);
    assert_eq!(t.ttfa_ms, Some(100.0));
    assert_eq!(t.e2e_ms, Some(220.0));
    assert_eq!(t.tpot_ms, Some(20.0));
    assert_eq!(t.tokens_per_s, Some(50.0));
    assert_eq!(t.itl_ms, [30.0, 20.0, 70.0]);
    assert_eq!(t.send_lag_ms, Some(4.0));
    assert_eq!(t.value(SloMetric::TtfaSchedMs), Some(104.0));
    assert_eq!(t.value(SloMetric::E2eSchedMs), Some(224.0));
    assert_eq!(t.value(SloMetric::TtfoSchedMs), Some(94.0));
    // One token: no TPOT, no tokens/s; one chunk: no ITL gap.
    let t = RequestTimings::of(&sample("a", None, 0.0, &[50.0], 1));
    assert_eq!((t.tpot_ms, t.tokens_per_s, t.itl_ms.len()), (None, None, 0));
    // Two tokens in one chunk: E2E = TTFA, so neither TPOT nor tokens/s.
    let t = RequestTimings::of(&sample("a", None, 0.0, &[50.0], 2));
    assert_eq!((t.tpot_ms, t.tokens_per_s), (None, None));
    // A failure has no latency, but its send lag counts.
    let f = failed(
        sample("a", Some(10.0), 25.0, &[], 0),
        Outcome::Timeout,
        Some(ErrorType::Timeout),
    );
    let t = RequestTimings::of(&f);
    assert_eq!((t.ttfa_ms, t.send_lag_ms), (None, Some(15.0)));
}

/// Window [1000, 3000) ms, 2/s per lane. Lane a: a warm-up request, R1..R4 measured, a
/// harness failure, a cool-down request.
fn open_step() -> Vec<RequestSample> {
    let mut r1 = sample("a", Some(1000.0), 1000.0, &[100.0, 150.0, 200.0], 3);
    r1.finished_ms = 210.0;
    r1.input_tokens = 10;
    r1.usage_completion_tokens = Some(4);
    r1.usage_prompt_tokens = Some(12);
    let mut r2 = sample("a", Some(1500.0), 1510.0, &[300.0, 600.0], 2);
    r2.finished_ms = 610.0;
    r2.input_tokens = 20;
    let r3 = failed(
        sample("a", Some(2000.0), 2000.0, &[], 0),
        Outcome::HttpError,
        Some(ErrorType::Http429),
    );
    let mut r4 = sample("a", Some(2500.0), 3100.0, &[50.0], 1);
    r4.finished_ms = 60.0;
    r4.input_tokens = 30;
    let harness = failed(
        sample("a", Some(2600.0), 2600.0, &[], 0),
        Outcome::HarnessError,
        None,
    );
    // Warm-up: not measured, but its stream ends at 500 + 600 = 1100, inside the window.
    let mut warmup = sample("a", Some(500.0), 500.0, &[10.0, 20.0], 2);
    warmup.finished_ms = 600.0;
    let cooldown = sample("a", Some(3000.0), 3000.0, &[10.0, 20.0], 2);
    vec![warmup, r1, r2, r3, r4, harness, cooldown]
}

#[test]
fn an_open_step_by_hand() {
    let settings = settings(
        1000,
        3000,
        Some(2.0),
        &[("ttfa_ms", 200.0), ("tpot_ms", 100.0)],
    );
    let report = step_report(&open_step(), &settings);
    let m = &report.lanes["a"];
    // Measured: R1..R4 (scheduled in [1000, 3000)); the harness failure is set aside.
    assert_eq!((m.measured, m.completed, m.harness_failures), (4, 3, 1));
    assert_eq!(m.failures, BTreeMap::from([(FailureClass::RateLimited, 1)]));
    // TTFA 100, 300, 50 → sorted 50, 100, 300: p50 = index ceil(1.5) − 1 = 1 → 100; mean 150.
    assert_eq!(
        (m.ttfa_ms.p50, m.ttfa_ms.p99, m.ttfa_ms.mean),
        (Some(100.0), Some(300.0), Some(150.0))
    );
    // E2E 200, 600, 50 → p50 200.
    assert_eq!(m.e2e_ms.p50, Some(200.0));
    // ITL pooled: R1 50, 50; R2 300 → p50 50, p90 index ceil(2.7) − 1 = 2 → 300.
    assert_eq!(
        (m.itl_ms.count, m.itl_ms.p50, m.itl_ms.p90),
        (3, Some(50.0), Some(300.0))
    );
    // TPOT: R1 100/2 = 50, R2 300/1 = 300 (R4 has one token) → p50 50.
    assert_eq!((m.tpot_ms.count, m.tpot_ms.p50), (2, Some(50.0)));
    // Send lag of all four measured: 0, 10, 0, 600 → mean 152.5, p50 0, p90 600.
    let lag = m.send_lag_ms.as_ref().unwrap();
    assert_eq!(
        (lag.mean, lag.p50, lag.p90),
        (Some(152.5), Some(0.0), Some(600.0))
    );
    // TTFA from the schedule: 100, 300 + 10, 50 + 600 → p50 310.
    assert_eq!(m.ttfa_sched_ms.as_ref().unwrap().p50, Some(310.0));
    // D: ends 1210, 2120, 2005, 3160 → last 3160; D = (3160 − 1000)/1000 = 2.16 s; the drain
    // rate is the 3 completed measured over it.
    assert_eq!(m.duration_s, Some(2.16));
    assert_eq!(m.drain_requests_per_s, Some(3.0 / 2.16));
    // Throughput: streams that ended inside [1000, 3000): the warm-up's (1100), R1 (1210), R2
    // (2120); not R4 (3160) nor the cool-down's (3000 + 30). 3 over the 2 s window.
    assert_eq!(m.completed_in_window, 3);
    assert_eq!(m.request_throughput_per_s, Some(1.5));
    assert_eq!(m.output_tokens_per_s, Some(3.5)); // (2 + 3 + 2) / 2
    assert_eq!(m.input_tokens_per_s, Some(20.0)); // (10 + 10 + 20) / 2
    // Usage: only R1 (4 reported vs 3 o200k): discrepancy (4 − 3)/3.
    assert_eq!(m.usage.requests, 1);
    assert_eq!(m.usage.output_per_s, Some(2.0));
    assert_eq!(m.usage.input_per_s, Some(6.0));
    assert_eq!(m.usage.output_discrepancy, Some(1.0 / 3.0));
    // Sent before the window closed: R1, R2, R3 (R4 went at 3100) → 3 / 2 s = 1.5/s < 0.95 × 2.
    assert_eq!(m.rate.achieved_per_s, 1.5);
    // Measured and completed: R1, R2, R4 → 3 / 2 s.
    assert_eq!(m.rate.completed_per_s, 1.5);
    assert_eq!(m.rate.verdict, RateVerdict::ClientBehind);
    // Good: R1 (TTFA 100, TPOT 50) and R4 (TTFA 50, one token: no TPOT to exceed); R2's TTFA
    // 300 breaks the SLO, the 429 counts against it: 2 good of 4 measured, 2 over 2 s.
    assert_eq!(m.goodput.good, 2);
    assert_eq!(m.goodput.fraction, 0.5);
    assert_eq!(m.goodput.per_s, Some(1.0));
    assert_eq!(m.held_length, None);
    assert!(!m.sustained);
}

#[test]
fn pooled_rows_sum_targets_and_populations_over_lanes() {
    let mut samples = open_step();
    let mut b = sample("b", Some(1000.0), 1000.0, &[10.0, 20.0], 2);
    b.finished_ms = 30.0;
    samples.push(b);
    let report = step_report(&samples, &settings(1000, 3000, Some(2.0), &[]));
    assert_eq!(report.lanes.keys().collect::<Vec<_>>(), ["a", "b"]);
    let (a, b, pooled) = (&report.lanes["a"], &report.lanes["b"], &report.pooled);
    assert_eq!((a.measured, b.measured, pooled.measured), (4, 1, 5));
    // Pooled target 2 lanes × 2/s; sent in window 3 + 1 over 2 s = 2/s.
    assert_eq!(pooled.rate.target_per_s, Some(4.0));
    assert_eq!(pooled.rate.achieved_per_s, 2.0);
    assert_eq!(b.rate.target_per_s, Some(2.0));
    // Lane b's D: 1030 − 1000 = 30 ms; the pooled D is lane a's (3160).
    assert_eq!(b.duration_s, Some(0.03));
    assert_eq!(pooled.duration_s, Some(2.16));
    // Without an SLO every completed request is good: a 3 + b 1 = 4 of 5.
    assert_eq!(pooled.goodput.fraction, 0.8);
}

#[test]
fn the_verdict_names_who_fell_behind() {
    // 2/s over [0, 2000): four requests, all sent on time.
    let on_time = |i: u32| {
        sample(
            "a",
            Some(f64::from(i) * 500.0),
            f64::from(i) * 500.0,
            &[10.0],
            1,
        )
    };
    let all: Vec<RequestSample> = (0..4).map(on_time).collect();
    let s = settings(0, 2000, Some(2.0), &[]);
    // All four sent and completed: 2/s, on target.
    let m = step_report(&all, &s).pooled;
    assert_eq!(m.rate.verdict, RateVerdict::OnTarget);
    assert!(m.sustained);
    // One times out: 3 completed / 2 s = 1.5/s < 1.9: the server fell behind.
    let mut one_failed = all.clone();
    one_failed[3] = failed(
        one_failed[3].clone(),
        Outcome::Timeout,
        Some(ErrorType::Timeout),
    );
    let m = step_report(&one_failed, &s).pooled;
    assert_eq!(m.rate.verdict, RateVerdict::ServerBehind);
    assert_eq!(m.failures, BTreeMap::from([(FailureClass::Timeout, 1)]));
    // A closed loop has no target, no schedule, and is measured by its actual sends.
    let closed: Vec<RequestSample> = (0..4)
        .map(|i| sample("a", None, f64::from(i) * 700.0, &[10.0], 1))
        .collect();
    let m = step_report(&closed, &settings(0, 2000, None, &[])).pooled;
    assert_eq!(m.measured, 3); // sent at 0, 700, 1400; 2100 is past the window
    assert_eq!(m.rate.verdict, RateVerdict::NoTarget);
    assert_eq!(m.rate.achieved_per_s, 1.5);
    assert!(m.send_lag_ms.is_none() && m.ttfa_sched_ms.is_none());
}

#[test]
fn wrong_answers_and_every_failure_class_count_against_goodput() {
    let mut wrong = sample("a", None, 0.0, &[10.0], 1);
    wrong.correct = Some(false);
    let mut right = sample("a", None, 100.0, &[10.0], 1);
    right.correct = Some(true);
    let base = sample("a", None, 200.0, &[], 0);
    let classes = [
        (
            Outcome::HttpError,
            Some(ErrorType::Http429),
            FailureClass::RateLimited,
        ),
        (
            Outcome::HttpError,
            Some(ErrorType::OtherHttp4xx),
            FailureClass::Http4xx,
        ),
        (
            Outcome::HttpError,
            Some(ErrorType::Http5xx),
            FailureClass::Http5xx,
        ),
        (
            Outcome::Timeout,
            Some(ErrorType::Timeout),
            FailureClass::Timeout,
        ),
        (
            Outcome::TransportError,
            Some(ErrorType::TruncatedStream),
            FailureClass::TransportError,
        ),
        (
            Outcome::StreamError,
            Some(ErrorType::StreamError),
            FailureClass::StreamError,
        ),
    ];
    let mut samples = vec![wrong, right];
    for (outcome, error_type, class) in classes {
        assert_eq!(FailureClass::of(outcome, error_type), Some(class));
        samples.push(failed(base.clone(), outcome, error_type));
    }
    assert_eq!(FailureClass::of(Outcome::HarnessError, None), None);
    let m = step_report(&samples, &settings(0, 1000, None, &[])).pooled;
    assert_eq!((m.measured, m.completed, m.goodput.good), (8, 2, 1));
    assert_eq!(m.goodput.fraction, 1.0 / 8.0);
    assert_eq!(m.failures.values().sum::<usize>(), 6);
}

#[test]
fn measured_means_scheduled_inside_the_window_for_open_loop() {
    let w = settings(1000, 2000, Some(1.0), &[]).window;
    // Scheduled at 1999 but sent at 2500: measured (its schedule is inside).
    assert!(is_measured(&sample("a", Some(1999.0), 2500.0, &[], 0), &w));
    // Scheduled at 900, sent at 1100: warm-up.
    assert!(!is_measured(&sample("a", Some(900.0), 1100.0, &[], 0), &w));
    // The end is exclusive.
    assert!(!is_measured(&sample("a", Some(2000.0), 2000.0, &[], 0), &w));
}

#[test]
fn sustained_steps_and_the_saturation_point() {
    let step = |load: f64, verdict: RateVerdict, goodput: f64| StepResult {
        load,
        rate_kept: saturation::rate_kept(verdict),
        goodput_fraction: goodput,
        held_length_flagged: false,
    };
    let steps = [
        step(1.0, RateVerdict::OnTarget, 1.0),
        step(2.0, RateVerdict::OnTarget, 0.9), // goodput ≥ 0.9 (inclusive): sustained
        step(4.0, RateVerdict::ServerBehind, 0.99), // the server fell behind: not sustained
        step(8.0, RateVerdict::OnTarget, 0.89), // goodput under 0.9: not sustained
        step(6.0, RateVerdict::ClientBehind, 1.0), // the client fell behind: not sustained
        step(3.0, RateVerdict::OnTarget, 0.95), // sustained, highest sustained load
    ];
    let ok: Vec<bool> = steps.iter().map(|s| s.is_sustained(0.9)).collect();
    assert_eq!(ok, [true, true, false, false, false, true]);
    assert_eq!(saturation_point(&steps, 0.9), Some(5));
    assert_eq!(saturation_point(&steps[2..5], 0.9), None);
    // Closed loop: no target, goodput alone decides.
    let closed = step(16.0, RateVerdict::NoTarget, 0.9);
    assert!(closed.is_sustained(0.9));
    // Answers mostly short of a held length: never sustained, whatever the rest says.
    let short = StepResult {
        held_length_flagged: true,
        ..closed
    };
    assert!(!short.is_sustained(0.0));
}

/// A server that ignores `ignore_eos`: four answers asked to hold 32 tokens, closed loop over
/// [0, 1000). Three answer 5 tokens in one chunk; one runs to 32 tokens over 50 → 360 ms.
fn held_step() -> Vec<RequestSample> {
    let held = |sent: f64, chunks: &[f64], tokens: u64| {
        let mut s = sample("a", None, sent, chunks, tokens);
        s.held_tokens = Some(32);
        s
    };
    vec![
        held(0.0, &[50.0], 5),
        held(100.0, &[50.0], 5),
        held(200.0, &[50.0], 5),
        held(300.0, &[50.0, 360.0], 32),
    ]
}

#[test]
fn answers_short_of_a_held_length_are_flagged_and_never_sustain_a_step() {
    let mut s = settings(0, 1000, None, &[]);
    s.goodput_threshold = 0.2;
    let m = step_report(&held_step(), &s).pooled;
    // 3 of the 4 held answers are short: flagged (3 > 4 / 2).
    assert_eq!(
        m.held_length,
        Some(HeldLength {
            requests: 4,
            short: 3,
            flagged: true
        })
    );
    // Short answers keep their TTFA (4 values) but give no E2E, TPOT, tokens/s or gaps: only the
    // full answer's E2E 360, TPOT (360 − 50)/31 = 10, tokens/s 31/0.31 = 100, one gap of 310.
    assert_eq!(m.ttfa_ms.count, 4);
    assert_eq!((m.e2e_ms.count, m.e2e_ms.p50), (1, Some(360.0)));
    assert_eq!((m.tpot_ms.count, m.tpot_ms.p50), (1, Some(10.0)));
    assert_eq!((m.tokens_per_s.count, m.tokens_per_s.p50), (1, Some(100.0)));
    assert_eq!(m.itl_ms.count, 1);
    // Good: the full answer only, 1 of 4 = 0.25 ≥ the 0.2 threshold; still not sustained.
    assert_eq!((m.goodput.good, m.goodput.fraction), (1, 0.25));
    assert!(!m.sustained);
    // Usage is the length the server counts in: 32 reported over 30 o200k tokens is not short,
    // 20 reported over 32 o200k tokens is.
    let mut a = sample("a", None, 0.0, &[10.0, 40.0], 30);
    a.held_tokens = Some(32);
    a.usage_completion_tokens = Some(32);
    assert!(!a.fell_short());
    let mut b = sample("a", None, 0.0, &[10.0, 40.0], 32);
    b.held_tokens = Some(32);
    b.usage_completion_tokens = Some(20);
    assert!(b.fell_short());
    // Without usage, a server that says it stopped at the length ran to it, whatever o200k
    // counts (its tokenizer's tokens); one that stopped otherwise is judged by o200k.
    let mut c = sample("a", None, 0.0, &[10.0, 40.0], 13);
    c.held_tokens = Some(64);
    c.stopped_at_length = true;
    assert!(!c.fell_short());
    c.stopped_at_length = false;
    assert!(c.fell_short());
    // A ceiling only (no held length) is never short, and a failure is not an answer.
    assert!(!sample("a", None, 0.0, &[10.0], 1).fell_short());
    let mut f = failed(
        held_step()[0].clone(),
        Outcome::Timeout,
        Some(ErrorType::Timeout),
    );
    f.answer_tokens = 0;
    assert!(!f.fell_short());
}

#[test]
fn a_tpot_bound_is_met_without_a_tpot_only_by_a_one_token_answer() {
    let slo = settings(0, 1000, None, &[("tpot_ms", 50.0)]).slo;
    // One token: no time per output token to exceed.
    assert!(slo.met_by(&RequestTimings::of(&sample("a", None, 0.0, &[50.0], 1))));
    // Five tokens in one chunk: no measurable TPOT, so the bound is not shown to be met.
    assert!(!slo.met_by(&RequestTimings::of(&sample("a", None, 0.0, &[50.0], 5))));
    // Five tokens over 50 → 250 ms: TPOT 50, met (inclusive).
    assert!(slo.met_by(&RequestTimings::of(&sample(
        "a",
        None,
        0.0,
        &[50.0, 250.0],
        5
    ))));
}

#[test]
fn the_saturation_search_ramps_then_bisects() {
    let search = SaturationSearch {
        arrivals: Arrivals::Poisson,
        start_rate_per_s: 1.0,
        growth: 2.0,
        max_rate_per_s: 10.0,
        refine_steps: 2,
    };
    assert_eq!(next_rate(&search, &[]), Some(1.0));
    assert_eq!(next_rate(&search, &[(1.0, true)]), Some(2.0));
    // 8 × 2 = 16 is clamped to the maximum 10; after 10 sustained, the search is over.
    let ramp = [(1.0, true), (2.0, true), (4.0, true), (8.0, true)];
    assert_eq!(next_rate(&search, &ramp), Some(10.0));
    assert_eq!(next_rate(&search, &[(1.0, true), (10.0, true)]), None);
    // 4 fails: bisect (2 + 4)/2 = 3; 3 holds: (3 + 4)/2 = 3.5; two bisections done: stop.
    let h = [(1.0, true), (2.0, true), (4.0, false)];
    assert_eq!(next_rate(&search, &h), Some(3.0));
    let h = [(1.0, true), (2.0, true), (4.0, false), (3.0, true)];
    assert_eq!(next_rate(&search, &h), Some(3.5));
    let h = [
        (1.0, true),
        (2.0, true),
        (4.0, false),
        (3.0, true),
        (3.5, false),
    ];
    assert_eq!(next_rate(&search, &h), None);
    // If the bisection fails instead, the upper end moves down: 3 fails → (2 + 3)/2 = 2.5.
    let h = [(1.0, true), (2.0, true), (4.0, false), (3.0, false)];
    assert_eq!(next_rate(&search, &h), Some(2.5));
    // Whatever the history holds (a resumed search), the lower end is the best sustained rate
    // *below* the lowest failure: 1 and 4 → 2.5, not 8 (sustained above it) and 4 → 6.
    let h = [(1.0, true), (4.0, false), (8.0, true)];
    assert_eq!(next_rate(&search, &h), Some(2.5));
    // The very first step fails: nothing below it to bisect towards.
    assert_eq!(next_rate(&search, &[(1.0, false)]), None);
}

#[test]
fn bootstrap_intervals_are_seeded_and_bracket_the_statistic() {
    let values: Vec<f64> = (1..=100).map(f64::from).collect();
    let a = percentile_interval(&values, 0.5, 500, 7, "ttfa").unwrap();
    let b = percentile_interval(&values, 0.5, 500, 7, "ttfa").unwrap();
    assert_eq!(a, b);
    // The median of 1..=100 is 50; a resampled median of 100 values stays within about ±10.
    assert!(
        a.0 < 50.0 && a.1 > 50.0 && a.0 >= 35.0 && a.1 <= 65.0,
        "{a:?}"
    );
    assert_ne!(percentile_interval(&values, 0.5, 500, 8, "ttfa"), Some(a));
    // A constant population has a zero-width interval; too few values have none.
    assert_eq!(
        percentile_interval(&[5.0; 40], 0.99, 50, 1, "x"),
        Some((5.0, 5.0))
    );
    assert_eq!(percentile_interval(&values[..29], 0.5, 50, 1, "x"), None);
}

#[test]
fn itl_per_token_shares_each_reads_gap_among_its_tokens() {
    // METHODOLOGY §9's worked example: groups at 100, 130, 190 ms carrying 1, 1, 3 tokens give
    // 30, 20, 20, 20 ms; TPOT for the same 5-token answer is (190 − 100) / 4 = 22.5.
    let groups =
        [(100.0, 1), (130.0, 1), (190.0, 3)].map(|(at_ms, tokens)| ReadGroup { at_ms, tokens });
    assert_eq!(itl_per_token(&groups), [30.0, 20.0, 20.0, 20.0]);
    let mut s = sample("a", None, 0.0, &[100.0, 130.0, 190.0], 5);
    s.read_groups = groups.to_vec();
    let t = RequestTimings::of(&s);
    assert_eq!(t.itl_ms, [30.0, 20.0, 20.0, 20.0]);
    assert_eq!(t.tpot_ms, Some(22.5));
    assert_eq!(t.event_gaps_ms, [30.0, 60.0]);
    // One token an event every 10 ms, written three events a read: reads at 30, 60, 90 ms of
    // 3 tokens each. Per token: 10 ms every value; per event the reads' events give 0, 0, 30.
    let groups = [30.0, 60.0, 90.0].map(|at_ms| ReadGroup { at_ms, tokens: 3 });
    assert_eq!(itl_per_token(&groups), [10.0; 6]);
    let mut s = sample(
        "a",
        None,
        0.0,
        &[30.0, 30.0, 30.0, 60.0, 60.0, 60.0, 90.0, 90.0, 90.0],
        9,
    );
    s.read_groups = groups.to_vec();
    let t = RequestTimings::of(&s);
    assert_eq!(t.itl_ms, [10.0; 6]);
    assert_eq!(t.event_gaps_ms, [0.0, 0.0, 30.0, 0.0, 0.0, 30.0, 0.0, 0.0]);
    // The first group's tokens give none; a single group gives no ITL.
    assert!(itl_per_token(&groups[..1]).is_empty());
}
