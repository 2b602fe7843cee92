//! Recomputes every derived artifact of a run from its raw records, lock and dataset, and writes
//! them with `report.md`. Deterministic: observations are sorted, maps are ordered, floats are
//! printed by one formatter, nothing reads the clock — re-running gives byte-identical files.

pub mod faults_section;
pub mod markdown;
mod paired_section;
pub mod repeats_section;
pub mod validity;

/// Record admission and table formatting are the report kit's, shared with any workflow.
pub use openbench_report_kit::{admission, format};

use crate::metrics::{self, MetricsInput, Observation, RunMetrics, observe};
use crate::paired::{self, PairedComparisons, PairedLane};
use crate::scoring::{Evaluation, GoldRef, Scored};
use markdown::{ArtifactStatus, ReportContext};
use openbench_common::rundir::{
    self as layout, PlanFileNames, ReadStats, RunDirError, RunLock, RunManifest, read_counting,
    read_json, write_atomic_with,
};
use openbench_common::workflow::ReportOptions;
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A failure while reporting, naming the file or record.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A run-directory file could not be read or written.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// Records the plan, the lock or the one-record-per-request rule does not account for.
    #[error(transparent)]
    Refused(#[from] admission::AdmissionError),
    /// Records that cannot be scored (unknown item, unknown family).
    #[error("{path}: {count} record(s) cannot be scored; first: {first}")]
    Unscorable {
        /// Records file.
        path: PathBuf,
        /// How many.
        count: usize,
        /// The first problems.
        first: String,
    },
}

/// Gold answers by item id.
#[derive(Debug, Clone, Default)]
pub struct GoldTable(pub HashMap<String, GoldRef>);

/// Everything a report computes, before writing.
#[derive(Debug)]
pub struct Computed {
    /// Final records in report order (round, lane, request id).
    pub observations: Vec<Observation>,
    /// Lane table of the observations.
    pub lanes: metrics::LaneTable,
    /// Metrics.
    pub metrics: RunMetrics,
    /// Paired comparisons.
    pub paired: PairedComparisons,
    /// Earliest and latest record start.
    pub record_period: Option<(String, String)>,
    /// Read counts.
    pub stats: ReadStats,
    /// What was counted only because the options accepted it (stated in the header).
    pub accepted: admission::Accepted,
}

/// Reads the run lock. Refuses a lock (or selection, or plan) that changed after the run manifest recorded its hash:
/// an edited `timeout_ms` would otherwise be reported as the run's deadline.
pub fn read_lock(run_dir: &Path) -> Result<RunLock, ReportError> {
    if let Ok(manifest) = RunManifest::load(run_dir) {
        manifest.verify_artifacts(run_dir)?;
    }
    Ok(read_json(&layout::path(run_dir, layout::RUN_LOCK))?)
}

/// The layout names of the plan whose records a report reads: the full run's, else the latest
/// smoke attempt's.
pub fn reported_files(run_dir: &Path) -> Result<PlanFileNames, ReportError> {
    let attempt = layout::reported_attempt(run_dir)
        .ok_or_else(|| RunDirError::NoResults(run_dir.to_path_buf()))?;
    Ok(PlanFileNames::of_attempt(attempt))
}

/// Reads, scores and aggregates a run's records, refusing records outside the plan or the lock
/// and duplicates ([`compute_with`] with the default options).
pub fn compute(run_dir: &Path, lock: &RunLock, gold: &GoldTable) -> Result<Computed, ReportError> {
    compute_with(run_dir, lock, gold, &ReportOptions::default())
}

/// Reads, scores and aggregates a run's records; `options` says which anomalies are counted
/// rather than refused (see [`admission`]).
pub fn compute_with(
    run_dir: &Path,
    lock: &RunLock,
    gold: &GoldTable,
    options: &ReportOptions,
) -> Result<Computed, ReportError> {
    let names = reported_files(run_dir)?;
    let records_name = names.results.clone();
    let records_path = layout::path(run_dir, &records_name);
    let mut lanes = metrics::LaneTable::default();
    let mut period: Option<(String, String)> = None;
    let lookup = |id: &str| gold.0.get(id).cloned();
    // First entry per key wins, as a linear search would; a map keeps 1,000 lanes linear.
    let models: HashMap<&str, &str> = lock
        .providers
        .iter()
        .rev()
        .map(|p| (p.key.as_str(), p.model.as_str()))
        .collect();
    let requested = |provider: &str| models.get(provider).map(|m| m.to_string());
    let mut foreign = admission::Foreign::default();
    let read = read_counting(&records_path, false, |record| {
        foreign.check(&record, &lock.run_id);
        let start = &record.started_at;
        match &mut period {
            None => period = Some((start.clone(), start.clone())),
            Some((lo, hi)) => {
                if start < lo {
                    lo.clone_from(start);
                }
                if start > hi {
                    hi.clone_from(start);
                }
            }
        }
        observe::observe(record, &mut lanes, &lookup, &requested)
    })?;
    let problems: Vec<&String> = read.items.iter().filter_map(|i| i.as_ref().err()).collect();
    if !problems.is_empty() {
        return Err(ReportError::Unscorable {
            path: records_path,
            count: problems.len(),
            first: problems
                .iter()
                .take(3)
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        });
    }
    // Collected in place (a `Result` of an observation is laid out like one), so a million
    // observations are never held twice.
    let mut observations: Vec<Observation> =
        read.items.into_iter().filter_map(Result::ok).collect();
    // Request ids are unique after `read_counting`, so the key is total and an unstable sort gives
    // the one order; it also needs no scratch copy (a stable sort of a million would take one).
    observations.sort_unstable_by(|a, b| {
        (
            a.round_index,
            &lanes.lanes[a.lane as usize].lane,
            &a.request_id,
        )
            .cmp(&(
                b.round_index,
                &lanes.lanes[b.lane as usize].lane,
                &b.request_id,
            ))
    });
    let plan_path = layout::path(run_dir, &names.plan);
    let plan: Option<metrics::PlanView> = if plan_path.is_file() {
        Some(read_json(&plan_path)?)
    } else {
        None
    };
    let accepted = admission::admit(
        &observations,
        &lanes,
        (plan.as_ref(), &names.plan),
        lock,
        admission::RecordsRead {
            path: &records_path,
            stats: &read.stats,
            foreign: &foreign,
        },
        options,
    )?;
    let mut metrics = metrics::compute(&MetricsInput {
        lock,
        lanes: &lanes,
        observations: &observations,
        plan: plan.as_ref(),
        records_file: &records_name,
    });
    metrics.validity = validity::section(run_dir, &names);
    let compared: Vec<PairedLane> = metrics
        .providers
        .iter()
        .filter(|p| p.compatibility.configuration_compatible)
        .filter_map(|p| {
            let index = lanes.lanes.iter().position(|l| l.lane == p.lane)? as u32;
            Some(PairedLane {
                index,
                lane: p.lane.clone(),
                display_name: p.display_name.clone(),
            })
        })
        .collect();
    let excluded = metrics
        .providers
        .iter()
        .filter(|p| !p.compatibility.configuration_compatible)
        .map(|p| p.lane.clone())
        .collect();
    let paired = paired::compute(&observations, &compared, excluded, metrics.rounds);
    Ok(Computed {
        observations,
        lanes,
        metrics,
        paired,
        record_period: period,
        stats: read.stats,
        accepted,
    })
}

/// The evaluation line of one submitted observation.
pub fn evaluation(o: &Observation, lanes: &metrics::LaneTable) -> Evaluation {
    let lane = &lanes.lanes[o.lane as usize];
    let scored = Scored {
        classification: o.class,
        error_type: o.error_type,
        error_detail: None,
        schema_valid: o.schema_valid,
        correct: o.correct(),
        field_correct: (0..crate::scoring::family_fields(o.family).len())
            .map(|i| o.field_correct(i))
            .collect(),
    };
    let mut e = Evaluation::from_scored(&o.item_id, o.family, &scored);
    e.request_id = Some(o.request_id.clone());
    e.round_index = Some(o.round_index);
    e.provider = Some(lane.provider.clone());
    e.lane = (lane.lane != lane.provider).then(|| lane.lane.clone());
    e
}

/// Replaces `path` atomically with what `write` streams (see `rundir::write_atomic_with`).
fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), ReportError> {
    Ok(write_atomic_with(path, write)?)
}

/// Pretty JSON and a newline, streamed: the paired comparisons of 1,000 lanes are a million rows.
fn pretty(w: &mut dyn Write, value: &impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, value).map_err(std::io::Error::other)?;
    w.write_all(b"\n")
}

/// sha256 and size of a file, streaming; `None` when absent.
pub fn file_status(path: &Path) -> Option<(String, u64)> {
    let file = openbench_common::rundir::open_read(path).ok()?;
    openbench_common::hash::sha256_reader(file).ok()
}

/// The run period: the run manifest's `period_start`/`period_end`, else the earliest and latest
/// record start.
fn period(run_dir: &Path, computed: &Computed) -> Option<(String, String, &'static str)> {
    if let Ok(RunManifest {
        period_start: Some(start),
        period_end: Some(end),
        ..
    }) = RunManifest::load(run_dir)
    {
        return Some((start, end, "run manifest"));
    }
    computed
        .record_period
        .clone()
        .map(|(s, e)| (s, e, "record start times"))
}

/// The faults section's view: out-of-round results from the records, links and outages from the
/// manifest, probe-side launch skew from the round lines (unreadable lines are skipped: the
/// round lines are diagnostics, never a metric's input).
fn faults_view(run_dir: &Path, computed: &Computed, rounds: &str) -> faults_section::FaultsView {
    let (links, outages) = RunManifest::load(run_dir)
        .map(|m| (m.links, m.outages))
        .unwrap_or_default();
    let rounds: Vec<openbench_common::rundir::RoundLine> =
        String::from_utf8(layout::read_bytes(&layout::path(run_dir, rounds)).unwrap_or_default())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
    faults_section::FaultsView::gather(
        &computed.observations,
        &computed.lanes,
        links,
        outages,
        &rounds,
    )
}

/// Recomputes and writes every derived artifact and `report.md` with the default options;
/// returns the terminal table and the paths written.
pub fn write_all(
    run_dir: &Path,
    lock: &RunLock,
    gold: &GoldTable,
) -> Result<(String, Vec<PathBuf>), ReportError> {
    write_all_with(run_dir, lock, gold, &ReportOptions::default())
}

/// Recomputes and writes every derived artifact and `report.md`, counting what `options`
/// accepts; returns the terminal table and the paths written.
pub fn write_all_with(
    run_dir: &Path,
    lock: &RunLock,
    gold: &GoldTable,
    options: &ReportOptions,
) -> Result<(String, Vec<PathBuf>), ReportError> {
    let computed = compute_with(run_dir, lock, gold, options)?;
    let skipped = skipped_lines(&reported_files(run_dir)?.results, &computed.stats);
    let mut written = Vec::new();
    let path = layout::path(run_dir, layout::EVALUATIONS);
    write_atomic(&path, |w| {
        for o in computed.observations.iter().filter(|o| !o.is_harness()) {
            serde_json::to_writer(&mut *w, &evaluation(o, &computed.lanes))?;
            w.write_all(b"\n")?;
        }
        Ok(())
    })?;
    written.push(path);
    let path = layout::path(run_dir, layout::FAILURES);
    write_atomic(&path, |w| {
        for o in &computed.observations {
            let Some(f) = &o.failure else { continue };
            let lane = &computed.lanes.lanes[o.lane as usize];
            let line = json!({
                "request_id": o.request_id,
                "round_index": o.round_index,
                "item_id": o.item_id,
                "task_family": o.family.as_str(),
                "provider": lane.provider,
                "lane": lane.lane,
                "region": lane.region,
                "outcome": observe::outcome_label(f.outcome),
                "error_type": f.error_type,
                "http_status": f.http_status,
                "message": f.message,
                "harness": o.is_harness(),
            });
            serde_json::to_writer(&mut *w, &line)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    })?;
    written.push(path);
    let path = layout::path(run_dir, layout::METRICS);
    write_atomic(&path, |w| pretty(w, &computed.metrics))?;
    written.push(path);
    let path = layout::path(run_dir, layout::PAIRED);
    write_atomic(&path, |w| pretty(w, &computed.paired))?;
    written.push(path);
    let reported = reported_files(run_dir)?;
    let names = [
        layout::RUN_LOCK.to_string(),
        layout::SELECTION.to_string(),
        reported.plan,
        layout::RUN_MANIFEST.to_string(),
        reported.results,
        layout::STREAM_EVENTS.to_string(),
        layout::RECONSTRUCTED.to_string(),
        layout::ROUNDS.to_string(),
        layout::EVALUATIONS.to_string(),
        layout::FAILURES.to_string(),
        layout::METRICS.to_string(),
        layout::PAIRED.to_string(),
    ];
    let artifacts: Vec<ArtifactStatus> = names
        .iter()
        .map(|name| {
            let status = file_status(&layout::path(run_dir, name));
            ArtifactStatus {
                name: name.clone(),
                sha256: status.as_ref().map(|s| s.0.clone()),
                bytes: status.map(|s| s.1),
            }
        })
        .collect();
    let ctx = ReportContext {
        lock,
        metrics: &computed.metrics,
        paired: &computed.paired,
        period: period(run_dir, &computed),
        artifacts: &artifacts,
        superseded: computed.stats.superseded,
        ignored_partial_line: computed.stats.ignored_partial_last_line,
        torn_line: computed.stats.torn_line,
        faults: faults_view(run_dir, &computed, &reported.rounds),
        accepted: &computed.accepted.notes,
    };
    let md = markdown::render(&ctx);
    let path = layout::path(run_dir, layout::REPORT_MD);
    write_atomic(&path, |w| w.write_all(md.as_bytes()))?;
    written.push(path);
    let html =
        crate::html::HtmlReportInput::from_report(&ctx, &computed.observations, &computed.lanes);
    written.push(crate::html::write_html(run_dir, &html)?);
    let mut summary = markdown::summary_text(&computed.metrics, lock.simulator_time_scale);
    for line in skipped {
        summary.push_str(&line);
        summary.push('\n');
    }
    Ok((summary, written))
}

/// One sentence per line of the records file the report did not count: a half-written last line
/// (crash repair on resume drops it; the manifest may still say complete) and blank lines.
fn skipped_lines(records: &str, stats: &ReadStats) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(line) = stats.torn_line {
        out.push(format!(
            "{records}:{line}: half-written last line, not counted ({} complete record line(s) read)",
            stats.lines
        ));
    }
    for line in &stats.blank_lines {
        out.push(format!("{records}:{line}: blank line, skipped"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_of_an_observation_is_laid_out_like_one() {
        // `compute` relies on this to collect the final records in place.
        assert_eq!(
            std::mem::size_of::<Result<Observation, String>>(),
            std::mem::size_of::<Observation>()
        );
        assert!(std::mem::size_of::<Observation>() <= 256);
    }
}
