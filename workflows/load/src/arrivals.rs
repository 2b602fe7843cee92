//! Open-loop arrival schedules: the exact offset, from a step's start, at which each request is
//! due, and which phase (warm-up, measured window, cool-down) it belongs to.
//!
//! - **Constant**: request k is due at k / rate (computed from k, never by summing gaps, so no
//!   rounding drift over a long step).
//! - **Poisson**: the first request at 0, then gaps drawn as −ln(1 − u) / rate from the seeded
//!   stream `(seed, "arrivals", step index)`. Every lane of a step gets the same offsets, so lanes
//!   face the same load at the same moments, as paired rounds do.
//!
//! - **Gamma** (vLLM's `burstiness`): the first request at 0, then gamma gaps of shape b and
//!   scale 1/(rate·b) from the same stream.
//! - **Ramp**: rate r(t) rising linearly from r₀ to r₁ over T seconds, then r₁; with Λ(t) the
//!   cumulative rate, a constant ramp's request k is due at Λ⁻¹(k), a Poisson ramp's at Λ⁻¹ of
//!   unit-rate Poisson arrivals drawn from the stream (the time-rescaling theorem).
//! - **Trace**: each recorded offset × `time_scale`; the offsets end with the file.
//!
//! Offsets are integer nanoseconds (what a runner sleeps on); windows are also given in
//! milliseconds for the metrics, which work in the records' unit.

use crate::rng::Stream;
use crate::spec::{Arrivals, Measure, Phases, Step, StepModel};
use crate::trace::Trace;
use std::sync::Arc;

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

/// The due offsets of an open-loop arrival process: without end, except a trace's.
#[derive(Debug, Clone)]
pub struct Offsets {
    process: Process,
    next_index: u64,
    /// Poisson and gamma: seconds of the next arrival; a Poisson ramp: its unit-rate time.
    at_s: f64,
    stream: Stream,
}

/// What decides each offset.
#[derive(Debug, Clone)]
enum Process {
    Constant { rate_per_s: f64 },
    Poisson { rate_per_s: f64 },
    Gamma { gaps: rand_distr::Gamma<f64> },
    Ramp { ramp: Ramp, poisson: bool },
    Trace { trace: Arc<Trace>, time_scale: f64 },
}

impl Offsets {
    /// The offsets of `arrivals` at `rate_per_s` for step `step_index` of a run seeded `seed`.
    pub fn new(arrivals: Arrivals, rate_per_s: f64, seed: u64, step_index: usize) -> Offsets {
        let process = match arrivals {
            Arrivals::Constant => Process::Constant { rate_per_s },
            Arrivals::Poisson => Process::Poisson { rate_per_s },
        };
        Offsets::of(process, seed, step_index)
    }

    /// The offsets of `step` (`None` for a closed loop, or a trace step without its file).
    pub fn of_step(step: &Step, seed: u64) -> Option<Offsets> {
        let process = match step.model {
            StepModel::Closed { .. } => return None,
            StepModel::Open {
                arrivals,
                rate_per_s,
            } => return Some(Offsets::new(arrivals, rate_per_s, seed, step.index)),
            StepModel::Gamma {
                rate_per_s,
                burstiness,
            } => Process::Gamma {
                gaps: gamma_gaps(rate_per_s, burstiness)?,
            },
            StepModel::Ramp {
                arrivals,
                from_rate_per_s,
                to_rate_per_s,
                ramp_s,
            } => Process::Ramp {
                ramp: Ramp {
                    from_rate_per_s,
                    to_rate_per_s,
                    ramp_s,
                },
                poisson: arrivals == Arrivals::Poisson,
            },
            StepModel::Trace { time_scale } => Process::Trace {
                trace: step.trace.clone()?,
                time_scale,
            },
        };
        Some(Offsets::of(process, seed, step.index))
    }

    fn of(process: Process, seed: u64, step_index: usize) -> Offsets {
        Offsets {
            process,
            next_index: 0,
            at_s: 0.0,
            stream: Stream::derive(seed, &["arrivals", &step_index.to_string()]),
        }
    }
}

/// vLLM `bench serve`'s gaps for `burstiness`: gamma of shape = burstiness and scale =
/// 1 / (rate × burstiness), so the mean gap is 1/rate and its coefficient of variation
/// 1/√burstiness (`None` for a shape or scale the sampler refuses; validation refuses them first).
pub fn gamma_gaps(rate_per_s: f64, burstiness: f64) -> Option<rand_distr::Gamma<f64>> {
    rand_distr::Gamma::new(burstiness, 1.0 / (rate_per_s * burstiness)).ok()
}

impl Iterator for Offsets {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let k = self.next_index;
        self.next_index += 1;
        match &self.process {
            Process::Constant { rate_per_s } => Some(ns(k as f64 / rate_per_s)),
            Process::Poisson { rate_per_s } => {
                let at = self.at_s;
                self.at_s += self.stream.exponential() / rate_per_s;
                Some(ns(at))
            }
            Process::Gamma { gaps } => {
                let at = self.at_s;
                self.at_s += self.stream.sample(gaps);
                Some(ns(at))
            }
            Process::Ramp { ramp, poisson } => {
                // Constant: request k at Λ⁻¹(k). Poisson: unit-rate arrivals (first at 0, then
                // exponential gaps of mean 1) mapped through Λ⁻¹ (the time-rescaling theorem).
                let unit = if *poisson { self.at_s } else { k as f64 };
                if *poisson {
                    self.at_s += self.stream.exponential();
                }
                Some(ns(ramp.inverse_cumulative(unit)))
            }
            Process::Trace { trace, time_scale } => {
                let entry = trace.entries.get(usize::try_from(k).ok()?)?;
                Some((entry.offset_ns as f64 * time_scale).round() as u64)
            }
        }
    }
}

/// A rate rising (or falling) linearly from `from` at 0 to `to` at `ramp_s`, then constant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ramp {
    /// Rate at 0, per second.
    pub from_rate_per_s: f64,
    /// Rate from `ramp_s` on.
    pub to_rate_per_s: f64,
    /// Length of the ramp, seconds.
    pub ramp_s: f64,
}

impl Ramp {
    /// Λ(t), the expected arrivals by `t` seconds: r₀t + (r₁ − r₀)t²/(2T) up to T, then
    /// Λ(T) + r₁(t − T).
    pub fn cumulative(&self, t: f64) -> f64 {
        let (r0, r1, big_t) = (self.from_rate_per_s, self.to_rate_per_s, self.ramp_s);
        if t <= big_t {
            r0 * t + (r1 - r0) * t * t / (2.0 * big_t)
        } else {
            (r0 + r1) * big_t / 2.0 + r1 * (t - big_t)
        }
    }

    /// Λ⁻¹(y), seconds: on the ramp the root of a·t² + r₀·t − y = 0 (a = (r₁ − r₀)/(2T)),
    /// written 2y / (r₀ + √(r₀² + 4ay)) so it holds for a rising, falling or flat ramp and for
    /// r₀ = 0; past the ramp T + (y − Λ(T))/r₁.
    pub fn inverse_cumulative(&self, y: f64) -> f64 {
        let (r0, r1, big_t) = (self.from_rate_per_s, self.to_rate_per_s, self.ramp_s);
        if y <= 0.0 {
            return 0.0;
        }
        let at_end = (r0 + r1) * big_t / 2.0;
        if y <= at_end {
            let a = (r1 - r0) / (2.0 * big_t);
            2.0 * y / (r0 + (r0 * r0 + 4.0 * a * y).max(0.0).sqrt())
        } else {
            big_t + (y - at_end) / r1
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
