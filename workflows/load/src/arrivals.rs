//! Open-loop arrival schedules: the exact offset, from a step's start, at which each request is
//! due, and which phase (warm-up, measured window, cool-down) it belongs to.
//!
//! - **Constant**: request k is due at k / rate (computed from k, never by summing gaps, so no
//!   rounding drift over a long step).
//! - **Poisson**: the first request at 0, then gaps drawn as −ln(1 − u) / rate from the seeded
//!   stream `(seed, "arrivals", step index)`. Every lane of a step gets the same offsets, so lanes
//!   face the same load at the same moments, as paired rounds do.
//!
//! Offsets are integer nanoseconds (what a runner sleeps on); windows are also given in
//! milliseconds for the metrics, which work in the records' unit.

use crate::rng::Stream;
use crate::spec::{Arrivals, Measure, Phases, Step, StepModel};

/// Nanoseconds per second.
const NS_PER_S: f64 = 1e9;

/// Which part of a step a request belongs to. Only `Measured` requests count in metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Before the measured window.
    Warmup,
    /// Scheduled (open loop) or sent (closed loop) inside the measured window.
    Measured,
    /// After the window, while measured requests finish under the same load.
    Cooldown,
}

/// A step's measured window and the end of its load, in nanoseconds from the step's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First instant of the window (the end of the warm-up).
    pub start_ns: u64,
    /// First instant after the window.
    pub end_ns: u64,
    /// No request is released at or after this (the end of the cool-down).
    pub load_end_ns: u64,
}

impl Window {
    /// True when `at_ms` (an offset from the step's start, as a record gives it) falls in
    /// [start, end). Compared in whole nanoseconds, rounded as [`ms_to_ns`] rounds the sends a
    /// count window is taken from, so the send that closed the window is never inside it (in
    /// milliseconds the two can differ by a rounding step either way).
    pub fn contains_ms(&self, at_ms: f64) -> bool {
        let at = ms_to_ns(at_ms);
        at >= self.start_ns && at < self.end_ns
    }

    /// True when `at_ms` is before the window's end, compared as [`Window::contains_ms`] does.
    pub fn before_end_ms(&self, at_ms: f64) -> bool {
        ms_to_ns(at_ms) < self.end_ns
    }

    /// The phase of a request due (open loop) or sent (closed loop) at `offset_ns`; `None` when
    /// it falls after the load ends.
    pub fn phase_of(&self, offset_ns: u64) -> Option<Phase> {
        if offset_ns < self.start_ns {
            Some(Phase::Warmup)
        } else if offset_ns < self.end_ns {
            Some(Phase::Measured)
        } else if offset_ns < self.load_end_ns {
            Some(Phase::Cooldown)
        } else {
            None
        }
    }

    /// Window start in milliseconds.
    pub fn start_ms(&self) -> f64 {
        self.start_ns as f64 / 1e6
    }

    /// Window end in milliseconds.
    pub fn end_ms(&self) -> f64 {
        self.end_ns as f64 / 1e6
    }

    /// Window length in seconds.
    pub fn length_s(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / NS_PER_S
    }
}

/// Seconds to nanoseconds, rounded; negative and non-finite values give 0 (validation refuses
/// them before a schedule is built).
fn ns(seconds: f64) -> u64 {
    if seconds.is_finite() && seconds > 0.0 {
        (seconds * NS_PER_S).round() as u64
    } else {
        0
    }
}

/// The due offsets of an open-loop arrival process, without end.
#[derive(Debug, Clone)]
pub struct Offsets {
    arrivals: Arrivals,
    rate_per_s: f64,
    next_index: u64,
    /// Poisson only: seconds of the next arrival and the gap stream.
    poisson_at_s: f64,
    stream: Stream,
}

impl Offsets {
    /// The offsets of `arrivals` at `rate_per_s` for step `step_index` of a run seeded `seed`.
    pub fn new(arrivals: Arrivals, rate_per_s: f64, seed: u64, step_index: usize) -> Offsets {
        Offsets {
            arrivals,
            rate_per_s,
            next_index: 0,
            poisson_at_s: 0.0,
            stream: Stream::derive(seed, &["arrivals", &step_index.to_string()]),
        }
    }
}

impl Iterator for Offsets {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let k = self.next_index;
        self.next_index += 1;
        match self.arrivals {
            Arrivals::Constant => Some(ns(k as f64 / self.rate_per_s)),
            Arrivals::Poisson => {
                let at = self.poisson_at_s;
                self.poisson_at_s += self.stream.exponential() / self.rate_per_s;
                Some(ns(at))
            }
        }
    }
}

/// One request of an open-loop step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    /// 0-based position in the step.
    pub index: u64,
    /// Due time from the step's start, nanoseconds (the scheduled send).
    pub offset_ns: u64,
    /// Its phase.
    pub phase: Phase,
}

/// The full schedule of an open-loop step: its window and every release in order.
#[derive(Debug, Clone)]
pub struct OpenSchedule {
    offsets: Offsets,
    window: Window,
}

impl OpenSchedule {
    /// The schedule of `step` (`None` for a closed-loop step, which has no schedule). With a
    /// count window (`measure: {requests: n}`), the measured requests are the first n due at or
    /// after the warm-up and the window ends when the next one is due.
    pub fn new(step: &Step, seed: u64) -> Option<OpenSchedule> {
        let StepModel::Open {
            arrivals,
            rate_per_s,
        } = step.model
        else {
            return None;
        };
        let offsets = Offsets::new(arrivals, rate_per_s, seed, step.index);
        let window = open_window(&step.phases, offsets.clone());
        Some(OpenSchedule { offsets, window })
    }

    /// The measured window and the end of the load.
    pub fn window(&self) -> Window {
        self.window
    }

    /// Every release, warm-up to cool-down, in due order.
    pub fn releases(&self) -> impl Iterator<Item = Release> + '_ {
        let window = self.window;
        self.offsets
            .clone()
            .enumerate()
            .map_while(move |(index, offset_ns)| {
                window.phase_of(offset_ns).map(|phase| Release {
                    index: index as u64,
                    offset_ns,
                    phase,
                })
            })
    }
}

/// The window of an open-loop step: a duration window is fixed by the phases; a count window
/// ends at the due time of the first request past the count.
fn open_window(phases: &Phases, offsets: Offsets) -> Window {
    let start_ns = ns(phases.warmup_s);
    let end_ns = match phases.measure {
        Measure::DurationS(d) => start_ns + ns(d),
        Measure::Requests(n) => offsets
            .filter(|&o| o >= start_ns)
            .nth(n as usize)
            .unwrap_or(start_ns),
    };
    Window {
        start_ns,
        end_ns,
        load_end_ns: end_ns + ns(phases.cooldown_s),
    }
}

/// Milliseconds (a record's offset) to whole nanoseconds, rounded; negative or non-finite give 0.
pub fn ms_to_ns(ms: f64) -> u64 {
    if ms.is_finite() && ms > 0.0 {
        (ms * 1e6).round() as u64
    } else {
        0
    }
}

/// The window of a closed-loop step. A duration window is fixed by the phases; a count window
/// (`requests: n`) ends at the first send after the n-th send at or after the warm-up, which only
/// the run knows: pass the sends so far (offsets from the step's start, in send order) and get
/// `None` until that send has happened. That closing send is itself sent (the cool-down's first;
/// with no cool-down, at the load's end).
pub fn closed_window(phases: &Phases, sends_ns: &[u64]) -> Option<Window> {
    let start_ns = ns(phases.warmup_s);
    let end_ns = match phases.measure {
        Measure::DurationS(d) => start_ns + ns(d),
        Measure::Requests(n) => *sends_ns
            .iter()
            .filter(|&&o| o >= start_ns)
            .nth(n as usize)?,
    };
    Some(Window {
        start_ns,
        end_ns,
        load_end_ns: end_ns + ns(phases.cooldown_s),
    })
}

#[cfg(test)]
#[path = "arrivals_tests.rs"]
mod tests;
