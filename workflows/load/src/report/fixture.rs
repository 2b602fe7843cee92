//! A small load run built by hand, for the report tests: every figure the tests expect is
//! computed by hand from these samples (see `tests.rs`).

use super::{LaneLoad, LoadResults, ReportSettings, StepResults};
use crate::arrivals::Window;
use crate::metrics::{ReadGroup, RequestSample, Slo, SloMetric};
use crate::spec::{Arrivals, StepModel};
use openbench_common::record::{ErrorType, Outcome};
use std::collections::BTreeMap;

/// A completed request of `lane`: scheduled (open loop) and sent at these offsets, its answer
/// chunks, its end and its answer tokens.
pub fn done(
    lane: &str,
    scheduled: Option<f64>,
    sent: f64,
    chunks: &[f64],
    finished: f64,
    tokens: u64,
) -> RequestSample {
    RequestSample {
        lane: lane.into(),
        scheduled_ms: scheduled,
        sent_ms: sent,
        ttfo_ms: chunks.first().copied(),
        answer_events_ms: chunks.to_vec(),
        read_groups: chunks
            .iter()
            .map(|&at_ms| ReadGroup { at_ms, tokens: 1 })
            .collect(),
        finished_ms: finished,
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

/// An HTTP 429 of `lane`, answered 5 ms after its send.
pub fn limited(lane: &str, scheduled: f64, sent: f64) -> RequestSample {
    RequestSample {
        outcome: Outcome::HttpError,
        error_type: Some(ErrorType::Http429),
        ttfo_ms: None,
        answer_events_ms: Vec::new(),
        read_groups: Vec::new(),
        finished_ms: 5.0,
        answer_tokens: 0,
        ..done(lane, Some(scheduled), sent, &[], 5.0, 0)
    }
}

fn lane(name: &str, rate: Option<f64>, users: Option<u32>) -> LaneLoad {
    LaneLoad {
        lane: name.into(),
        provider: name.into(),
        region: "local".into(),
        target_rate_per_s: rate,
        concurrency: users,
    }
}

fn window(end_ms: u64) -> Window {
    Window {
        start_ns: 0,
        end_ns: end_ms * 1_000_000,
        load_end_ns: end_ms * 1_000_000,
    }
}

fn constant(rate_per_s: f64) -> StepModel {
    StepModel::Open {
        arrivals: Arrivals::Constant,
        rate_per_s,
    }
}

/// Three steps, two lanes (`a` slow and rate limited, `b` fast), SLO `ttfa_ms ≤ 250`.
pub fn results() -> LoadResults {
    let mut a0 = done("a", Some(0.0), 10.0, &[100.0, 120.0, 150.0], 160.0, 3);
    a0.usage_completion_tokens = Some(4);
    let step0 = StepResults {
        index: 0,
        model: constant(2.0),
        window: window(2000),
        lanes: vec![lane("a", Some(2.0), None), lane("b", Some(2.0), None)],
        samples: vec![
            a0,
            done(
                "a",
                Some(500.0),
                500.0,
                &[200.0, 210.0, 230.0, 260.0],
                270.0,
                4,
            ),
            limited("a", 1000.0, 1030.0),
            done("a", Some(1500.0), 1500.0, &[300.0, 700.0], 700.0, 2),
            // Due after the window: cool-down, never measured.
            done("a", Some(2000.0), 2000.0, &[50.0, 60.0], 60.0, 2),
            done("b", Some(0.0), 0.0, &[50.0, 60.0], 60.0, 2),
            done("b", Some(500.0), 500.0, &[50.0, 60.0], 60.0, 2),
            done("b", Some(1000.0), 1000.0, &[50.0, 60.0], 60.0, 2),
            done("b", Some(1500.0), 1500.0, &[50.0, 60.0], 60.0, 2),
        ],
        harness_failures: 1,
        sittings: vec![1],
        turns: Vec::new(),
        agent: None,
        repeat: None,
        retry_after_s: BTreeMap::from([(2, 2.0)]),
    };
    let step1 = StepResults {
        index: 1,
        model: constant(4.0),
        window: window(1000),
        lanes: vec![lane("a", Some(4.0), None), lane("b", Some(4.0), None)],
        samples: [0.0, 250.0, 500.0, 750.0]
            .iter()
            .flat_map(|&t| {
                [
                    limited("a", t, t),
                    done("b", Some(t), t, &[80.0, 90.0], 90.0, 2),
                ]
            })
            .collect(),
        harness_failures: 0,
        sittings: vec![1],
        turns: Vec::new(),
        agent: None,
        repeat: None,
        // Samples 0, 2, 4, 6 are lane a's 429s; two carried a Retry-After.
        retry_after_s: BTreeMap::from([(0, 3.0), (4, 1.0)]),
    };
    let step2 = StepResults {
        index: 2,
        model: StepModel::Closed { concurrency: 2 },
        window: window(1000),
        lanes: vec![lane("a", None, Some(2)), lane("b", None, Some(2))],
        samples: vec![
            done("a", None, 0.0, &[100.0, 150.0], 150.0, 2),
            done("a", None, 0.0, &[100.0, 150.0], 150.0, 2),
            done("a", None, 150.0, &[100.0, 150.0], 150.0, 2),
            done("a", None, 150.0, &[100.0, 150.0], 150.0, 2),
        ],
        harness_failures: 0,
        sittings: vec![1],
        turns: Vec::new(),
        agent: None,
        repeat: None,
        retry_after_s: BTreeMap::new(),
    };
    LoadResults {
        run_id: "run-load-1".into(),
        steps: vec![step0, step1, step2],
        settings: ReportSettings {
            slo: Slo {
                bounds: vec![(SloMetric::TtfaMs, 250.0)],
            },
            sustain_fraction: 0.95,
            goodput_threshold: 0.9,
            seed: 7,
        },
        scored: false,
        notes: vec!["provider b does not honour ignore_eos".into()],
        health: None,
        replica_harness_failures: BTreeMap::new(),
    }
}

/// One open-loop step of 40 requests of lane `x`, every one with TTFA `ttfa` and one 10 ms gap,
/// and, for each index in `mixed`, TTFA `ttfa + 100` instead.
pub fn forty(run_id: &str, ttfa: f64, mixed: &[usize]) -> LoadResults {
    let mut run = results();
    run.run_id = run_id.into();
    let samples = (0..40)
        .map(|k| {
            let t = k as f64 * 100.0;
            let first = if mixed.contains(&k) {
                ttfa + 100.0
            } else {
                ttfa
            };
            done("x", Some(t), t, &[first, first + 10.0], first + 10.0, 2)
        })
        .collect();
    run.steps = vec![StepResults {
        index: 0,
        model: StepModel::Open {
            arrivals: Arrivals::Constant,
            rate_per_s: 10.0,
        },
        window: Window {
            start_ns: 0,
            end_ns: 4_000_000_000,
            load_end_ns: 4_000_000_000,
        },
        lanes: vec![LaneLoad {
            lane: "x".into(),
            provider: "x".into(),
            region: "local".into(),
            target_rate_per_s: Some(10.0),
            concurrency: None,
        }],
        samples,
        harness_failures: 0,
        sittings: vec![1],
        turns: Vec::new(),
        agent: None,
        repeat: None,
        retry_after_s: BTreeMap::new(),
    }];
    run
}
