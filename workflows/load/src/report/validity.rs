//! The load run's validity section (docs/validity.md): send lag of every open-loop release (and
//! of each probe replica's share),
//! the runtimes' canaries, CPU and load, each region's clock offset (from the manifest, through
//! [`RunHealth`]), delivered load against the plan (the step's own rate verdict: only the
//! client falling behind is ours), a Kolmogorov–Smirnov fit of each Poisson lane's actual
//! inter-send gaps against its planned rate, usage-vs-o200k disagreement per lane and the
//! harness failures.

use super::compute::StepView;
use super::{LoadResults, StepResults};
use crate::metrics::RateVerdict;
use crate::spec::{Arrivals, StepModel};
use openbench_common::rundir::RegionLink;
use openbench_common::validity::assess::{Check, ValiditySection};
use openbench_common::validity::{SittingHealth, ks};
use std::collections::BTreeMap;

/// Fewest inter-send gaps a KS fit is computed on: below it the test has little power and its
/// asymptotic p-value is rough, so a short step is not judged on its shape.
pub const KS_MIN_GAPS: usize = 20;

/// What the run measured of itself, from its manifest (runs before validity carry none).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunHealth {
    /// Every sitting's canaries.
    pub sittings: Vec<SittingHealth>,
    /// Region → clock offset and bound.
    pub links: BTreeMap<String, RegionLink>,
}

/// The section of `results`; `None` for a run whose manifest carries no runtime health (made
/// before validity was measured: its section cannot be rebuilt after the fact).
pub fn section(results: &LoadResults, steps: &[StepView]) -> Option<ValiditySection> {
    let health = results.health.as_ref()?;
    let lags: Vec<f64> = results
        .steps
        .iter()
        .flat_map(|s| &s.samples)
        .filter_map(|s| Some(s.sent_ms - s.scheduled_ms?))
        .collect();
    let harness: u64 = results.steps.iter().map(|s| s.harness_failures).sum();
    let mut section = ValiditySection::default().with_send_lag(&lags);
    for (replica, lags) in replica_lags(results) {
        section = section.with_replica_send_lag(&replica, &lags);
    }
    section = section
        .with_runtimes(&health.sittings)
        .with_clock(&health.links)
        .with_harness_failures(usize::try_from(harness).unwrap_or(usize::MAX));
    for (replica, count) in &results.replica_harness_failures {
        section = section
            .with_replica_harness_failures(replica, usize::try_from(*count).unwrap_or(usize::MAX));
    }
    for view in steps {
        for row in &view.lanes {
            if row.metrics.rate.target_per_s.is_some() {
                let scope = format!("step {} · lane {}", view.index, row.name);
                let kept = row.metrics.rate.verdict != RateVerdict::ClientBehind;
                section = section.with_check(Check::met("planned rate sent", &scope, kept));
            }
        }
    }
    for step in &results.steps {
        for (scope, fit) in poisson_fits(step) {
            section = section.with_arrivals(&scope, fit);
        }
    }
    for (lane, share) in token_disagreement(results) {
        section = section.with_token_disagreement(&lane, share);
    }
    Some(section)
}

/// Probe replica → the send lag of every timed release it sent, over the run (samples from a
/// replicated region name their replica).
fn replica_lags(results: &LoadResults) -> BTreeMap<String, Vec<f64>> {
    let mut lags: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for s in results.steps.iter().flat_map(|s| &s.samples) {
        if let (Some(replica), Some(scheduled)) = (&s.replica, s.scheduled_ms) {
            lags.entry(replica.clone())
                .or_default()
                .push(s.sent_ms - scheduled);
        }
    }
    lags
}

/// The KS fit of each lane's actual inter-send gaps in a Poisson step against Exp(its planned
/// rate); none for a step resumed over sittings (its offsets mix two timelines) or a lane with
/// fewer than [`KS_MIN_GAPS`] gaps.
pub fn poisson_fits(step: &StepResults) -> Vec<(String, ks::KsFit)> {
    let StepModel::Open {
        arrivals: Arrivals::Poisson,
        ..
    } = step.model
    else {
        return Vec::new();
    };
    if step.sittings.len() > 1 {
        return Vec::new();
    }
    let mut fits = Vec::new();
    for lane in &step.lanes {
        let Some(rate) = lane.target_rate_per_s else {
            continue;
        };
        let mut sends: Vec<f64> = step
            .samples
            .iter()
            .filter(|s| s.lane == lane.lane && s.scheduled_ms.is_some())
            .map(|s| s.sent_ms)
            .collect();
        sends.sort_by(f64::total_cmp);
        let gaps: Vec<f64> = sends.windows(2).map(|w| (w[1] - w[0]) / 1e3).collect();
        if gaps.len() < KS_MIN_GAPS {
            continue;
        }
        if let Some(fit) = ks::exponential_fit(&gaps, rate) {
            fits.push((format!("step {} · lane {}", step.index, lane.lane), fit));
        }
    }
    fits
}

/// Per lane over the run: (Σ usage completion − Σ o200k answer) ÷ Σ o200k answer over the
/// completed requests that reported usage (the steps' `output_discrepancy`, pooled).
fn token_disagreement(results: &LoadResults) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for s in results.steps.iter().flat_map(|s| &s.samples) {
        if let Some(usage) = s.usage_completion_tokens {
            let entry = sums.entry(&s.lane).or_default();
            entry.0 += usage;
            entry.1 += s.answer_tokens;
        }
    }
    sums.into_iter()
        .filter(|(_, (_, o200k))| *o200k > 0)
        .map(|(lane, (usage, o200k))| {
            (
                lane.to_string(),
                (usage as f64 - o200k as f64) / o200k as f64,
            )
        })
        .collect()
}

/// The runtime health and links the manifest of `run_dir` recorded; `None` when it carries no
/// runtime health (a run before validity) or cannot be read.
pub fn run_health(run_dir: &std::path::Path) -> Option<RunHealth> {
    let manifest = openbench_common::rundir::RunManifest::load(run_dir).ok()?;
    (!manifest.runtime_health.is_empty()).then_some(RunHealth {
        sittings: manifest.runtime_health,
        links: manifest.links,
    })
}
