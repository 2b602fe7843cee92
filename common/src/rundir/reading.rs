//! Opening a run directory to read it whole, the one way `report` and `publish` both do: the
//! writer lock first (a run still being written is refused, and so is any symbolic link in the
//! directory), then the manifest, every immutable artifact checked against the hash it recorded
//! (streamed, bounded), the lock read through the bounded run-directory reader, and last the
//! records chain ([`super::chain`]) checked against the records and the manifest. Nothing is read
//! before the lock is held, and nothing is read with a plain `std::fs::read`: a FIFO, a device or
//! a file grown to gigabytes in the directory is refused at once, naming it.

use super::RunDirError;
use super::chain::{self, Integrity};
use super::layout::{self, PlanFileNames, RUN_LOCK, RUN_MANIFEST};
use super::open::read_bytes;
use super::schema::{RunLock, RunManifest};
use super::write::not_found;
use super::writer_lock::WriterLock;
use std::path::Path;

/// A run directory opened for reading.
pub struct OpenedRun {
    /// The writer lock, held until this is dropped.
    pub writer: WriterLock,
    /// The run lock.
    pub lock: RunLock,
    /// Its bytes as read (hashed and stored by `publish`).
    pub lock_bytes: Vec<u8>,
    /// The run manifest (absent in a directory `init` never finished).
    pub manifest: Option<RunManifest>,
    /// How the reported records stand against their chain (`None` without any records file).
    pub integrity: Option<Integrity>,
}

/// Opens `run_dir` for `command` (named in the writer lock); see the module docs.
pub fn open_run(run_dir: &Path, command: &str) -> Result<OpenedRun, RunDirError> {
    let writer = WriterLock::acquire(run_dir, command)?;
    let manifest = match RunManifest::load(run_dir) {
        Ok(manifest) => Some(manifest),
        Err(e) if not_found(&e) => None,
        Err(e) => return Err(e),
    };
    if let Some(manifest) = &manifest {
        manifest.verify_artifacts(run_dir)?;
    }
    let lock_path = layout::path(run_dir, RUN_LOCK);
    let lock_bytes = read_bytes(&lock_path)?;
    let lock: RunLock =
        serde_json::from_slice(&lock_bytes).map_err(|source| RunDirError::Json {
            path: lock_path,
            line: None,
            source,
        })?;
    if let Some(manifest) = &manifest
        && manifest.run_id != lock.run_id
    {
        return Err(RunDirError::Tampered {
            path: layout::path(run_dir, RUN_MANIFEST),
            detail: format!(
                "its run id {:?} differs from the lock's {:?}",
                manifest.run_id, lock.run_id
            ),
        });
    }
    // A full run's records file removed whole leaves its chain: that is a deletion too.
    let full = layout::path(run_dir, layout::FULL_RESULTS);
    if !full.exists() && chain::chain_path(&full).exists() {
        chain::verify(&full)?;
    }
    let integrity = match layout::reported_attempt(run_dir) {
        Some(attempt) => {
            let results = PlanFileNames::of_attempt(attempt).results;
            Some(chain::check_manifest(run_dir, &results, manifest.as_ref())?)
        }
        None => None,
    };
    Ok(OpenedRun {
        writer,
        lock,
        lock_bytes,
        manifest,
        integrity,
    })
}
