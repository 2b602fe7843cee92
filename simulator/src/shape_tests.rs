//! Profile determinism and statistical shape, checked on plans (no sleeping).

use crate::draft::{Draft, Outline, Payload, draft};
use crate::profile::{self, Profile};
use crate::render::{Replay, Shape, respond};
use crate::request::SimRequest;
use crate::rng::Draws;
use crate::sse::Label;
use openbench_common::stats::nearest_rank;

fn body(i: usize) -> Vec<u8> {
    format!(
        r#"{{"model":"zai-org/GLM-5.3-Flash","messages":[{{"role":"system","content":"JSON only"}},{{"role":"user","content":"question {i}"}}],"stream_options":{{"include_usage":true}}}}"#
    )
    .into_bytes()
}

fn plan_for(profile: &Profile, seed: u64, body: &[u8], quirk: Option<&str>) -> Replay {
    let request = SimRequest::parse(body, quirk, None).unwrap();
    let mut draws = Draws::for_request(seed, profile.name(), body);
    respond(profile, &request, &[], &mut draws)
}

fn draft_for(profile: &Profile, seed: u64, body: &[u8], quirk: Option<&str>) -> Draft {
    let request = SimRequest::parse(body, quirk, None).unwrap();
    let mut draws = Draws::for_request(seed, profile.name(), body);
    draft(profile, &request, &[], &mut draws)
}

fn stream_bytes(plan: &Replay) -> Vec<u8> {
    match &plan.shape {
        Shape::Stream { writes, .. } => writes.iter().flat_map(|w| w.bytes.clone()).collect(),
        Shape::Error { body, .. } => body.clone().into_bytes(),
        Shape::Hang => Vec::new(),
    }
}

/// (TTFA, E2E, answer events) of a successful draft; None for a failure.
fn timings(draft: &Draft) -> Option<(f64, f64, usize)> {
    let Outline::Stream(events) = &draft.outline else {
        return None;
    };
    if !events
        .iter()
        .any(|e| matches!(e.payload, Payload::Finish(_)))
    {
        return None;
    }
    let answers: Vec<f64> = events
        .iter()
        .filter(|e| matches!(e.payload, Payload::Answer(_)))
        .map(|e| e.at_ms)
        .collect();
    Some((*answers.first()?, *answers.last()?, answers.len()))
}

#[test]
fn same_seed_and_body_give_identical_plans() {
    for p in profile::profiles().unwrap() {
        let a = plan_for(p, 42, &body(1), None);
        let b = plan_for(p, 42, &body(1), None);
        assert_eq!(a, b, "{}", p.name());
        let other_body = plan_for(p, 42, &body(2), None);
        let other_seed = plan_for(p, 43, &body(1), None);
        assert_ne!(stream_bytes(&a), stream_bytes(&other_body), "{}", p.name());
        assert_ne!(stream_bytes(&a), stream_bytes(&other_seed), "{}", p.name());
    }
}

#[test]
fn profiles_match_their_seed_figures_over_2000_draws() {
    let n = 2000;
    for p in profile::profiles().unwrap() {
        let s = &p.spec.seed;
        let mut ttfa = Vec::new();
        let mut e2e = Vec::new();
        let mut speed = Vec::new();
        let mut failures = 0usize;
        for i in 0..n {
            match timings(&draft_for(p, 2026, &body(i), None)) {
                Some((first, last, count)) => {
                    ttfa.push(first);
                    e2e.push(last);
                    if count >= 2 && last > first {
                        speed.push((count - 1) as f64 * 1000.0 / (last - first));
                    }
                }
                None => failures += 1,
            }
        }
        let ttfa_p50 = nearest_rank(&ttfa, 0.5).unwrap();
        let e2e_p99 = nearest_rank(&e2e, 0.99).unwrap();
        let speed_p50 = nearest_rank(&speed, 0.5).unwrap();
        let rate = failures as f64 / n as f64;
        // Four binomial standard deviations, plus half a count so a zero rate must be exactly zero.
        let tolerance =
            4.0 * (s.failure_rate * (1.0 - s.failure_rate) / n as f64).sqrt() + 0.5 / n as f64;
        println!(
            "{:<10} ttfa_p50 {ttfa_p50:>7.1} (seed {:>7.1})  e2e_p99 {e2e_p99:>8.1} (seed {:>8.1})  \
             chunks/s p50 {speed_p50:>6.1} (seed tok/s {:>6.1})  failures {rate:.4} (seed {:.4} ± {tolerance:.4})",
            p.name(),
            s.ttfa_p50_ms,
            s.e2e_p99_ms,
            s.tokens_per_s_p50,
            s.failure_rate
        );
        assert!(
            (ttfa_p50 / s.ttfa_p50_ms - 1.0).abs() <= 0.15,
            "{} TTFA p50 {ttfa_p50}",
            p.name()
        );
        assert!(
            (rate - s.failure_rate).abs() <= tolerance,
            "{} failure rate {rate}",
            p.name()
        );
        assert!(
            (e2e_p99 / s.e2e_p99_ms - 1.0).abs() <= 0.35,
            "{} E2E p99 {e2e_p99}",
            p.name()
        );
        assert!(
            (speed_p50 / s.tokens_per_s_p50 - 1.0).abs() <= 0.25,
            "{} speed {speed_p50}",
            p.name()
        );
    }
}

#[test]
fn forced_quirk_replaces_the_failure_draw() {
    let nebius = profile::find("nebius").unwrap();
    // With any forced quirk nebius never fails on its own: 300 bodies, 0 failures (about 44
    // would fail unforced).
    let failed = (0..300)
        .filter(|i| timings(&draft_for(nebius, 5, &body(*i), Some("crlf"))).is_none())
        .count();
    assert_eq!(failed, 0);
    let forced = plan_for(nebius, 5, &body(0), Some("http-500"));
    assert!(matches!(forced.shape, Shape::Error { status: 500, .. }));
}

#[test]
fn plain_profile_is_exact() {
    let plain = profile::find("plain").unwrap();
    let plan = plan_for(plain, 0, &body(0), None);
    let Shape::Stream { writes, .. } = &plan.shape else {
        panic!("plain streams");
    };
    let labels: Vec<Label> = writes.iter().map(|w| w.label).collect();
    use Label::*;
    assert_eq!(
        labels,
        [
            Answer, Answer, Answer, Answer, Answer, Answer, Answer, Finish, Done
        ]
    );
    // TTFA 40 ms, then 6 gaps of 1000/200 = 5 ms.
    let times: Vec<f64> = writes.iter().map(|w| w.at_ms).collect();
    assert_eq!(
        times,
        [40.0, 45.0, 50.0, 55.0, 60.0, 65.0, 70.0, 70.0, 70.0]
    );
    assert_eq!(plan.headers_at_ms, 10.0);
}
