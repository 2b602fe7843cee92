//! A load step's arrival schedule: which phase (warm-up, measured window, cool-down) each request
//! belongs to, and the due offsets of an open-loop step, drawn from the shared arrival processes
//! (`openbench_common::arrivals`: constant, Poisson, gamma, ramp, recorded) with the stream
//! `(seed, "arrivals", step index)`.
//!
//! Offsets are integer nanoseconds (what a runner sleeps on); windows are also given in
//! milliseconds for the metrics, which work in the records' unit.

use crate::spec::{Measure, Phases, Step, StepModel};
use crate::trace::Trace;
use std::sync::Arc;

use openbench_common::arrivals::Arrivals;
use openbench_common::arrivals::seconds_to_ns as ns;
pub use openbench_common::arrivals::{Offsets, Ramp, RecordedOffsets, gamma_gaps};
#[cfg(test)]
use openbench_common::rng::Stream;

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

/// The offsets of a load step.
pub trait StepOffsets {
    /// The offsets of `step` (`None` for a closed loop, or a trace step without its file).
    fn of_step(step: &Step, seed: u64) -> Option<Offsets>;
}

impl StepOffsets for Offsets {
    fn of_step(step: &Step, seed: u64) -> Option<Offsets> {
        Some(match step.model {
            StepModel::Closed { .. } => return None,
            StepModel::Open {
                arrivals,
                rate_per_s,
            } => Offsets::new(arrivals, rate_per_s, seed, step.index),
            StepModel::Gamma {
                rate_per_s,
                burstiness,
            } => Offsets::gamma(gamma_gaps(rate_per_s, burstiness)?, seed, step.index),
            StepModel::Ramp {
                arrivals,
                from_rate_per_s,
                to_rate_per_s,
                ramp_s,
            } => Offsets::ramp(
                Ramp {
                    from_rate_per_s,
                    to_rate_per_s,
                    ramp_s,
                },
                arrivals == Arrivals::Poisson,
                seed,
                step.index,
            ),
            StepModel::Trace { time_scale } => {
                let trace: Arc<Trace> = step.trace.clone()?;
                Offsets::recorded(trace, time_scale, seed, step.index)
            }
        })
    }
}

impl RecordedOffsets for Trace {
    fn offset_ns(&self, index: usize) -> Option<u64> {
        self.entries.get(index).map(|entry| entry.offset_ns)
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
        let offsets = Offsets::of_step(step, seed)?;
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
/// ends at the due time of the first request past the count (a trace too short for the count
/// ends it 1 ns after its last request, so every request from the warm-up's end on is measured).
fn open_window(phases: &Phases, offsets: Offsets) -> Window {
    let start_ns = ns(phases.warmup_s);
    let end_ns = match phases.measure {
        Measure::DurationS(d) => start_ns + ns(d),
        Measure::Requests(n) => {
            let mut end = start_ns;
            let after = offsets.filter(|&o| o >= start_ns).take(n as usize + 1);
            for (i, o) in after.enumerate() {
                end = if i == n as usize { o } else { o + 1 };
            }
            end
        }
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

#[cfg(test)]
#[path = "arrivals_shapes_tests.rs"]
mod shapes_tests;
