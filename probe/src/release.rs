//! Timed release of open-loop requests: the probe holds a request until the instant its
//! schedule gives, on the probe's own clock, and the send starts then.
//!
//! Tokio's timer wheel has a 1 ms resolution (a sleep ends on the first tick at or after its
//! deadline, up to a millisecond late), too coarse for a release whose lag must stay under 1 ms
//! at p99. So a release sleeps on the wheel until [`FINE_WINDOW`] before its instant (cheap,
//! no file descriptor held for the long part of the wait), then on a `timerfd` for the rest: the
//! kernel wakes the reactor at the instant asked (nanosecond resolution), and only scheduling
//! delay remains. Should a timerfd not be available (descriptors exhausted), the wheel finishes
//! the wait and the lag says how late the send was; a release is never skipped.

use openbench_common::clock::unix_micros;
use std::time::{Duration, Instant, SystemTime};

/// How long before its instant a release leaves the timer wheel for a timerfd: more than the
/// wheel's 1 ms resolution plus a tick of slack.
pub const FINE_WINDOW: Duration = Duration::from_millis(3);

/// The furthest ahead a release may be when its request reaches the probe: the coordinator
/// sends each request a fraction of a second early, so anything near this is a clock gone wrong,
/// refused rather than held (a held request keeps its lane's place).
pub const MAX_AHEAD: Duration = Duration::from_secs(60);

/// The monotonic instant at which the probe's wall clock reads `release_at_unix_us`, taken
/// against the clocks now; `None` for 0 (send at once). A time already past stays in the past:
/// the request is sent at once and its lag counts from its release, so a release the coordinator
/// handed over late (its lane full at `max_in_flight`, or a slow link) is timed from its
/// schedule, not from when it arrived.
pub fn due_instant(release_at_unix_us: i64) -> Option<Instant> {
    if release_at_unix_us == 0 {
        return None;
    }
    let now = Instant::now();
    let now_us = unix_micros(SystemTime::now());
    let ahead_us = release_at_unix_us.saturating_sub(now_us);
    let offset = Duration::from_micros(ahead_us.unsigned_abs());
    let due = if ahead_us >= 0 {
        now.checked_add(offset)
    } else {
        now.checked_sub(offset)
    };
    Some(due.unwrap_or(now))
}

/// Waits until `due`, returning as close after it as the machine allows (never before).
pub async fn wait_until(due: Instant) {
    if let Some(coarse) = due.checked_sub(FINE_WINDOW)
        && coarse > Instant::now()
    {
        tokio::time::sleep_until(coarse.into()).await;
    }
    if Instant::now() >= due {
        return;
    }
    let fine = match tokio_timerfd::Delay::new(due) {
        Ok(delay) => delay.await.is_ok(),
        Err(_) => false,
    };
    if !fine {
        tokio::time::sleep_until(due.into()).await;
    }
    // A timerfd never fires early; the wheel's fallback neither. Belt and braces for both.
    while Instant::now() < due {
        tokio::task::yield_now().await;
    }
}

/// How late a send starting at `sent` was against `due`, in ms (0 when not late).
pub fn lag_ms(due: Instant, sent: Instant) -> f64 {
    sent.saturating_duration_since(due).as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_future_wall_time_maps_to_the_same_distance_on_the_monotonic_clock() {
        let now_us = unix_micros(SystemTime::now());
        let before = Instant::now();
        let due = due_instant(now_us + 5_000_000).unwrap_or(before);
        let ahead = due.saturating_duration_since(before);
        // 5 s ahead on the wall clock, less the few µs between the two readings.
        assert!(ahead <= Duration::from_secs(5), "{ahead:?}");
        assert!(ahead > Duration::from_secs(4), "{ahead:?}");
    }

    #[tokio::test]
    async fn never_returns_before_its_instant() {
        for micros in [0u64, 200, 2_500, 4_000, 12_345] {
            let due = Instant::now() + Duration::from_micros(micros);
            wait_until(due).await;
            assert!(Instant::now() >= due, "{micros} µs: returned early");
        }
    }

    #[test]
    fn zero_means_at_once_and_a_release_already_past_keeps_its_lateness() {
        // 150 ms past: due 150 ms before now (never clamped to now), so the lag of a send now
        // counts those 150 ms; planted "past is due now" gives a lag near 0.
        let past = unix_micros(SystemTime::now()) - 150_000;
        let due = due_instant(past).unwrap();
        let lag = lag_ms(due, Instant::now());
        assert!(lag >= 149.0, "{lag}");
        // Ahead stays ahead.
        let ahead = due_instant(unix_micros(SystemTime::now()) + 50_000).unwrap();
        assert!(ahead > Instant::now() + Duration::from_millis(40));
        assert_eq!(due_instant(0), None);
    }

    #[test]
    fn lag_is_how_late_in_ms_and_never_negative() {
        let due = Instant::now();
        assert_eq!(lag_ms(due, due + Duration::from_micros(1_500)), 1.5);
        assert_eq!(lag_ms(due + Duration::from_millis(2), due), 0.0);
    }
}
