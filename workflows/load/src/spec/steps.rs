//! A sweep expanded into steps: what each step runs, in order.

use super::{Arrivals, LoadModel, LoadSection, Phases};
use crate::trace::{Trace, Traces};
use std::sync::Arc;

/// The load of one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepModel {
    /// `concurrency` users per lane, each sending the next request when one ends.
    Closed {
        /// Users per lane.
        concurrency: u32,
    },
    /// Requests released on a schedule, whatever the server does.
    Open {
        /// Gap process.
        arrivals: Arrivals,
        /// Target requests per second per lane.
        rate_per_s: f64,
    },
    /// Open loop with gamma-distributed gaps (vLLM's `burstiness`).
    Gamma {
        /// Mean requests per second per lane.
        rate_per_s: f64,
        /// Gamma shape.
        burstiness: f64,
    },
    /// Open loop whose rate rises linearly, then stays.
    Ramp {
        /// Even or Poisson arrivals along the ramp.
        arrivals: Arrivals,
        /// Rate at the step's start.
        from_rate_per_s: f64,
        /// Rate from `ramp_s` on.
        to_rate_per_s: f64,
        /// Length of the ramp, seconds.
        ramp_s: f64,
    },
    /// Open loop replaying the step's trace ([`Step::trace`]), its offsets × `time_scale`.
    Trace {
        /// Multiplier of every recorded offset.
        time_scale: f64,
    },
}

impl StepModel {
    /// The nominal rate of an open-loop step (a ramp's final rate; a trace has none: its
    /// target is what it plans in the window); a closed loop has none (its rate is an outcome).
    pub fn target_rate(&self) -> Option<f64> {
        match self {
            StepModel::Closed { .. } | StepModel::Trace { .. } => None,
            StepModel::Open { rate_per_s, .. } | StepModel::Gamma { rate_per_s, .. } => {
                Some(*rate_per_s)
            }
            StepModel::Ramp { to_rate_per_s, .. } => Some(*to_rate_per_s),
        }
    }

    /// True for every model released on a schedule (everything but a closed loop).
    pub fn is_open(&self) -> bool {
        !matches!(self, StepModel::Closed { .. })
    }

    /// A short label for tables: `closed c=4`, `constant 2.5/s`, `poisson 8/s`,
    /// `gamma 8/s b=0.5`, `ramp poisson 1→8/s in 30s`, `trace ×0.5`.
    pub fn label(&self) -> String {
        match self {
            StepModel::Closed { concurrency } => format!("closed c={concurrency}"),
            StepModel::Open {
                arrivals,
                rate_per_s,
            } => arrivals.label(*rate_per_s),
            StepModel::Gamma {
                rate_per_s,
                burstiness,
            } => format!("gamma {rate_per_s}/s b={burstiness}"),
            StepModel::Ramp {
                arrivals,
                from_rate_per_s,
                to_rate_per_s,
                ramp_s,
            } => format!(
                "ramp {} {from_rate_per_s}→{to_rate_per_s}/s in {ramp_s}s",
                arrivals.name()
            ),
            StepModel::Trace { time_scale } => format!("trace ×{time_scale}"),
        }
    }
}

impl From<&LoadModel> for StepModel {
    fn from(model: &LoadModel) -> StepModel {
        match *model {
            LoadModel::Closed { concurrency, .. } => StepModel::Closed { concurrency },
            LoadModel::Constant { rate_per_s, .. } => StepModel::Open {
                arrivals: Arrivals::Constant,
                rate_per_s,
            },
            LoadModel::Poisson { rate_per_s, .. } => StepModel::Open {
                arrivals: Arrivals::Poisson,
                rate_per_s,
            },
            LoadModel::Gamma {
                rate_per_s,
                burstiness,
            } => StepModel::Gamma {
                rate_per_s,
                burstiness,
            },
            LoadModel::Ramp {
                arrivals,
                from_rate_per_s,
                to_rate_per_s,
                ramp_s,
            } => StepModel::Ramp {
                arrivals,
                from_rate_per_s,
                to_rate_per_s,
                ramp_s,
            },
            LoadModel::Trace { time_scale, .. } => StepModel::Trace { time_scale },
        }
    }
}

/// One step of a run: its position, its load and its phases.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// 0-based position in the run (also a label of its seeded arrival stream).
    pub index: usize,
    /// The load.
    pub model: StepModel,
    /// Warm-up, measured window, cool-down.
    pub phases: Phases,
    /// A `trace` step's file, read (`None` for every other model).
    pub trace: Option<Arc<Trace>>,
    /// Which pass over the sweep this is, when `load.repeats` asks for several; `None` for a
    /// run made once (its steps keep their phases and names).
    pub repeat: Option<RepeatOf>,
}

/// A step's place among the repeats of a sweep (`load.repeats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RepeatOf {
    /// The step as written: its position in `load.steps`.
    pub step: usize,
    /// 0-based pass over the sweep.
    pub repeat: u32,
    /// Passes in all.
    pub of: u32,
}

impl Step {
    /// The step as written in `load.steps` (its ramp, conversations and trace file): `index`
    /// unless the sweep is repeated.
    pub fn written(&self) -> usize {
        self.repeat.map_or(self.index, |r| r.step)
    }
}

impl LoadSection {
    /// The steps of a `steps:` sweep, in the order written, each `trace` step with its file from
    /// `traces` (read by [`crate::trace::read_traces`]). A saturation search has no fixed list:
    /// its steps come one at a time from [`crate::metrics::saturation::next_rate`].
    ///
    /// With `repeats: N` the sweep runs N passes: pass r's step s is the run's step (phase)
    /// r × S + s of the S written, and that index labels every seeded stream it draws from
    /// (arrivals, prompts, conversations), so each repeat has its own schedule, fixed by the
    /// seed, and pass 0 is the run made once.
    pub fn sweep_steps(&self, traces: &Traces) -> Vec<Step> {
        let of = self.repeat_count();
        let written = self.steps.len();
        (0..of)
            .flat_map(|repeat| {
                self.steps.iter().enumerate().map(move |(s, model)| Step {
                    index: repeat as usize * written + s,
                    model: StepModel::from(model),
                    phases: self.phases.clone(),
                    trace: traces.get(&s).cloned(),
                    repeat: (of > 1).then_some(RepeatOf {
                        step: s,
                        repeat,
                        of,
                    }),
                })
            })
            .collect()
    }

    /// The step a saturation search runs at `rate_per_s`, as its `index`-th step.
    pub fn saturation_step(&self, index: usize, rate_per_s: f64) -> Option<Step> {
        let search = self.saturation.as_ref()?;
        Some(Step {
            index,
            model: StepModel::Open {
                arrivals: search.arrivals,
                rate_per_s,
            },
            phases: self.phases.clone(),
            trace: None,
            repeat: None,
        })
    }
}
