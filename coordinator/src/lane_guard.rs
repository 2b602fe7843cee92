//! A load lane's guard against requests that fail at once (a dead endpoint, a refused
//! connection, a probe that answers every call with a harness failure).
//!
//! Left alone, a closed-loop user whose request fails in a millisecond sends its next one at
//! once: against a port with nothing listening, one run made 164,048 connection attempts in 69 s
//! and ended `complete`. So every send of a load lane passes this guard:
//!
//! - While the lane's requests reach the provider, the guard lets every send through and costs
//!   nothing (a run where nothing fails sends exactly what it sent before).
//! - After a **connection-level failure** ([`fails_at_connection_level`]: no HTTP status and a
//!   `connect` or `transport` error, or any harness record), the lane **backs off**: no slot sends
//!   until [`BACKOFF_FIRST`] has passed; then one request alone tries the lane (every other slot
//!   waits for its outcome). Each trial that fails doubles the wait, up to [`BACKOFF_MAX`]. The
//!   first request that reaches the provider ends the back-off and every slot sends again.
//! - A lane whose requests have failed at connection level without a break for [`STOP_AFTER`]
//!   (and at least [`STOP_AFTER_FAILURES`] times) is **stopped**: it sends nothing more in the
//!   sitting, which ends reporting it unreachable (docs/faults.md, "Load lanes that fail at
//!   once").
//!
//! - A **closed-loop** lane whose provider **refuses** [`REFUSALS_BEFORE_BACKOFF`] requests in a
//!   row ([`refused_by_provider`]: an HTTP error status or an error inside the stream, with no
//!   other outcome between them) backs off the same way, trial alone and doubling, until a
//!   request gets any other outcome. It is never stopped for refusals: they are the provider's
//!   measured answer, and the run reports them. An open loop's sends follow its schedule, not
//!   its answers, so refusals do not hold it (a saturation step keeps every 429).
//!
//! Against a dead endpoint a lane thus makes its users' first requests, then trials at 0.1, 0.3,
//! 0.7, 1.5 and 3.1 s, and stops at about 3.1 s. Against an upstream answering HTTP 500 to
//! everything, a closed loop sends 16 requests, then trials at the same times and every 2 s after.

use openbench_common::record::{ErrorType, Outcome, TerminalRecord};
use std::time::Duration;
use tokio::sync::watch;
// Tokio's clock (the real one outside tests), so the tests can run the schedule in paused time.
use tokio::time::Instant;

/// The back-off after a lane's first connection-level failure.
pub const BACKOFF_FIRST: Duration = Duration::from_millis(100);
/// The longest back-off between two trials.
pub const BACKOFF_MAX: Duration = Duration::from_secs(2);
/// How long a lane's requests may fail at connection level without a break before it stops.
pub const STOP_AFTER: Duration = Duration::from_secs(3);
/// How many connection-level failures in a row a lane needs, at least, to be stopped.
pub const STOP_AFTER_FAILURES: u32 = 5;
/// How many refusals in a row make a closed-loop lane back off. A provider failing 5 % of its
/// requests at random refuses 16 in a row once in 6.5 × 10²⁰ runs of 16; a saturated
/// provider's 429s between two answers, or a dead one's 500s, reach it at once.
pub const REFUSALS_BEFORE_BACKOFF: u32 = 16;

/// How a send passed the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// The lane is healthy: no condition.
    Free,
    /// The lane backs off, and this send is its one trial.
    Trial,
}

/// Why a lane was stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneStopped {
    /// The lane's label (`provider` or `provider@region`).
    pub lane: String,
    /// Connection-level failures in a row when it stopped.
    pub failures: u32,
    /// How long they lasted, ms.
    pub over_ms: u64,
    /// The last failure's message.
    pub last_error: String,
}

/// What the guard knows of its lane.
#[derive(Debug, Default)]
struct GuardState {
    /// Connection-level failures in a row (0: healthy).
    streak: u32,
    /// When the streak began.
    since: Option<Instant>,
    /// Refusals in a row (counted on a closed-loop lane only).
    refusals: u32,
    /// Trials that failed in this streak (sets the back-off).
    failed_trials: u32,
    /// No send before this instant (back-off).
    retry_at: Option<Instant>,
    /// A trial is in flight: every other slot waits for its outcome.
    trial_in_flight: bool,
    /// Set once the lane is stopped.
    stopped: Option<LaneStopped>,
    /// The phase is over (halted): nobody waits any more.
    closed: bool,
}

impl GuardState {
    /// True while the lane backs off: sends wait for their trial.
    fn backing_off(&self) -> bool {
        self.streak > 0 || self.refusals >= REFUSALS_BEFORE_BACKOFF
    }

    /// Back to healthy: every count and wait cleared, a stop and a close kept.
    fn reset(&mut self) {
        *self = GuardState {
            stopped: self.stopped.take(),
            closed: self.closed,
            ..GuardState::default()
        };
    }

    /// A failure while backing off: a failed trial doubles the wait; the first failure sets it.
    fn back_off(&mut self, pass: Pass, now: Instant) {
        if pass == Pass::Trial {
            self.failed_trials = self.failed_trials.saturating_add(1);
        }
        if pass == Pass::Trial || self.retry_at.is_none() {
            self.retry_at = Some(now + backoff(self.failed_trials));
        }
    }
}

/// One lane's guard, shared by its slots (or its open-loop releases).
#[derive(Debug)]
pub struct LaneGuard {
    lane: String,
    /// Whether refusals hold the lane (a closed loop) or not (an open loop).
    holds_on_refusals: bool,
    state: watch::Sender<GuardState>,
}

/// What one record tells the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// The request never reached the provider.
    ConnectionLevel,
    /// The provider refused it (counted on a closed loop only).
    Refused,
    /// Anything else: the lane works.
    Reached,
}

/// True for a record whose request never reached the provider: a harness record, or a failure
/// with no HTTP status whose type is `connect` or `transport` (refused, reset, unreachable).
/// A timeout, any HTTP status (429 and 5xx included) and any stream failure reached it.
pub fn fails_at_connection_level(record: &TerminalRecord) -> bool {
    match record.outcome {
        Outcome::HarnessError => true,
        Outcome::Completed => false,
        _ => {
            record.http_status.is_none()
                && matches!(
                    record.error_type,
                    Some(ErrorType::Connect | ErrorType::Transport)
                )
        }
    }
}

/// True for a record the provider refused: an HTTP error status (429, any other 4xx, 5xx) or
/// an error event inside a 2xx stream. A closed-loop user sends its next request as soon as such
/// an answer comes back, so a provider refusing everything would be flooded without the guard.
pub fn refused_by_provider(record: &TerminalRecord) -> bool {
    matches!(record.outcome, Outcome::HttpError | Outcome::StreamError)
}

/// The back-off after `failed_trials` failed trials: [`BACKOFF_FIRST`] doubled each time, at
/// most [`BACKOFF_MAX`].
pub fn backoff(failed_trials: u32) -> Duration {
    BACKOFF_FIRST
        .saturating_mul(1u32.checked_shl(failed_trials).unwrap_or(u32::MAX))
        .min(BACKOFF_MAX)
}

impl LaneGuard {
    /// A healthy open-loop lane's guard: only connection-level failures hold it.
    pub fn new(lane: &str) -> LaneGuard {
        LaneGuard {
            lane: lane.to_string(),
            holds_on_refusals: true,
            state: watch::Sender::new(GuardState::default()),
        }
    }

    /// A healthy closed-loop lane's guard: refusals in a row hold it too.
    pub fn closed_loop(lane: &str) -> LaneGuard {
        LaneGuard {
            holds_on_refusals: true,
            ..LaneGuard::new(lane)
        }
    }

    /// Waits until the lane may send: at once while it is healthy; while it backs off, until its
    /// next trial is due and no other trial is in flight. `None` when the lane is stopped or the
    /// phase is closed: send nothing more.
    pub async fn admit(&self) -> Option<Pass> {
        let mut changes = self.state.subscribe();
        loop {
            changes.borrow_and_update();
            let now = Instant::now();
            let mut decision = None;
            let mut wake_at = None;
            self.state.send_if_modified(|s| {
                if s.stopped.is_some() || s.closed {
                    decision = Some(None);
                } else if !s.backing_off() {
                    decision = Some(Some(Pass::Free));
                } else if !s.trial_in_flight {
                    match s.retry_at {
                        Some(at) if at > now => wake_at = Some(at),
                        _ => {
                            s.trial_in_flight = true;
                            decision = Some(Some(Pass::Trial));
                        }
                    }
                }
                false
            });
            if let Some(decision) = decision {
                return decision;
            }
            match wake_at {
                Some(at) => {
                    tokio::select! {
                        _ = changes.changed() => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                None => {
                    if changes.changed().await.is_err() {
                        return None;
                    }
                }
            }
        }
    }

    /// Records the outcome of a send that passed as `pass`.
    pub fn settle(&self, pass: Pass, record: &TerminalRecord) {
        self.settle_at(pass, record, Instant::now());
    }

    fn settle_at(&self, pass: Pass, record: &TerminalRecord, now: Instant) {
        let verdict = if fails_at_connection_level(record) {
            Verdict::ConnectionLevel
        } else if self.holds_on_refusals && refused_by_provider(record) {
            Verdict::Refused
        } else {
            Verdict::Reached
        };
        let lane = &self.lane;
        self.state.send_if_modified(|s| {
            let mut changed = false;
            if pass == Pass::Trial {
                s.trial_in_flight = false;
                changed = true;
            }
            match verdict {
                Verdict::Reached => {
                    if s.streak > 0 || s.refusals > 0 {
                        s.reset();
                        changed = true;
                    }
                    return changed;
                }
                Verdict::Refused => {
                    // It reached the provider: a connection-level streak ends here.
                    if s.streak > 0 {
                        s.reset();
                    }
                    s.refusals = s.refusals.saturating_add(1);
                    if s.refusals == REFUSALS_BEFORE_BACKOFF {
                        tracing::warn!(
                            lane = %lane,
                            refusals = s.refusals,
                            last_status = record.http_status.unwrap_or_default(),
                            "the provider refused every request: the lane backs off"
                        );
                    }
                    if s.refusals >= REFUSALS_BEFORE_BACKOFF {
                        s.back_off(pass, now);
                    }
                    return true;
                }
                Verdict::ConnectionLevel => {
                    if s.refusals > 0 {
                        s.reset();
                    }
                }
            }
            s.streak = s.streak.saturating_add(1);
            let since = *s.since.get_or_insert(now);
            s.back_off(pass, now);
            let over = now.saturating_duration_since(since);
            if s.stopped.is_none() && s.streak >= STOP_AFTER_FAILURES && over >= STOP_AFTER {
                s.stopped = Some(LaneStopped {
                    lane: lane.clone(),
                    failures: s.streak,
                    over_ms: u64::try_from(over.as_millis()).unwrap_or(u64::MAX),
                    last_error: record.error_message.clone().unwrap_or_default(),
                });
            }
            true
        });
    }

    /// Gives back a pass that was not used to send (the phase ended meanwhile): a trial not
    /// sent lets the next slot try.
    pub fn unused(&self, pass: Pass) {
        if pass == Pass::Trial {
            self.state.send_modify(|s| s.trial_in_flight = false);
        }
    }

    /// Closes the guard: every slot waiting in [`LaneGuard::admit`] gets `None` (the phase was
    /// halted).
    pub fn close(&self) {
        self.state.send_modify(|s| s.closed = true);
    }

    /// Why the lane was stopped, if it was.
    pub fn stopped(&self) -> Option<LaneStopped> {
        self.state.borrow().stopped.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    fn record(outcome: Outcome, error: Option<ErrorType>, status: Option<u16>) -> TerminalRecord {
        let mut r = TerminalRecord::new(String::new(), outcome);
        r.error_type = error;
        r.http_status = status;
        r.error_message = error.map(|_| "connection refused".to_string());
        r
    }

    fn refused() -> TerminalRecord {
        record(Outcome::TransportError, Some(ErrorType::Connect), None)
    }

    #[test]
    fn only_failures_that_never_reached_the_provider_count() {
        assert!(fails_at_connection_level(&refused()));
        let reset = record(Outcome::TransportError, Some(ErrorType::Transport), None);
        assert!(fails_at_connection_level(&reset));
        let harness = record(Outcome::HarnessError, Some(ErrorType::Harness), None);
        assert!(fails_at_connection_level(&harness));
        let cut_mid_body = record(
            Outcome::TransportError,
            Some(ErrorType::Transport),
            Some(200),
        );
        assert!(!fails_at_connection_level(&cut_mid_body));
        let limited = record(Outcome::HttpError, Some(ErrorType::Http429), Some(429));
        assert!(!fails_at_connection_level(&limited));
        let held = record(Outcome::Timeout, Some(ErrorType::Timeout), None);
        assert!(!fails_at_connection_level(&held));
        assert!(!fails_at_connection_level(&record(
            Outcome::Completed,
            None,
            Some(200)
        )));
    }

    #[test]
    fn backoff_doubles_from_100_ms_to_at_most_2_s() {
        let ms: Vec<u128> = (0..7).map(|k| backoff(k).as_millis()).collect();
        assert_eq!(ms, [100, 200, 400, 800, 1600, 2000, 2000]);
        assert_eq!(backoff(u32::MAX), BACKOFF_MAX);
    }

    #[tokio::test(start_paused = true)]
    async fn a_dead_lane_trials_alone_with_doubling_waits_then_stops_after_3_s() {
        let guard = LaneGuard::new("p");
        let start = Instant::now();
        // The users' first wave: all free, all refused.
        for _ in 0..4 {
            assert_eq!(guard.admit().await, Some(Pass::Free));
        }
        for _ in 0..4 {
            guard.settle(Pass::Free, &refused());
        }
        // Then one trial at a time, at 0.1, 0.3, 0.7, 1.5 and 3.1 s.
        let mut trials = Vec::new();
        while let Some(pass) = guard.admit().await {
            assert_eq!(pass, Pass::Trial);
            // No second send while the trial is out.
            assert!(
                guard.admit().now_or_never().is_none(),
                "a second send passed"
            );
            trials.push(start.elapsed().as_millis());
            guard.settle(Pass::Trial, &refused());
        }
        assert_eq!(trials, [100, 300, 700, 1500, 3100]);
        let stopped = guard.stopped().unwrap();
        assert_eq!(stopped.failures, 9);
        assert_eq!(stopped.last_error, "connection refused");
    }

    #[tokio::test(start_paused = true)]
    async fn a_trial_that_reaches_the_provider_frees_every_slot_at_once() {
        let guard = std::sync::Arc::new(LaneGuard::new("p"));
        assert_eq!(guard.admit().await, Some(Pass::Free));
        guard.settle(Pass::Free, &refused());
        assert_eq!(guard.admit().await, Some(Pass::Trial));
        let waiting = {
            let guard = guard.clone();
            tokio::spawn(async move { guard.admit().await })
        };
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!waiting.is_finished());
        guard.settle(
            Pass::Trial,
            &record(Outcome::HttpError, Some(ErrorType::Http5xx), Some(503)),
        );
        assert_eq!(waiting.await.unwrap(), Some(Pass::Free));
        assert_eq!(guard.admit().await, Some(Pass::Free));
        assert!(guard.stopped().is_none());
    }

    fn refused_with(status: u16) -> TerminalRecord {
        let error = if status == 429 {
            ErrorType::Http429
        } else {
            ErrorType::Http5xx
        };
        record(Outcome::HttpError, Some(error), Some(status))
    }

    fn answered() -> TerminalRecord {
        record(Outcome::Completed, None, Some(200))
    }

    #[test]
    fn refusals_are_http_errors_and_stream_errors_only() {
        assert!(refused_by_provider(&refused_with(500)));
        assert!(refused_by_provider(&refused_with(429)));
        let in_stream = record(
            Outcome::StreamError,
            Some(ErrorType::StreamError),
            Some(200),
        );
        assert!(refused_by_provider(&in_stream));
        assert!(!refused_by_provider(&answered()));
        assert!(!refused_by_provider(&refused()));
        let held = record(Outcome::Timeout, Some(ErrorType::Timeout), Some(200));
        assert!(!refused_by_provider(&held));
    }

    #[tokio::test(start_paused = true)]
    async fn a_closed_loop_refused_16_times_in_a_row_trials_alone_and_is_never_stopped() {
        let guard = LaneGuard::closed_loop("p");
        let start = Instant::now();
        for _ in 0..REFUSALS_BEFORE_BACKOFF {
            assert_eq!(guard.admit().await, Some(Pass::Free));
            guard.settle(Pass::Free, &refused_with(500));
        }
        let mut trials = Vec::new();
        while start.elapsed() < Duration::from_secs(10) {
            assert_eq!(guard.admit().await, Some(Pass::Trial));
            assert!(
                guard.admit().now_or_never().is_none(),
                "a second send passed"
            );
            trials.push(start.elapsed().as_millis());
            guard.settle(Pass::Trial, &refused_with(500));
        }
        assert_eq!(trials, [100, 300, 700, 1500, 3100, 5100, 7100, 9100, 11100]);
        assert!(guard.stopped().is_none());
        // The first answer frees every slot.
        assert_eq!(guard.admit().await, Some(Pass::Trial));
        guard.settle(Pass::Trial, &answered());
        assert_eq!(guard.admit().now_or_never(), Some(Some(Pass::Free)));
        assert_eq!(guard.admit().now_or_never(), Some(Some(Pass::Free)));
    }

    #[tokio::test(start_paused = true)]
    async fn refusals_broken_by_any_other_outcome_never_hold_the_lane() {
        let guard = LaneGuard::closed_loop("p");
        for other in [
            answered(),
            record(Outcome::Timeout, Some(ErrorType::Timeout), None),
        ] {
            for _ in 0..REFUSALS_BEFORE_BACKOFF - 1 {
                assert_eq!(guard.admit().now_or_never(), Some(Some(Pass::Free)));
                guard.settle(Pass::Free, &refused_with(429));
            }
            guard.settle(Pass::Free, &other);
        }
        assert_eq!(guard.admit().now_or_never(), Some(Some(Pass::Free)));
        // A connection-level failure ends a run of refusals too: 15 refusals, one refused
        // connection (which backs off on its own), one answer, 15 refusals: still free.
        for _ in 0..REFUSALS_BEFORE_BACKOFF - 1 {
            guard.settle(Pass::Free, &refused_with(503));
        }
        guard.settle(Pass::Free, &refused());
        guard.settle(Pass::Free, &answered());
        for _ in 0..REFUSALS_BEFORE_BACKOFF - 1 {
            guard.settle(Pass::Free, &refused_with(503));
        }
        assert_eq!(guard.admit().now_or_never(), Some(Some(Pass::Free)));
    }

    #[tokio::test(start_paused = true)]
    async fn an_open_loop_guard_lets_refusals_through() {
        let guard = LaneGuard::new("p");
        for _ in 0..1000 {
            guard.settle(Pass::Free, &refused_with(429));
        }
        assert_eq!(guard.admit().now_or_never(), Some(Some(Pass::Free)));
    }

    #[tokio::test(start_paused = true)]
    async fn many_failures_at_once_do_not_stop_a_lane_before_3_s() {
        let guard = LaneGuard::new("p");
        for _ in 0..1000 {
            guard.settle(Pass::Free, &refused());
        }
        assert!(guard.stopped().is_none());
        guard.close();
        assert_eq!(guard.admit().await, None);
    }
}
