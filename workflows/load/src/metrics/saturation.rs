//! Which steps a lane sustained, its saturation point, and the next rate of a saturation search.
//!
//! A step is **sustained** when its achieved rate is at least the sustain fraction (0.95) of its
//! target and its goodput fraction is at least the spec's threshold (0.9). A closed-loop step has
//! no target, so only its goodput decides. The **saturation point** is the highest step (by
//! target rate, or by concurrency for closed loops) that was sustained (METHODOLOGY §9).

use super::StepMetrics;
use crate::spec::SaturationSearch;

/// What the rule needs from one step of one lane.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepResult {
    /// The step's load: its target rate, or its concurrency for a closed loop.
    pub load: f64,
    /// Target rate per second (`None` for a closed loop).
    pub target_per_s: Option<f64>,
    /// Achieved rate per second.
    pub achieved_per_s: f64,
    /// Goodput fraction.
    pub goodput_fraction: f64,
}

impl StepResult {
    /// The rule's view of a step's metrics; `load` is the step's rate or concurrency.
    pub fn of(load: f64, metrics: &StepMetrics) -> StepResult {
        StepResult {
            load,
            target_per_s: metrics.rate.target_per_s,
            achieved_per_s: metrics.rate.achieved_per_s,
            goodput_fraction: metrics.goodput.fraction,
        }
    }

    /// True when the step kept its rate and its goodput.
    pub fn is_sustained(&self, sustain_fraction: f64, goodput_threshold: f64) -> bool {
        let rate_kept = self
            .target_per_s
            .is_none_or(|t| self.achieved_per_s >= sustain_fraction * t);
        rate_kept && self.goodput_fraction >= goodput_threshold
    }
}

/// The index of the saturation point among `steps`: the sustained step with the highest load
/// (the first of equal loads); `None` when no step was sustained.
pub fn saturation_point(
    steps: &[StepResult],
    sustain_fraction: f64,
    goodput_threshold: f64,
) -> Option<usize> {
    steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_sustained(sustain_fraction, goodput_threshold))
        .fold(None, |best: Option<(usize, f64)>, (i, s)| match best {
            Some((_, load)) if load >= s.load => best,
            _ => Some((i, s.load)),
        })
        .map(|(i, _)| i)
}

/// The rate of the next step of a saturation search, given the (rate, sustained) of the steps
/// run so far in order; `None` when the search is over.
///
/// Ramp: start, then × growth each step, the last one clamped to the maximum, while every step
/// is sustained. After the first step that is not, `refine_steps` bisections: each runs the
/// midpoint between the highest sustained rate below the lowest unsustained one and that one.
/// A search whose first step already fails ends there (the provider saturates below `start`).
pub fn next_rate(search: &SaturationSearch, history: &[(f64, bool)]) -> Option<f64> {
    let Some(first_fail) = history.iter().position(|(_, ok)| !ok) else {
        let Some(&(last, _)) = history.last() else {
            return Some(search.start_rate_per_s);
        };
        if last >= search.max_rate_per_s {
            return None;
        }
        return Some((last * search.growth).min(search.max_rate_per_s));
    };
    let bisections_done = history.len() - first_fail - 1;
    if bisections_done >= search.refine_steps as usize {
        return None;
    }
    let lowest_fail = history
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(r, _)| *r)
        .fold(f64::INFINITY, f64::min);
    let best_ok = history
        .iter()
        .filter(|(r, ok)| *ok && *r < lowest_fail)
        .map(|(r, _)| *r)
        .fold(None, |acc: Option<f64>, r| {
            Some(acc.map_or(r, |a| a.max(r)))
        })?;
    Some((best_ok + lowest_fail) / 2.0)
}
