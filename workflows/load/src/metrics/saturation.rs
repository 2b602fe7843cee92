//! Which steps a lane sustained, its saturation point, and the next rate of a saturation search.
//!
//! A step is **sustained** when it kept its rate (the rate verdict is `on_target`: the client
//! sent, and the server completed, at least the sustain fraction (0.95) of the target's measured
//! requests), its goodput fraction is at least the spec's threshold (0.9), and its answers did
//! not mostly fall short of a held output length. A closed-loop step has no target, so only its
//! goodput (and held length) decides. This is the one definition: `StepMetrics::sustained`, the
//! reports, `compare` and the saturation search all read it. The **saturation point** is the highest step (by
//! target rate, or by concurrency for closed loops) that was sustained (METHODOLOGY §9).

use super::{RateVerdict, StepMetrics};
use crate::spec::SaturationSearch;

/// What the rule needs from one step of one lane.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepResult {
    /// The step's load: its target rate, or its concurrency for a closed loop.
    pub load: f64,
    /// The rate was kept: on target, or no target (a closed loop).
    pub rate_kept: bool,
    /// Goodput fraction.
    pub goodput_fraction: f64,
    /// Most answers fell short of a held output length.
    pub held_length_flagged: bool,
}

impl StepResult {
    /// The rule's view of a step's metrics; `load` is the step's rate or concurrency.
    pub fn of(load: f64, metrics: &StepMetrics) -> StepResult {
        StepResult {
            load,
            rate_kept: rate_kept(metrics.rate.verdict),
            goodput_fraction: metrics.goodput.fraction,
            held_length_flagged: metrics.held_length.as_ref().is_some_and(|h| h.flagged),
        }
    }

    /// True when the step kept its rate and its goodput on answers of the length asked.
    pub fn is_sustained(&self, goodput_threshold: f64) -> bool {
        self.rate_kept && self.goodput_fraction >= goodput_threshold && !self.held_length_flagged
    }
}

/// Whether a rate verdict keeps the rate: on target, or a closed loop's no target.
pub fn rate_kept(verdict: RateVerdict) -> bool {
    matches!(verdict, RateVerdict::OnTarget | RateVerdict::NoTarget)
}

/// The index of the saturation point among `steps`: the sustained step with the highest load
/// (the first of equal loads); `None` when no step was sustained.
pub fn saturation_point(steps: &[StepResult], goodput_threshold: f64) -> Option<usize> {
    steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_sustained(goodput_threshold))
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
