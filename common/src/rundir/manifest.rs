//! Reading and saving the run manifest: counts from the records that count, artifact hashes, and
//! an atomic rewrite whenever the status changes. A small reserve file beside it keeps the space
//! for one more rewrite, so a disk that fills mid-run still gets a manifest that says `failed`
//! rather than one stuck at `running`.

use super::RunDirError;
use super::layout::{self, FULL_PLAN, MANIFEST_RESERVE, RUN_LOCK, RUN_MANIFEST, SELECTION};
use super::open::{open_json, options};
use super::schema::{MANIFEST_VERSION, RunManifest, RunMode, RunStatus};
use super::write::{io, not_found, read_json, write_json_atomic};
use crate::hash::sha256_reader;
use crate::record::TerminalRecord;
use std::collections::BTreeMap;
use std::path::Path;

impl RunManifest {
    /// A fresh manifest for a run just locked.
    pub fn new(run_id: &str, workflow: &str) -> RunManifest {
        RunManifest {
            manifest_version: MANIFEST_VERSION,
            run_id: run_id.to_string(),
            workflow: workflow.to_string(),
            mode: RunMode::Init,
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
            session_probes: Vec::new(),
            links: BTreeMap::new(),
            outages: Vec::new(),
            finished_phases: BTreeMap::new(),
            records_chain: None,
            runtime_health: Vec::new(),
            updated_at: crate::clock::now_rfc3339(),
        }
    }

    /// Reads a run's manifest.
    pub fn load(run_dir: &Path) -> Result<RunManifest, RunDirError> {
        read_json(&layout::path(run_dir, RUN_MANIFEST))
    }

    /// Sets the counts from the records that count.
    pub fn count<'a>(&mut self, records: impl Iterator<Item = &'a TerminalRecord>) {
        self.outcomes.clear();
        self.terminal_records = 0;
        for r in records {
            let name = serde_json::to_value(r.outcome)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            *self.outcomes.entry(name).or_default() += 1;
            if r.outcome.is_committed() {
                self.terminal_records += 1;
            }
        }
    }

    /// Hashes every immutable artifact present (lock, selection, every plan) and writes the
    /// manifest atomically. An artifact whose hash the manifest already holds must still have it
    /// ([`RunManifest::verify_artifacts`]): a changed one is refused, never re-recorded.
    pub fn save(&mut self, run_dir: &Path) -> Result<(), RunDirError> {
        self.updated_at = crate::clock::now_rfc3339();
        let hashes = artifact_hashes(run_dir)?;
        self.check(run_dir, &hashes)?;
        self.artifacts.extend(hashes);
        self.write(run_dir)
    }

    /// Checks every immutable artifact the manifest recorded a hash of (lock, selection, plans)
    /// still has it; the error names the file and both hashes. Artifacts created since are not
    /// checked here (the next [`RunManifest::save`] records them).
    pub fn verify_artifacts(&self, run_dir: &Path) -> Result<(), RunDirError> {
        self.check(run_dir, &artifact_hashes(run_dir)?)
    }

    fn check(&self, run_dir: &Path, hashes: &[(String, String)]) -> Result<(), RunDirError> {
        for (name, now) in hashes {
            match self.artifacts.get(name) {
                Some(recorded) if recorded != now => {
                    return Err(RunDirError::ArtifactChanged {
                        path: layout::path(run_dir, name),
                        recorded: recorded.clone(),
                        now: now.clone(),
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn write(&self, run_dir: &Path) -> Result<(), RunDirError> {
        let path = layout::path(run_dir, RUN_MANIFEST);
        let reserve = layout::path(run_dir, MANIFEST_RESERVE);
        match write_json_atomic(&path, self) {
            // The disk is full: give back the reserve and write once more.
            Err(e) if is_storage_full(&e) && std::fs::remove_file(&reserve).is_ok() => {
                write_json_atomic(&path, self)?;
            }
            other => other?,
        }
        keep_reserve(&reserve);
        Ok(())
    }
}

/// Name → sha256 of every immutable artifact present (lock, selection, every plan).
fn artifact_hashes(run_dir: &Path) -> Result<Vec<(String, String)>, RunDirError> {
    let mut names = vec![
        RUN_LOCK.to_string(),
        SELECTION.to_string(),
        FULL_PLAN.to_string(),
    ];
    names.extend(
        layout::smoke_attempts(run_dir)
            .into_iter()
            .map(layout::smoke_plan),
    );
    let mut hashes = Vec::with_capacity(names.len());
    for name in names {
        let path = layout::path(run_dir, &name);
        match open_json(&path).and_then(|f| sha256_reader(f).map_err(io(&path))) {
            Ok((sha256, _)) => hashes.push((name, sha256)),
            Err(e) if not_found(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hashes)
}

/// Bytes of the reserve: many times a manifest's size (a few KiB even with smoke attempts).
const RESERVE_BYTES: u64 = 64 * 1024;

/// True when a write failed because the file system is out of space (or quota).
pub fn is_storage_full(e: &RunDirError) -> bool {
    match e {
        RunDirError::Io { source, .. } => matches!(
            source.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        ),
        _ => false,
    }
}

/// Makes sure the reserve exists at full size; best effort. Where even the reserve does not fit
/// it is removed, so the reserve itself never fills the disk.
fn keep_reserve(reserve: &Path) {
    if std::fs::symlink_metadata(reserve).is_ok_and(|m| m.is_file() && m.len() >= RESERVE_BYTES) {
        return;
    }
    let zeros = vec![0u8; RESERVE_BYTES as usize];
    let mut create = options();
    create.write(true).create(true).truncate(true);
    let written = create.open(reserve).and_then(|mut f| {
        std::io::Write::write_all(&mut f, &zeros)?;
        f.sync_all()
    });
    if written.is_err() {
        let _ = std::fs::remove_file(reserve);
    }
}
