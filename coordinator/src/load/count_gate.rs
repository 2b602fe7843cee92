//! The end of a closed loop run to a count (`Pacing::UsersToCount`): every slot of every lane of
//! the phase asks the one gate before it sends, and the gate counts the sends at or after the
//! warm-up, lets the send after the last counted one through as the one that closes the count,
//! then lets sends through for the cool-down and refuses every later one.
//!
//! The instant a send is admitted is taken under the gate's lock and is the instant the record
//! carries as its send (`sent_offset_ms`), so the order the gate counted in is the order of the
//! records' sends, and the window the report rebuilds from them (`closed_window` of the load
//! workflow) is the one the gate closed.

use openbench_common::schedule::Pacing;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The gate of a phase run to a count (`None` for any other pacing), counting from `start`.
pub(crate) fn for_pacing(pacing: &Pacing, start: Instant) -> Option<Arc<CountGate>> {
    let Pacing::UsersToCount {
        from_ms,
        requests,
        cooldown_ms,
        ..
    } = pacing
    else {
        return None;
    };
    let millis = |ms: f64| Duration::try_from_secs_f64(ms.max(0.0) / 1000.0).unwrap_or_default();
    let from = start.checked_add(millis(*from_ms)).unwrap_or(start);
    Some(Arc::new(CountGate::new(
        from,
        *requests,
        millis(*cooldown_ms),
    )))
}

/// The shared count of one closed-loop phase.
#[derive(Debug)]
pub struct CountGate {
    /// Sends before this instant are warm-up, not counted.
    from: Instant,
    /// Counted sends before the closing one.
    requests: u64,
    /// How long sends go on after the closing one.
    cooldown: Duration,
    state: Mutex<GateState>,
}

#[derive(Debug, Default)]
struct GateState {
    /// Sends counted so far (at most `requests`).
    counted: u64,
    /// Set by the closing send: no send is admitted at or after it.
    load_end: Option<Instant>,
}

impl CountGate {
    /// A gate counting from `from` (the end of the warm-up), closing after `requests` counted
    /// sends, then letting sends through for `cooldown`.
    pub fn new(from: Instant, requests: u64, cooldown: Duration) -> CountGate {
        CountGate {
            from,
            requests,
            cooldown,
            state: Mutex::new(GateState::default()),
        }
    }

    /// The instant of a send admitted now, or `None` once the cool-down is over (the slot
    /// stops).
    pub fn admit(&self) -> Option<Instant> {
        // The state stays consistent whatever a panicking holder did: each update is one field.
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match state.load_end {
            Some(end) if now >= end => return None,
            Some(_) => return Some(now),
            None => {}
        }
        if now >= self.from {
            if state.counted < self.requests {
                state.counted += 1;
            } else {
                state.load_end = Some(now + self.cooldown);
            }
        }
        Some(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_send_after_the_count_closes_it_and_the_cooldown_ends_the_load() {
        // Warm-up already over (from = now), two counted sends, no cool-down: the third send
        // closes the count and is still sent; every later one is refused.
        let gate = CountGate::new(Instant::now(), 2, Duration::ZERO);
        let sends: Vec<bool> = (0..5).map(|_| gate.admit().is_some()).collect();
        assert_eq!(sends, [true, true, true, false, false]);
    }

    #[test]
    fn warm_up_sends_are_not_counted() {
        // The warm-up lasts an hour: nothing is counted, so the gate never closes.
        let gate = CountGate::new(
            Instant::now() + Duration::from_secs(3600),
            1,
            Duration::ZERO,
        );
        assert!((0..10).all(|_| gate.admit().is_some()));
    }

    #[test]
    fn sends_go_on_through_the_cooldown() {
        let gate = CountGate::new(Instant::now(), 1, Duration::from_secs(3600));
        assert!((0..10).all(|_| gate.admit().is_some()));
    }
}
