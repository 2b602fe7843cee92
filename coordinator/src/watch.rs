//! Reading a run back for `watch`: a snapshot built only from the files, so it works on a run
//! still being written by another process (half lines are ignored) and on a finished one.

use openbench_common::record::Outcome;
use openbench_common::rundir::{
    self as layout, Plan, RoundLine, RunDirError, RunFiles, RunLock, RunManifest, RunMode,
    RunStatus, counting_records, read_json,
};
use openbench_common::stats::nearest_rank;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Per-lane figures so far.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaneSnapshot {
    /// Lane label.
    pub lane: String,
    /// Requests with a record (harness failures excluded).
    pub submitted: usize,
    /// Completed requests.
    pub completed: usize,
    /// Operational failures (timeouts, HTTP, transport, stream errors).
    pub failures: usize,
    /// Harness failures awaiting re-execution.
    pub harness_errors: usize,
    /// Running p50 TTFA over completed requests, ms.
    pub ttfa_p50_ms: Option<f64>,
    /// Running p50 E2E over completed requests, ms.
    pub e2e_p50_ms: Option<f64>,
}

/// One view of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// Run id.
    pub run_id: String,
    /// What last ran (`init` when the manifest is missing).
    pub mode: RunMode,
    /// Manifest status (`None` when the manifest is missing or unreadable).
    pub status: Option<RunStatus>,
    /// Smoke attempt shown (0 for a full run).
    pub attempt: u32,
    /// Rounds whose every lane is committed.
    pub rounds_done: usize,
    /// Rounds in the plan.
    pub rounds_total: usize,
    /// Requests with a committed record.
    pub requests_done: usize,
    /// Requests in the plan.
    pub requests_total: usize,
    /// Operational failures so far.
    pub failures: usize,
    /// Harness failures awaiting re-execution.
    pub harness_errors: usize,
    /// Estimated seconds left, from the recent round pace.
    pub eta_s: Option<f64>,
    /// Lanes in base order.
    pub lanes: Vec<LaneSnapshot>,
}

/// Builds a snapshot from the run directory's files.
pub fn snapshot(run_dir: &Path) -> Result<Snapshot, RunDirError> {
    let lock: RunLock = read_json(&layout::path(run_dir, layout::RUN_LOCK))?;
    let manifest = RunManifest::load(run_dir).ok();
    let mode = manifest.as_ref().map_or(RunMode::Init, |m| m.mode);
    let status = manifest.as_ref().map(|m| m.status);
    let attempt = match mode {
        RunMode::Smoke => layout::smoke_attempts(run_dir).last().copied().unwrap_or(1),
        _ => 0,
    };
    let files = RunFiles::new(run_dir, attempt);
    let plan: Option<Plan> = if files.plan.exists() {
        Some(read_json(&files.plan)?)
    } else {
        None
    };
    let records = counting_records(&files.results)?;
    let rounds: Vec<RoundLine> = read_lines_lenient(&files.rounds);

    let lane_labels: Vec<String> = match &plan {
        Some(p) => p.lanes.iter().map(|l| l.label.clone()).collect(),
        None => lock.providers.iter().map(|p| p.key.clone()).collect(),
    };
    let mut lanes: BTreeMap<String, (LaneSnapshot, Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for label in &lane_labels {
        lanes.insert(label.clone(), (empty_lane(label), Vec::new(), Vec::new()));
    }
    let (mut failures, mut harness) = (0, 0);
    for r in records.values() {
        let Some((lane, ttfa, e2e)) = lanes.get_mut(&r.lane) else {
            continue;
        };
        match r.outcome {
            Outcome::HarnessError => {
                lane.harness_errors += 1;
                harness += 1;
                continue;
            }
            Outcome::Completed => {
                lane.completed += 1;
                ttfa.extend(r.ttfa_ms);
                e2e.extend(r.e2e_ms);
            }
            _ => {
                lane.failures += 1;
                failures += 1;
            }
        }
        lane.submitted += 1;
    }
    let (rounds_done, rounds_total, requests_total) = match &plan {
        Some(p) => (
            p.rounds_done(|id| records.get(id).is_some_and(|r| r.outcome.is_committed())),
            p.rounds.len(),
            p.request_count(),
        ),
        None => (0, 0, 0),
    };
    let requests_done = records.len() - harness;
    Ok(Snapshot {
        run_id: lock.run_id,
        mode,
        status,
        attempt,
        rounds_done,
        rounds_total,
        requests_done,
        requests_total,
        failures,
        harness_errors: harness,
        eta_s: eta(&rounds, rounds_total.saturating_sub(rounds_done)),
        lanes: lane_labels
            .iter()
            .filter_map(|label| lanes.remove(label))
            .map(|(mut lane, ttfa, e2e)| {
                lane.ttfa_p50_ms = nearest_rank(&ttfa, 0.5);
                lane.e2e_p50_ms = nearest_rank(&e2e, 0.5);
                lane
            })
            .collect(),
    })
}

fn empty_lane(label: &str) -> LaneSnapshot {
    LaneSnapshot {
        lane: label.to_string(),
        submitted: 0,
        completed: 0,
        failures: 0,
        harness_errors: 0,
        ttfa_p50_ms: None,
        e2e_p50_ms: None,
    }
}

/// Seconds left at the pace of the last 50 rounds (round time plus coordinator overhead).
fn eta(rounds: &[RoundLine], remaining: usize) -> Option<f64> {
    if remaining == 0 {
        return Some(0.0);
    }
    let recent = &rounds[rounds.len().saturating_sub(50)..];
    if recent.is_empty() {
        return None;
    }
    let total: f64 = recent
        .iter()
        .map(|r| r.round_ms + r.coordinator_overhead_ms.unwrap_or(0.0))
        .sum();
    Some(total / recent.len() as f64 * remaining as f64 / 1000.0)
}

fn read_lines_lenient<T: serde::de::DeserializeOwned>(path: &Path) -> Vec<T> {
    std::fs::read_to_string(path)
        .map(|text| {
            text.lines()
                .filter_map(|line| serde_json::from_str(line).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The live terminal view of a snapshot.
pub fn render(s: &Snapshot) -> String {
    let mut out = String::new();
    let what = match s.mode {
        _ if s.attempt > 0 => format!("smoke attempt {}", s.attempt),
        RunMode::Init => "init".to_string(),
        RunMode::Smoke => "smoke".to_string(),
        RunMode::Full => "full".to_string(),
    };
    let eta = s
        .eta_s
        .map(|e| format!("{e:.0} s"))
        .unwrap_or_else(|| "-".into());
    out.push_str(&format!(
        "run {}  [{what}, {}]\nrounds {}/{}  requests {}/{}  failures {}  harness {}  ETA {eta}\n\n",
        s.run_id,
        s.status.map_or("unknown", RunStatus::as_str),
        s.rounds_done,
        s.rounds_total,
        s.requests_done,
        s.requests_total,
        s.failures,
        s.harness_errors
    ));
    out.push_str(&format!(
        "{:<24} {:>9} {:>9} {:>8} {:>7} {:>12} {:>12}\n",
        "lane", "submitted", "completed", "failures", "harness", "TTFA p50 ms", "E2E p50 ms"
    ));
    let fmt = |v: Option<f64>| v.map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".into());
    for l in &s.lanes {
        out.push_str(&format!(
            "{:<24} {:>9} {:>9} {:>8} {:>7} {:>12} {:>12}\n",
            l.lane,
            l.submitted,
            l.completed,
            l.failures,
            l.harness_errors,
            fmt(l.ttfa_p50_ms),
            fmt(l.e2e_p50_ms)
        ));
    }
    out
}
