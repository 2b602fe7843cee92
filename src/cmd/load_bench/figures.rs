//! The arithmetic of `bench load-generator`, pure: one step's figures from its requests (what
//! was sent against what was planned, the achieved rate, the peak in flight, the send lag, the
//! failures by class) and the summary over steps (the highest open-loop rate kept within the
//! send-lag bound with no failure, the highest concurrency driven with no failure).

use openbench_common::stats::nearest_rank;
use openbench_load::arrivals::Window;
use openbench_load::metrics::{FailureClass, RequestSample};
use serde::Serialize;
use std::collections::BTreeMap;

/// The send-lag p99 an open-loop step may reach and still count as driven on time, ms (issue
/// 25: the load generator's timing error within 1 ms p99).
pub const SEND_LAG_BOUND_MS: f64 = 1.0;

/// p50, p99 and max of the send lag (actual dispatch − scheduled release), ms.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lag {
    /// Requests counted.
    pub n: usize,
    /// Median (nearest rank).
    pub p50_ms: Option<f64>,
    /// 99th percentile (nearest rank).
    pub p99_ms: Option<f64>,
    /// Largest.
    pub max_ms: Option<f64>,
}

impl Lag {
    fn of(values: &[f64]) -> Lag {
        Lag {
            n: values.len(),
            p50_ms: nearest_rank(values, 0.5),
            p99_ms: nearest_rank(values, 0.99),
            max_ms: nearest_rank(values, 1.0),
        }
    }
}

/// What one step's requests show, pooled over its lanes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Traffic {
    /// Requests the schedule planned (open loop: every release of warm-up, window and
    /// cool-down); `None` for a closed loop, whose count is an outcome.
    pub planned: Option<u64>,
    /// Requests sent (every record, harness failures included).
    pub sent: u64,
    /// Requests scheduled (open loop) or sent (closed loop) inside the measured window.
    pub measured: usize,
    /// Measured requests sent before the window closed ÷ the window's length.
    pub achieved_per_s: f64,
    /// Most requests in flight at one instant: each request spans [its send, its end).
    pub peak_in_flight: usize,
    /// Send lag of the measured requests (open loop only).
    pub send_lag: Option<Lag>,
    /// Failures by class over every request of the step (not only measured ones).
    pub failures: BTreeMap<FailureClass, usize>,
    /// Requests lost to our own machinery.
    pub harness_failures: u64,
}

impl Traffic {
    /// The figures of a step's `samples` (harness failures set apart: `harness_failures`),
    /// measured in `window`, with `planned` releases (open loop).
    pub fn of(
        samples: &[RequestSample],
        window: &Window,
        planned: Option<u64>,
        harness_failures: u64,
    ) -> Traffic {
        let open = planned.is_some();
        let (start, end) = (window.start_ms(), window.end_ms());
        let measured: Vec<&RequestSample> = samples
            .iter()
            .filter(|s| {
                let at = if open {
                    s.scheduled_ms.unwrap_or(s.sent_ms)
                } else {
                    s.sent_ms
                };
                at >= start && at < end
            })
            .collect();
        let sent_in_window = measured.iter().filter(|s| s.sent_ms < end).count();
        let length_s = window.length_s();
        let lags: Vec<f64> = measured
            .iter()
            .filter_map(|s| Some(s.sent_ms - s.scheduled_ms?))
            .collect();
        let mut failures = BTreeMap::new();
        for s in samples {
            if let Some(class) = FailureClass::of(s.outcome, s.error_type) {
                *failures.entry(class).or_insert(0) += 1;
            }
        }
        Traffic {
            planned,
            sent: samples.len() as u64 + harness_failures,
            measured: measured.len(),
            achieved_per_s: if length_s > 0.0 {
                sent_in_window as f64 / length_s
            } else {
                0.0
            },
            peak_in_flight: peak_in_flight(samples),
            send_lag: open.then(|| Lag::of(&lags)),
            failures,
            harness_failures,
        }
    }

    /// No failure of any class and no harness failure.
    pub fn clean(&self) -> bool {
        self.failures.is_empty() && self.harness_failures == 0
    }
}

/// The most requests in flight at one instant, each spanning [send, send + end): the ends at an
/// instant come before the sends at it, so a request sent as another ends does not overlap it.
pub fn peak_in_flight(samples: &[RequestSample]) -> usize {
    // (time, +1 for a send / −1 for an end); ends sort first at equal times.
    let mut edges: Vec<(f64, i8)> = Vec::with_capacity(samples.len() * 2);
    for s in samples {
        edges.push((s.sent_ms, 1));
        edges.push((s.sent_ms + s.finished_ms.max(0.0), -1));
    }
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut peak) = (0usize, 0usize);
    for (_, delta) in edges {
        if delta > 0 {
            now += 1;
            peak = peak.max(now);
        } else {
            now = now.saturating_sub(1);
        }
    }
    peak
}

/// One step as the summary reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutcome {
    /// Open loop: the total rate asked (every lane's); closed: `None`.
    pub rate_per_s: Option<f64>,
    /// Closed loop: the total users (every lane's); open: `None`.
    pub users: Option<u64>,
    /// Its figures.
    pub traffic: Traffic,
}

/// What the steps add up to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The send-lag p99 bound of an open-loop step, ms.
    pub send_lag_bound_ms: f64,
    /// The highest total open-loop rate that sent every planned request, with no failure and a
    /// send-lag p99 within the bound; `None` when none did.
    pub highest_open_rate_per_s: Option<f64>,
    /// The highest total closed-loop concurrency whose users were all in flight at once (peak in
    /// flight = users) with no failure; `None` when none was.
    pub highest_concurrency: Option<u64>,
}

impl Summary {
    /// The summary of `steps`.
    pub fn of(steps: &[StepOutcome]) -> Summary {
        let on_time = |t: &Traffic| {
            t.send_lag
                .as_ref()
                .and_then(|l| l.p99_ms)
                .is_some_and(|p99| p99 <= SEND_LAG_BOUND_MS)
        };
        let highest_open_rate_per_s = steps
            .iter()
            .filter(|s| {
                let t = &s.traffic;
                t.clean() && t.planned == Some(t.sent) && on_time(t)
            })
            .filter_map(|s| s.rate_per_s)
            .max_by(f64::total_cmp);
        let highest_concurrency = steps
            .iter()
            .filter(|s| {
                let t = &s.traffic;
                t.clean() && s.users.is_some_and(|u| t.peak_in_flight as u64 >= u)
            })
            .filter_map(|s| s.users)
            .max();
        Summary {
            send_lag_bound_ms: SEND_LAG_BOUND_MS,
            highest_open_rate_per_s,
            highest_concurrency,
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use openbench_common::record::{ErrorType, Outcome};

    /// A completed request of lane `lane-0000`, no tokens, no usage (shared with `trace`'s tests).
    pub(in crate::cmd::load_bench) fn sample(
        scheduled: Option<f64>,
        sent: f64,
        finished: f64,
    ) -> RequestSample {
        RequestSample {
            lane: "lane-0000".into(),
            scheduled_ms: scheduled,
            sent_ms: sent,
            ttfo_ms: None,
            answer_events_ms: Vec::new(),
            read_groups: Vec::new(),
            finished_ms: finished,
            input_tokens: 0,
            answer_tokens: 0,
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

    /// Window [1000, 3000) ms, load until 3500.
    const WINDOW: Window = Window {
        start_ns: 1_000_000_000,
        end_ns: 3_000_000_000,
        load_end_ns: 3_500_000_000,
    };

    #[test]
    fn peak_in_flight_counts_overlaps_with_ends_before_sends_at_one_instant() {
        // [0, 10), [5, 15), [10, 20), [12, 13): at 12 three are in flight (5–15, 10–20, 12–13);
        // at 10 the first ends as the third starts, so two, not three.
        let s = [
            sample(None, 0.0, 10.0),
            sample(None, 5.0, 10.0),
            sample(None, 10.0, 10.0),
            sample(None, 12.0, 1.0),
        ];
        assert_eq!(peak_in_flight(&s), 3);
        assert_eq!(peak_in_flight(&s[..3]), 2);
        assert_eq!(peak_in_flight(&[]), 0);
    }

    #[test]
    fn open_loop_traffic_counts_the_window_by_schedule_and_lag_by_nearest_rank() {
        // Scheduled at 500 (warm-up), 1000, 1500, 2000, 2500 (window), 3000 (cool-down).
        // Lags 0.2, 0.4, 0.1, 3.0 in the window; the one at 2500 is sent at 3002.5, after
        // the window closed, so 3 of 4 measured were sent in it: 3 / 2 s = 1.5/s.
        let mut s = vec![
            sample(Some(500.0), 500.9, 100.0),
            sample(Some(1000.0), 1000.2, 100.0),
            sample(Some(1500.0), 1500.4, 100.0),
            sample(Some(2000.0), 2000.1, 100.0),
            sample(Some(2500.0), 3002.5, 100.0),
            sample(Some(3000.0), 3000.0, 100.0),
        ];
        s[5].outcome = Outcome::HttpError;
        s[5].error_type = Some(ErrorType::Http429);
        let t = Traffic::of(&s, &WINDOW, Some(7), 1);
        assert_eq!(t.planned, Some(7));
        assert_eq!(t.sent, 7);
        assert_eq!(t.measured, 4);
        assert_eq!(t.achieved_per_s, 1.5);
        // Lags in the window: 0.2, 0.4, 0.1, 502.5 (f64 differences of the stamps above).
        let lag = t.send_lag.as_ref().unwrap();
        assert_eq!(lag.n, 4);
        assert_eq!(lag.p50_ms, Some(1000.2 - 1000.0));
        assert_eq!(lag.p99_ms, Some(3002.5 - 2500.0));
        assert_eq!(lag.max_ms, Some(3002.5 - 2500.0));
        // [3000, 3100) and [3002.5, 3102.5) overlap.
        assert_eq!(t.peak_in_flight, 2);
        assert_eq!(t.failures, BTreeMap::from([(FailureClass::RateLimited, 1)]));
        assert!(!t.clean());
    }

    #[test]
    fn closed_loop_traffic_counts_the_window_by_send_and_has_no_lag() {
        let s = [
            sample(None, 999.0, 5.0),
            sample(None, 1000.0, 5.0),
            sample(None, 2999.0, 5.0),
            sample(None, 3000.0, 5.0),
        ];
        let t = Traffic::of(&s, &WINDOW, None, 0);
        assert_eq!((t.planned, t.sent, t.measured), (None, 4, 2));
        assert_eq!(t.achieved_per_s, 1.0);
        assert_eq!(t.send_lag, None);
        assert!(t.clean());
    }

    fn outcome(
        rate: Option<f64>,
        users: Option<u64>,
        planned: Option<u64>,
        sent: u64,
        peak: usize,
        p99: Option<f64>,
        failures: usize,
    ) -> StepOutcome {
        let mut classes = BTreeMap::new();
        if failures > 0 {
            classes.insert(FailureClass::Timeout, failures);
        }
        StepOutcome {
            rate_per_s: rate,
            users,
            traffic: Traffic {
                planned,
                sent,
                measured: 0,
                achieved_per_s: 0.0,
                peak_in_flight: peak,
                send_lag: rate.map(|_| Lag {
                    n: 1,
                    p50_ms: p99,
                    p99_ms: p99,
                    max_ms: p99,
                }),
                failures: classes,
                harness_failures: 0,
            },
        }
    }

    #[test]
    fn the_summary_keeps_the_highest_clean_on_time_rate_and_fully_driven_concurrency() {
        let steps = [
            outcome(Some(100.0), None, Some(500), 500, 20, Some(0.3), 0),
            // Exactly at the bound: kept.
            outcome(Some(200.0), None, Some(1000), 1000, 40, Some(1.0), 0),
            // Over the bound.
            outcome(Some(300.0), None, Some(1500), 1500, 60, Some(1.01), 0),
            // On time but one request short of the plan.
            outcome(Some(400.0), None, Some(2000), 1999, 80, Some(0.2), 0),
            // On time, every request sent, one failure.
            outcome(Some(500.0), None, Some(2500), 2500, 90, Some(0.2), 1),
            outcome(None, Some(100), None, 900, 100, None, 0),
            outcome(None, Some(300), None, 2000, 300, None, 0),
            // Never had all its users in flight at once.
            outcome(None, Some(1000), None, 5000, 999, None, 0),
            // All in flight, but a failure.
            outcome(None, Some(2000), None, 5000, 2000, None, 3),
        ];
        let summary = Summary::of(&steps);
        assert_eq!(summary.highest_open_rate_per_s, Some(200.0));
        assert_eq!(summary.highest_concurrency, Some(300));
        assert_eq!(summary.send_lag_bound_ms, 1.0);
        assert_eq!(
            Summary::of(&steps[2..5]),
            Summary {
                send_lag_bound_ms: 1.0,
                highest_open_rate_per_s: None,
                highest_concurrency: None,
            }
        );
    }
}
