//! The paired run's validity section (docs/validity.md): send lag of every release (a round's
//! gate opening → its request's start on the probe, moved onto the coordinator's clock by the
//! region's measured offset), the rounds' launch skew, the runtimes' canaries, CPU and load,
//! each region's clock offset, usage-vs-o200k disagreement per lane and the harness failures.

use openbench_common::clock::rfc3339_unix_micros;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir::{
    self as layout, PlanFileNames, RoundLine, RunManifest, counting_records,
};
use openbench_common::validity::assess::ValiditySection;
use std::collections::BTreeMap;
use std::path::Path;

/// The section of the run in `run_dir`; `None` for a run whose manifest carries no runtime
/// health (made before validity was measured) or whose records cannot be read.
pub fn section(run_dir: &Path, names: &PlanFileNames) -> Option<ValiditySection> {
    let manifest = RunManifest::load(run_dir).ok()?;
    if manifest.runtime_health.is_empty() {
        return None;
    }
    let records = counting_records(&layout::path(run_dir, &names.results)).ok()?;
    let rounds = round_lines(run_dir, &names.rounds);
    let offsets: BTreeMap<&str, f64> = manifest
        .links
        .iter()
        .map(|(r, l)| (r.as_str(), l.clock_offset_ms))
        .collect();
    let lags = send_lags(records.values(), &rounds, &offsets);
    let skews: Vec<f64> = rounds
        .iter()
        .map(|r| r.probe_launch_skew_ms.unwrap_or(r.launch_skew_ms))
        .collect();
    let harness = records
        .values()
        .filter(|r| r.outcome == Outcome::HarnessError)
        .count();
    let mut section = ValiditySection::default()
        .with_send_lag(&lags)
        .with_launch_skew(&skews)
        .with_runtimes(&manifest.runtime_health)
        .with_clock(&manifest.links)
        .with_harness_failures(harness);
    for (lane, share) in token_disagreement(records.values()) {
        section = section.with_token_disagreement(&lane, share);
    }
    Some(section)
}

/// The round lines of `name` (unreadable lines skipped: they are diagnostics).
fn round_lines(run_dir: &Path, name: &str) -> Vec<RoundLine> {
    let bytes = layout::read_bytes(&layout::path(run_dir, name)).unwrap_or_default();
    String::from_utf8(bytes)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Each record's start on its probe (on the coordinator's clock) − its round's release, ms; the
/// latest line of a round (and of its re-run group, for out-of-round records) is its release.
pub fn send_lags<'a>(
    records: impl Iterator<Item = &'a TerminalRecord>,
    rounds: &[RoundLine],
    offsets_ms: &BTreeMap<&str, f64>,
) -> Vec<f64> {
    let releases: BTreeMap<(u64, bool), i64> = rounds
        .iter()
        .filter_map(|r| {
            Some((
                (r.round_index, r.out_of_round),
                rfc3339_unix_micros(&r.released_at)?,
            ))
        })
        .collect();
    records
        .filter(|r| r.outcome != Outcome::HarnessError)
        .filter_map(|r| {
            let released = releases.get(&(r.round_index, r.out_of_round))?;
            let started = rfc3339_unix_micros(&r.started_at)? as f64;
            let offset_us = offsets_ms.get(r.region.as_str()).copied().unwrap_or(0.0) * 1e3;
            Some((started - offset_us - *released as f64) / 1e3)
        })
        .collect()
}

/// Per lane: (Σ usage completion − Σ o200k answer) ÷ Σ o200k answer over completed records
/// that reported usage.
pub fn token_disagreement<'a>(
    records: impl Iterator<Item = &'a TerminalRecord>,
) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for r in records.filter(|r| r.outcome == Outcome::Completed) {
        let usage = r.usage.as_ref().and_then(|u| u.completion_tokens);
        if let (Some(usage), Some(o200k)) = (usage, r.answer_tokens) {
            let entry = sums.entry(&r.lane).or_default();
            entry.0 += usage;
            entry.1 += o200k;
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
