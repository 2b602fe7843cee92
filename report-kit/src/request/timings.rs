//! One request's load timings and its SLO check.

use super::RequestSample;
use openbench_common::record::{Outcome, tokens_per_second};
use std::collections::BTreeMap;

/// The timings of one request (milliseconds), all `None` unless it completed with a non-empty
/// answer (latency populations exclude failures, METHODOLOGY §6), except the send lag. An
/// answer that fell short of a held length keeps its TTFO and TTFA only: its E2E, TPOT,
/// tokens/s and gaps would make the step look faster than the length it was asked to run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestTimings {
    /// First reasoning or answer text, from the actual send.
    pub ttfo_ms: Option<f64>,
    /// First answer-bearing event, from the actual send.
    pub ttfa_ms: Option<f64>,
    /// Last answer-bearing event, from the actual send.
    pub e2e_ms: Option<f64>,
    /// (E2E − TTFA) / (answer tokens − 1), for answers of at least 2 tokens with E2E > TTFA.
    pub tpot_ms: Option<f64>,
    /// Visible-answer tokens/s: (N − 1) / (E2E − TTFA) in seconds, when N ≥ 2 and E2E > TTFA.
    pub tokens_per_s: Option<f64>,
    /// Inter-token latency per token ([`super::itl_per_token`] of the read groups).
    pub itl_ms: Vec<f64>,
    /// Every gap between consecutive answer-bearing events (what peers call ITL): events of one
    /// read give 0 ms gaps, a server sending k tokens an event k times the per-token gap.
    pub event_gaps_ms: Vec<f64>,
    /// Actual − scheduled send (open loop only; for any outcome).
    pub send_lag_ms: Option<f64>,
    /// o200k tokens of the answer (0 unless it completed).
    pub answer_tokens: u64,
    /// The answer fell short of a held output length ([`RequestSample::fell_short`]).
    pub fell_short: bool,
}

impl RequestTimings {
    /// The timings of `sample`.
    pub fn of(sample: &RequestSample) -> RequestTimings {
        let send_lag_ms = sample.scheduled_ms.map(|s| sample.sent_ms - s);
        let (Some(&first), Some(&last)) = (
            sample.answer_events_ms.first(),
            sample.answer_events_ms.last(),
        ) else {
            return RequestTimings {
                send_lag_ms,
                ..RequestTimings::default()
            };
        };
        if sample.outcome != Outcome::Completed {
            return RequestTimings {
                send_lag_ms,
                ..RequestTimings::default()
            };
        }
        let n = sample.answer_tokens;
        if sample.fell_short() {
            return RequestTimings {
                ttfo_ms: sample.ttfo_ms,
                ttfa_ms: Some(first),
                send_lag_ms,
                answer_tokens: n,
                fell_short: true,
                ..RequestTimings::default()
            };
        }
        let span = last - first;
        // Per-token figures need tokens spread over time: several tokens in one chunk (E2E =
        // TTFA) say nothing about the time per token.
        let timed = n >= 2 && span > 0.0;
        RequestTimings {
            ttfo_ms: sample.ttfo_ms,
            ttfa_ms: Some(first),
            e2e_ms: Some(last),
            tpot_ms: timed.then(|| span / (n - 1) as f64),
            tokens_per_s: tokens_per_second(n, first, last),
            itl_ms: super::itl_per_token(&sample.read_groups),
            event_gaps_ms: sample
                .answer_events_ms
                .windows(2)
                .map(|w| w[1] - w[0])
                .collect(),
            send_lag_ms,
            answer_tokens: n,
            fell_short: false,
        }
    }

    /// A latency timed from the scheduled send: the actual-send latency plus the send lag. In a
    /// closed-loop step (no schedule) it is the latency itself.
    pub fn from_schedule(&self, latency_ms: Option<f64>) -> Option<f64> {
        latency_ms.map(|l| l + self.send_lag_ms.unwrap_or(0.0))
    }

    /// The value an SLO on `metric` is checked against.
    pub fn value(&self, metric: SloMetric) -> Option<f64> {
        match metric {
            SloMetric::TtfoMs => self.ttfo_ms,
            SloMetric::TtfaMs => self.ttfa_ms,
            SloMetric::E2eMs => self.e2e_ms,
            SloMetric::TpotMs => self.tpot_ms,
            SloMetric::TtfoSchedMs => self.from_schedule(self.ttfo_ms),
            SloMetric::TtfaSchedMs => self.from_schedule(self.ttfa_ms),
            SloMetric::E2eSchedMs => self.from_schedule(self.e2e_ms),
        }
    }
}

/// Whether a request counts towards goodput (METHODOLOGY §9): it completed, met every SLO
/// bound, was not scored wrong, and did not fall short of a held output length. The one
/// definition the step's metrics and `compare`'s resamples use.
pub fn is_good(sample: &RequestSample, timings: &RequestTimings, slo: &Slo) -> bool {
    sample.outcome == Outcome::Completed
        && !timings.fell_short
        && sample.correct != Some(false)
        && slo.met_by(timings)
}

/// A metric an SLO may bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SloMetric {
    /// `ttfo_ms`.
    TtfoMs,
    /// `ttfa_ms`.
    TtfaMs,
    /// `e2e_ms`.
    E2eMs,
    /// `tpot_ms`.
    TpotMs,
    /// `ttfo_sched_ms`.
    TtfoSchedMs,
    /// `ttfa_sched_ms`.
    TtfaSchedMs,
    /// `e2e_sched_ms`.
    E2eSchedMs,
}

impl SloMetric {
    /// The spec name (the inverse of [`SloMetric::parse`]).
    pub fn name(self) -> &'static str {
        match self {
            SloMetric::TtfoMs => "ttfo_ms",
            SloMetric::TtfaMs => "ttfa_ms",
            SloMetric::E2eMs => "e2e_ms",
            SloMetric::TpotMs => "tpot_ms",
            SloMetric::TtfoSchedMs => "ttfo_sched_ms",
            SloMetric::TtfaSchedMs => "ttfa_sched_ms",
            SloMetric::E2eSchedMs => "e2e_sched_ms",
        }
    }

    /// The metric of a spec name (one of the spec's `SLO_METRICS`).
    pub fn parse(name: &str) -> Option<SloMetric> {
        Some(match name {
            "ttfo_ms" => SloMetric::TtfoMs,
            "ttfa_ms" => SloMetric::TtfaMs,
            "e2e_ms" => SloMetric::E2eMs,
            "tpot_ms" => SloMetric::TpotMs,
            "ttfo_sched_ms" => SloMetric::TtfoSchedMs,
            "ttfa_sched_ms" => SloMetric::TtfaSchedMs,
            "e2e_sched_ms" => SloMetric::E2eSchedMs,
            _ => return None,
        })
    }
}

/// The spec's SLO: upper bounds every good request meets.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Slo {
    /// Metric → largest acceptable value (inclusive).
    pub bounds: Vec<(SloMetric, f64)>,
}

impl Slo {
    /// The SLO of a validated `load.slo` map; unknown names (refused by validation) are skipped.
    pub fn from_spec(map: &BTreeMap<String, f64>) -> Slo {
        Slo {
            bounds: map
                .iter()
                .filter_map(|(name, bound)| SloMetric::parse(name).map(|m| (m, *bound)))
                .collect(),
        }
    }

    /// True when a completed request meets every bound. A TPOT bound is met without a TPOT
    /// only by a one-token answer (no time per output token to exceed); several tokens in one
    /// chunk have no measurable TPOT and do not meet it. Any other bound needs its value.
    pub fn met_by(&self, timings: &RequestTimings) -> bool {
        self.bounds
            .iter()
            .all(|&(metric, bound)| match timings.value(metric) {
                Some(v) => v <= bound,
                None => {
                    metric == SloMetric::TpotMs
                        && timings.e2e_ms.is_some()
                        && timings.answer_tokens == 1
                }
            })
    }
}
