//! A sweep expanded into steps: what each step runs, in order.

use super::{Arrivals, LoadModel, LoadSection, Phases};

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
}

impl StepModel {
    /// The target rate of an open-loop step; a closed loop has none (its rate is an outcome).
    pub fn target_rate(&self) -> Option<f64> {
        match self {
            StepModel::Closed { .. } => None,
            StepModel::Open { rate_per_s, .. } => Some(*rate_per_s),
        }
    }

    /// A short label for tables: `closed c=4`, `constant 2.5/s`, `poisson 8/s`.
    pub fn label(&self) -> String {
        match self {
            StepModel::Closed { concurrency } => format!("closed c={concurrency}"),
            StepModel::Open {
                arrivals: Arrivals::Constant,
                rate_per_s,
            } => format!("constant {rate_per_s}/s"),
            StepModel::Open {
                arrivals: Arrivals::Poisson,
                rate_per_s,
            } => format!("poisson {rate_per_s}/s"),
        }
    }
}

impl From<&LoadModel> for StepModel {
    fn from(model: &LoadModel) -> StepModel {
        match *model {
            LoadModel::Closed { concurrency } => StepModel::Closed { concurrency },
            LoadModel::Constant { rate_per_s } => StepModel::Open {
                arrivals: Arrivals::Constant,
                rate_per_s,
            },
            LoadModel::Poisson { rate_per_s } => StepModel::Open {
                arrivals: Arrivals::Poisson,
                rate_per_s,
            },
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
}

impl LoadSection {
    /// The steps of a `steps:` sweep, in the order written. A saturation search has no fixed
    /// list: its steps come one at a time from [`crate::metrics::saturation::next_rate`].
    pub fn sweep_steps(&self) -> Vec<Step> {
        self.steps
            .iter()
            .enumerate()
            .map(|(index, model)| Step {
                index,
                model: StepModel::from(model),
                phases: self.phases.clone(),
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
        })
    }
}
