//! The run manifest (`artifacts/run-manifest.json`): status, period, counts, approval id and the
//! sha256 of every immutable artifact. Rewritten atomically whenever the status changes.

use crate::rundir::{RunDirError, json_bytes, read_json, write_atomic};
use openbench_common::hash::sha256_hex;
use openbench_common::layout;
use openbench_common::record::TerminalRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Version of the manifest layout.
pub const MANIFEST_VERSION: u32 = 1;

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Locked by `init`; nothing executed yet.
    Initialized,
    /// A process is executing it (or died doing so: resume it).
    Running,
    /// Every planned request has a terminal record.
    Complete,
    /// Every round ran, but some lane-rounds hit harness failures: resume re-executes them.
    Incomplete,
    /// Stopped by a signal; resumable.
    Interrupted,
    /// Stopped by an error; resumable once fixed.
    Failed,
}

/// One smoke attempt's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmokeAttempt {
    /// Attempt number (1-based).
    pub attempt: u32,
    /// True when every lane × family returned a 2xx, non-empty, schema-valid answer.
    pub passed: bool,
    /// One line per failing lane × family.
    pub failures: Vec<String>,
}

/// The manifest file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunManifest {
    /// [`MANIFEST_VERSION`].
    pub manifest_version: u32,
    /// Run id.
    pub run_id: String,
    /// Workflow name.
    pub workflow: String,
    /// `init`, `smoke` or `full`: what last ran.
    pub mode: String,
    /// Status of that mode.
    pub status: RunStatus,
    /// Approval id of the full run.
    #[serde(default)]
    pub approval_id: Option<String>,
    /// First execution start, RFC 3339 UTC.
    #[serde(default)]
    pub period_start: Option<String>,
    /// Completion time, RFC 3339 UTC.
    #[serde(default)]
    pub period_end: Option<String>,
    /// Sessions that executed part of the run (1 + resumes).
    #[serde(default)]
    pub sessions: u32,
    /// Requests in the plan of the current mode.
    #[serde(default)]
    pub planned_requests: usize,
    /// Requests with a committed terminal record.
    #[serde(default)]
    pub terminal_records: usize,
    /// Effective records by outcome.
    #[serde(default)]
    pub outcomes: BTreeMap<String, usize>,
    /// Rounds in the plan.
    #[serde(default)]
    pub rounds_total: usize,
    /// Rounds whose every lane is committed.
    #[serde(default)]
    pub rounds_done: usize,
    /// Smoke attempts so far.
    #[serde(default)]
    pub smoke: Vec<SmokeAttempt>,
    /// Artifact path → sha256 of its bytes.
    #[serde(default)]
    pub artifacts: BTreeMap<String, String>,
    /// Last update, RFC 3339 UTC.
    pub updated_at: String,
}

impl RunManifest {
    /// A fresh manifest for a run just locked.
    pub fn new(run_id: &str, workflow: &str) -> RunManifest {
        RunManifest {
            manifest_version: MANIFEST_VERSION,
            run_id: run_id.to_string(),
            workflow: workflow.to_string(),
            mode: "init".into(),
            status: RunStatus::Initialized,
            approval_id: None,
            period_start: None,
            period_end: None,
            sessions: 0,
            planned_requests: 0,
            terminal_records: 0,
            outcomes: BTreeMap::new(),
            rounds_total: 0,
            rounds_done: 0,
            smoke: Vec::new(),
            artifacts: BTreeMap::new(),
            updated_at: openbench_common::clock::now_rfc3339(),
        }
    }

    /// Reads a run's manifest.
    pub fn load(run_dir: &Path) -> Result<RunManifest, RunDirError> {
        read_json(&layout::path(run_dir, layout::RUN_MANIFEST))
    }

    /// Sets the counts from the effective records.
    pub fn count<'a>(&mut self, records: impl Iterator<Item = &'a TerminalRecord>) {
        self.outcomes.clear();
        self.terminal_records = 0;
        for r in records {
            let name = serde_json::to_value(r.outcome)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            *self.outcomes.entry(name).or_default() += 1;
            if r.outcome != openbench_common::record::Outcome::HarnessError {
                self.terminal_records += 1;
            }
        }
    }

    /// Hashes every immutable artifact present and writes the manifest atomically.
    pub fn save(&mut self, run_dir: &Path) -> Result<(), RunDirError> {
        self.updated_at = openbench_common::clock::now_rfc3339();
        let mut names = vec![
            layout::RUN_LOCK.to_string(),
            layout::SELECTION.to_string(),
            layout::FULL_PLAN.to_string(),
        ];
        names.extend((1..=2).map(layout::smoke_plan));
        for name in names {
            if let Ok(bytes) = std::fs::read(layout::path(run_dir, &name)) {
                self.artifacts.insert(name, sha256_hex(&bytes));
            }
        }
        let path = layout::path(run_dir, layout::RUN_MANIFEST);
        let bytes = json_bytes(&path, self)?;
        write_atomic(&path, &bytes)
    }
}
