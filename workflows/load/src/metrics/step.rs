//! A step's aggregates over its measured requests: distributions, throughputs, achieved rate,
//! goodput and failures by class, per lane and pooled.

use super::saturation::{StepResult, rate_kept};
use super::{Distribution, RequestSample};
use crate::arrivals::Window;
use openbench_common::record::{ErrorType, Outcome};
use openbench_report_kit::request::{RequestTimings, Slo, is_good};
use serde::Serialize;
use std::collections::BTreeMap;

/// What the aggregation needs besides the requests.
#[derive(Debug, Clone, PartialEq)]
pub struct StepSettings {
    /// The step's measured window.
    pub window: Window,
    /// Target rate per lane (open loop); `None` for a closed loop.
    pub target_rate_per_lane: Option<f64>,
    /// Smallest achieved ÷ target that counts as keeping up (0.95).
    pub sustain_fraction: f64,
    /// Smallest goodput fraction of a sustained step (the spec's, default 0.9).
    pub goodput_threshold: f64,
    /// The SLO of goodput.
    pub slo: Slo,
}

/// Why a request failed, for the failure table. A 429 is its own class (`rate_limited`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// HTTP 429.
    RateLimited,
    /// Any other non-2xx below 500.
    Http4xx,
    /// HTTP 5xx.
    Http5xx,
    /// The deadline passed.
    Timeout,
    /// Connect, reset, invalid or truncated stream.
    TransportError,
    /// A response over one of the stream limits (METHODOLOGY §4).
    StreamLimitExceeded,
    /// The provider reported an error inside a 2xx stream.
    StreamError,
}

impl FailureClass {
    /// The class of a failed outcome; `None` for a completion or a harness failure.
    pub fn of(outcome: Outcome, error_type: Option<ErrorType>) -> Option<FailureClass> {
        Some(match outcome {
            Outcome::Completed | Outcome::HarnessError => return None,
            Outcome::HttpError => match error_type {
                Some(ErrorType::Http429) => FailureClass::RateLimited,
                Some(ErrorType::Http5xx) => FailureClass::Http5xx,
                _ => FailureClass::Http4xx,
            },
            Outcome::Timeout => FailureClass::Timeout,
            Outcome::TransportError => FailureClass::TransportError,
            Outcome::StreamLimitExceeded => FailureClass::StreamLimitExceeded,
            Outcome::StreamError => FailureClass::StreamError,
        })
    }
}

/// Achieved against target rate. Only whether the *rate* was kept: whether the step was
/// sustained is [`StepMetrics::sustained`], the one rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateCheck {
    /// Target requests per second (open loop); `None` for a closed loop.
    pub target_per_s: Option<f64>,
    /// Measured requests sent before the window closed ÷ window length.
    pub achieved_per_s: f64,
    /// Measured requests that completed (whenever they ended) ÷ window length: the server's
    /// side of the verdict. Not the throughput ([`StepMetrics::request_throughput_per_s`]).
    pub completed_per_s: f64,
    /// Whether the rate was kept, and who fell behind.
    pub verdict: RateVerdict,
}

/// Whether an open-loop step ran at its target rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RateVerdict {
    /// A closed loop: its rate is an outcome, not a target.
    NoTarget,
    /// The client sent, and the server completed, at least the sustain fraction of the target's
    /// measured requests.
    OnTarget,
    /// The client sent under the sustain fraction of the target in the window (send lag).
    ClientBehind,
    /// The client kept up but under the sustain fraction of the target's measured requests
    /// completed: the server refused or failed the rest.
    ServerBehind,
}

/// Goodput: completed measured requests that met the SLO (and, with scoring, were right; under
/// a held length, ran to it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Goodput {
    /// Good requests.
    pub good: usize,
    /// Good requests ÷ the window's length.
    pub per_s: Option<f64>,
    /// Good requests ÷ measured requests (failures count against it).
    pub fraction: f64,
}

/// Provider-reported token counts beside the o200k ones, over the requests the throughput
/// counts (completed inside the window).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageTokens {
    /// Those requests that returned completion usage.
    pub requests: usize,
    /// Their usage completion tokens ÷ the window's length.
    pub output_per_s: Option<f64>,
    /// Usage prompt tokens of those that returned them ÷ the window's length.
    pub input_per_s: Option<f64>,
    /// (Σ usage completion − Σ o200k answer) ÷ Σ o200k answer over the requests with usage.
    pub output_discrepancy: Option<f64>,
}

/// Answers under a held output length (`max_tokens` + `ignore_eos`, METHODOLOGY §9).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeldLength {
    /// Completed measured requests that were asked to hold a length.
    pub requests: usize,
    /// Of those, the answers shorter than asked ([`RequestSample::fell_short`]).
    pub short: usize,
    /// More than half fell short: the server did not hold the length, and the step is never
    /// sustained on such answers.
    pub flagged: bool,
}

/// Everything one step reports for one lane, or pooled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepMetrics {
    /// Measured requests (scheduled, or for a closed loop sent, inside the window), harness
    /// failures excluded.
    pub measured: usize,
    /// Measured requests that completed.
    pub completed: usize,
    /// Measured requests lost to our own machinery (never counted against the provider).
    pub harness_failures: usize,
    /// Measured failures by class.
    pub failures: BTreeMap<FailureClass, usize>,
    /// TTFO from the actual send.
    pub ttfo_ms: Distribution,
    /// TTFA from the actual send.
    pub ttfa_ms: Distribution,
    /// E2E from the actual send.
    pub e2e_ms: Distribution,
    /// TTFO from the scheduled send (open loop).
    pub ttfo_sched_ms: Option<Distribution>,
    /// TTFA from the scheduled send (open loop).
    pub ttfa_sched_ms: Option<Distribution>,
    /// E2E from the scheduled send (open loop).
    pub e2e_sched_ms: Option<Distribution>,
    /// Actual − scheduled send of every measured request (open loop).
    pub send_lag_ms: Option<Distribution>,
    /// Time per output token (answers of ≥ 2 tokens with E2E > TTFA).
    pub tpot_ms: Distribution,
    /// Inter-token latency per token (METHODOLOGY §9), pooled over the step's completed
    /// requests.
    pub itl_ms: Distribution,
    /// Every gap between answer-bearing events, pooled (the per-event figure peers call ITL).
    pub event_gap_ms: Distribution,
    /// Visible-answer tokens/s (E2E > TTFA).
    pub tokens_per_s: Distribution,
    /// Requests of the step (any phase) that completed inside the measured window.
    pub completed_in_window: usize,
    /// Request throughput: `completed_in_window` ÷ the window's length (METHODOLOGY §9).
    pub request_throughput_per_s: Option<f64>,
    /// Output token throughput: o200k answer tokens of those requests ÷ the window's length.
    pub output_tokens_per_s: Option<f64>,
    /// o200k prompt tokens of those requests ÷ the window's length.
    pub input_tokens_per_s: Option<f64>,
    /// The provider's own counts.
    pub usage: UsageTokens,
    /// D: window start to the end of the last measured request, seconds (how long the
    /// measured requests took to drain).
    pub duration_s: Option<f64>,
    /// Completed measured requests ÷ D: the drain rate, kept under its own name; it reads low
    /// by the last request's latency share and is not the throughput.
    pub drain_requests_per_s: Option<f64>,
    /// Achieved against target rate.
    pub rate: RateCheck,
    /// Goodput under the SLO.
    pub goodput: Goodput,
    /// Answers under a held length; `None` when no completed measured request held one.
    pub held_length: Option<HeldLength>,
    /// Whether the step was sustained: the one rule ([`super::saturation::StepResult::is_sustained`])
    /// that the JSON, both reports, `compare` and the saturation search read.
    pub sustained: bool,
}

/// A step's metrics per lane and pooled over lanes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepReport {
    /// Lane → its metrics.
    pub lanes: BTreeMap<String, StepMetrics>,
    /// All lanes together (the target is the lanes' targets summed).
    pub pooled: StepMetrics,
}

/// The report of one step over all its requests (any phase: only the measured ones count).
pub fn step_report(samples: &[RequestSample], settings: &StepSettings) -> StepReport {
    let mut by_lane: BTreeMap<&str, Vec<&RequestSample>> = BTreeMap::new();
    for s in samples {
        by_lane.entry(&s.lane).or_default().push(s);
    }
    let lanes = by_lane
        .iter()
        .map(|(lane, mine)| (lane.to_string(), step_metrics(mine, settings, 1)))
        .collect();
    let all: Vec<&RequestSample> = samples.iter().collect();
    StepReport {
        lanes,
        pooled: step_metrics(&all, settings, by_lane.len().max(1)),
    }
}

/// True when a request belongs to the measured window: its scheduled send (open loop) or its
/// actual send (closed loop) falls inside it.
pub fn is_measured(sample: &RequestSample, window: &Window) -> bool {
    window.contains_ms(sample.scheduled_ms.unwrap_or(sample.sent_ms))
}

/// The metrics of one lane's requests (or all lanes' for the pooled row, `lanes` of them).
pub fn step_metrics(
    samples: &[&RequestSample],
    settings: &StepSettings,
    lanes: usize,
) -> StepMetrics {
    let window = &settings.window;
    let in_window: Vec<&RequestSample> = samples
        .iter()
        .copied()
        .filter(|s| is_measured(s, window))
        .collect();
    let harness_failures = in_window
        .iter()
        .filter(|s| s.outcome == Outcome::HarnessError)
        .count();
    let measured: Vec<&RequestSample> = in_window
        .into_iter()
        .filter(|s| s.outcome != Outcome::HarnessError)
        .collect();
    let timings: Vec<RequestTimings> = measured.iter().map(|s| RequestTimings::of(s)).collect();
    let completed: Vec<(&RequestSample, &RequestTimings)> = measured
        .iter()
        .copied()
        .zip(&timings)
        .filter(|(s, _)| s.outcome == Outcome::Completed)
        .collect();
    let mut failures = BTreeMap::new();
    for s in &measured {
        if let Some(class) = FailureClass::of(s.outcome, s.error_type) {
            *failures.entry(class).or_insert(0) += 1;
        }
    }
    let open = settings.target_rate_per_lane.is_some();
    let collect = |f: &dyn Fn(&RequestTimings) -> Option<f64>| -> Vec<f64> {
        timings.iter().filter_map(f).collect()
    };
    let sched = |f: &dyn Fn(&RequestTimings) -> Option<f64>| {
        open.then(|| Distribution::of(&collect(&|t| t.from_schedule(f(t)))))
    };
    let last_end = measured
        .iter()
        .map(|s| s.sent_ms + s.finished_ms)
        .fold(None, |acc: Option<f64>, end| {
            Some(acc.map_or(end, |a| a.max(end)))
        });
    let duration_s = last_end
        .map(|end| (end - window.start_ms()) / 1000.0)
        .filter(|d| *d > 0.0);
    let length_s = window.length_s();
    let per_window = |x: f64| (length_s > 0.0).then(|| x / length_s);
    // Throughput counts completions, not sends: every request of the step (warm-up ones too)
    // whose stream ended inside the window, so it is the server's completion rate there.
    let done_in_window: Vec<&RequestSample> = samples
        .iter()
        .copied()
        .filter(|s| s.outcome == Outcome::Completed)
        .filter(|s| window.contains_ms(s.sent_ms + s.finished_ms))
        .collect();
    let sum = |f: &dyn Fn(&RequestSample) -> u64| done_in_window.iter().map(|s| f(s)).sum::<u64>();
    let good = completed
        .iter()
        .filter(|(s, t)| is_good(s, t, &settings.slo))
        .count();
    let held: Vec<&RequestSample> = completed
        .iter()
        .map(|(s, _)| *s)
        .filter(|s| s.held_tokens.is_some())
        .collect();
    let short = held.iter().filter(|s| s.fell_short()).count();
    let held_length = (!held.is_empty()).then(|| HeldLength {
        requests: held.len(),
        short,
        flagged: 2 * short > held.len(),
    });
    let with_usage: Vec<&RequestSample> = done_in_window
        .iter()
        .copied()
        .filter(|s| s.usage_completion_tokens.is_some())
        .collect();
    let usage_out: u64 = with_usage
        .iter()
        .filter_map(|s| s.usage_completion_tokens)
        .sum();
    let usage_o200k: u64 = with_usage.iter().map(|s| s.answer_tokens).sum();
    let usage_in: Option<u64> = done_in_window
        .iter()
        .filter_map(|s| s.usage_prompt_tokens)
        .reduce(|a, b| a + b);
    let target = settings.target_rate_per_lane.map(|r| r * lanes as f64);
    let rate_of = |n: usize| {
        if length_s > 0.0 {
            n as f64 / length_s
        } else {
            0.0
        }
    };
    let sent = measured
        .iter()
        .filter(|s| window.before_end_ms(s.sent_ms))
        .count();
    let achieved_per_s = rate_of(sent);
    let completed_per_s = rate_of(completed.len());
    let verdict = match target {
        None => RateVerdict::NoTarget,
        Some(t) if achieved_per_s < settings.sustain_fraction * t => RateVerdict::ClientBehind,
        Some(t) if completed_per_s < settings.sustain_fraction * t => RateVerdict::ServerBehind,
        Some(_) => RateVerdict::OnTarget,
    };
    let goodput_fraction = if measured.is_empty() {
        0.0
    } else {
        good as f64 / measured.len() as f64
    };
    let sustained = StepResult {
        load: 0.0,
        rate_kept: rate_kept(verdict),
        goodput_fraction,
        held_length_flagged: held_length.as_ref().is_some_and(|h| h.flagged),
    }
    .is_sustained(settings.goodput_threshold);
    StepMetrics {
        measured: measured.len(),
        completed: completed.len(),
        harness_failures,
        failures,
        ttfo_ms: Distribution::of(&collect(&|t| t.ttfo_ms)),
        ttfa_ms: Distribution::of(&collect(&|t| t.ttfa_ms)),
        e2e_ms: Distribution::of(&collect(&|t| t.e2e_ms)),
        ttfo_sched_ms: sched(&|t| t.ttfo_ms),
        ttfa_sched_ms: sched(&|t| t.ttfa_ms),
        e2e_sched_ms: sched(&|t| t.e2e_ms),
        send_lag_ms: open.then(|| Distribution::of(&collect(&|t| t.send_lag_ms))),
        tpot_ms: Distribution::of(&collect(&|t| t.tpot_ms)),
        itl_ms: Distribution::of(
            &timings
                .iter()
                .flat_map(|t| t.itl_ms.iter().copied())
                .collect::<Vec<f64>>(),
        ),
        event_gap_ms: Distribution::of(
            &timings
                .iter()
                .flat_map(|t| t.event_gaps_ms.iter().copied())
                .collect::<Vec<f64>>(),
        ),
        tokens_per_s: Distribution::of(&collect(&|t| t.tokens_per_s)),
        completed_in_window: done_in_window.len(),
        request_throughput_per_s: per_window(done_in_window.len() as f64),
        output_tokens_per_s: per_window(sum(&|s| s.answer_tokens) as f64),
        input_tokens_per_s: per_window(sum(&|s| s.input_tokens) as f64),
        usage: UsageTokens {
            requests: with_usage.len(),
            output_per_s: (!with_usage.is_empty())
                .then_some(usage_out as f64)
                .and_then(per_window),
            input_per_s: usage_in.and_then(|n| per_window(n as f64)),
            output_discrepancy: (usage_o200k > 0)
                .then(|| (usage_out as f64 - usage_o200k as f64) / usage_o200k as f64),
        },
        duration_s,
        drain_requests_per_s: duration_s.map(|d| completed.len() as f64 / d),
        rate: RateCheck {
            target_per_s: target,
            achieved_per_s,
            completed_per_s,
            verdict,
        },
        goodput: Goodput {
            good,
            per_s: per_window(good as f64),
            fraction: goodput_fraction,
        },
        held_length,
        sustained,
    }
}
