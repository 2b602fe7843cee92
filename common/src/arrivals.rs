//! Open-loop arrival processes: the exact offset, from a phase's start, at which each request is
//! due — what a workflow turns into [`crate::schedule::Pacing::Releases`] offsets. The load
//! workflow's steps and any other workflow's open-loop phases draw them here, so one generator
//! serves the repository.
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
//! - **Recorded** (a trace): each recorded offset × `time_scale`; the offsets end with the record.
//!
//! Offsets are integer nanoseconds (what a runner sleeps on).

use crate::rng::Stream;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Nanoseconds per second.
const NS_PER_S: f64 = 1e9;

/// Open-loop arrival process of a saturation search or a ramp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Even gaps.
    Constant,
    /// Seeded exponential gaps.
    Poisson,
}

impl Arrivals {
    /// The process's name in a load label (`constant`, `poisson`).
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Constant => "constant",
            Arrivals::Poisson => "poisson",
        }
    }

    /// The load label of this process at `rate_per_s` (`constant 100/s`): what a phase's
    /// telemetry names its load.
    pub fn label(self, rate_per_s: f64) -> String {
        format!("{} {rate_per_s}/s", self.name())
    }
}

/// Recorded due offsets (a trace file's), read by index; the process ends at the first index
/// without one.
pub trait RecordedOffsets: std::fmt::Debug + Send + Sync {
    /// The `index`-th recorded offset, nanoseconds from the start; `None` past the end.
    fn offset_ns(&self, index: usize) -> Option<u64>;
}

/// Seconds to nanoseconds, rounded; negative and non-finite values give 0 (validation refuses
/// them before a schedule is built).
pub fn seconds_to_ns(seconds: f64) -> u64 {
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
    Constant {
        rate_per_s: f64,
    },
    Poisson {
        rate_per_s: f64,
    },
    Gamma {
        gaps: rand_distr::Gamma<f64>,
    },
    Ramp {
        ramp: Ramp,
        poisson: bool,
    },
    Recorded {
        offsets: Arc<dyn RecordedOffsets>,
        time_scale: f64,
    },
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

    /// Gamma gaps (`gamma_gaps`) for step `step_index` of a run seeded `seed`.
    pub fn gamma(gaps: rand_distr::Gamma<f64>, seed: u64, step_index: usize) -> Offsets {
        Offsets::of(Process::Gamma { gaps }, seed, step_index)
    }

    /// A rate `ramp`, even (`poisson` false) or Poisson, for step `step_index` of a run seeded
    /// `seed`.
    pub fn ramp(ramp: Ramp, poisson: bool, seed: u64, step_index: usize) -> Offsets {
        Offsets::of(Process::Ramp { ramp, poisson }, seed, step_index)
    }

    /// `offsets` as recorded, each × `time_scale`, for step `step_index` of a run seeded `seed`.
    pub fn recorded(
        offsets: Arc<dyn RecordedOffsets>,
        time_scale: f64,
        seed: u64,
        step_index: usize,
    ) -> Offsets {
        Offsets::of(
            Process::Recorded {
                offsets,
                time_scale,
            },
            seed,
            step_index,
        )
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
            Process::Constant { rate_per_s } => Some(seconds_to_ns(k as f64 / rate_per_s)),
            Process::Poisson { rate_per_s } => {
                let at = self.at_s;
                self.at_s += self.stream.exponential() / rate_per_s;
                Some(seconds_to_ns(at))
            }
            Process::Gamma { gaps } => {
                let at = self.at_s;
                self.at_s += self.stream.sample(gaps);
                Some(seconds_to_ns(at))
            }
            Process::Ramp { ramp, poisson } => {
                // Constant: request k at Λ⁻¹(k). Poisson: unit-rate arrivals (first at 0, then
                // exponential gaps of mean 1) mapped through Λ⁻¹ (the time-rescaling theorem).
                let unit = if *poisson { self.at_s } else { k as f64 };
                if *poisson {
                    self.at_s += self.stream.exponential();
                }
                Some(seconds_to_ns(ramp.inverse_cumulative(unit)))
            }
            Process::Recorded {
                offsets,
                time_scale,
            } => {
                let offset_ns = offsets.offset_ns(usize::try_from(k).ok()?)?;
                Some((offset_ns as f64 * time_scale).round() as u64)
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
