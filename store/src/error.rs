//! What can go wrong with the store, each error naming the store (never its password), the run
//! or the file.

use std::path::PathBuf;

/// A failure of the results store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database refused or failed a statement.
    #[error("results store {store}: {detail}")]
    Database {
        /// The store, as [`crate::backend::describe`] names it (no credentials).
        store: String,
        /// The database's message.
        detail: String,
    },
    /// The store location is of no accepted form (its text is never repeated: it may hold a
    /// password).
    #[error("results store: {0}")]
    Location(crate::backend::LocationError),
    /// The store was written by a newer program (a migration this build does not know).
    #[error(
        "results store {store} is at schema version {found}; this build knows up to {known}: \
         upgrade openbench-inference"
    )]
    NewerSchema {
        /// The store.
        store: String,
        /// The store's version.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// The run directory failed verification (lock, dataset, records): nothing was stored.
    #[error("{}: not published: {detail}", run_dir.display())]
    Unverified {
        /// The run directory.
        run_dir: PathBuf,
        /// What failed, as `report` says it.
        detail: String,
    },
    /// The run is already stored as complete, with other content.
    #[error(
        "run {run_id} is already stored as complete with other content (stored {stored}, \
         now {now}): a complete run's records do not change, so this is refused"
    )]
    Conflict {
        /// The run.
        run_id: String,
        /// The stored content hash.
        stored: String,
        /// The run directory's content hash now.
        now: String,
    },
    /// `history --baseline` named a run that cannot be a baseline.
    #[error("history --baseline {run_id}: {detail}")]
    Baseline {
        /// The run asked for.
        run_id: String,
        /// Why it cannot be one.
        detail: String,
    },
    /// A snapshot could not be published (unknown or unfinished run, another approval).
    #[error("snapshot of run {run_id}: {detail}")]
    Snapshot {
        /// The run named.
        run_id: String,
        /// Why it was refused.
        detail: String,
    },
    /// A stored value is not what the schema promises.
    #[error("results store {store}: run {run_id}: {detail}")]
    Corrupt {
        /// The store.
        store: String,
        /// The run.
        run_id: String,
        /// What is wrong.
        detail: String,
    },
    /// An output file could not be written.
    #[error("{}: {detail}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
}
