//! The run directory, with one owner: where every file lives ([`layout`]), what each file holds
//! ([`schema`]), how files are written ([`write`], [`append`]), which records count
//! ([`records`]), how a live run is followed ([`follow`]) and who may write ([`writer_lock`]).
//!
//! The coordinator writes through this module; `watch`, `report` and the workflow read the same
//! types. The on-disk format is the reference runner's; nothing here may change it.

pub mod append;
pub mod chain;
pub mod follow;
pub mod layout;
pub mod lines;
pub mod manifest;
pub mod open;
pub mod reading;
pub mod records;
pub mod round_requests;
pub mod schema;
pub mod write;
pub mod writer_lock;

pub use append::{RunWriter, repair};
pub use follow::{Followed, LineFollower};
pub use layout::*;
pub use open::{open_json, open_read, read_bytes, refuse_links};
pub use reading::{OpenedRun, open_run};
pub use records::{
    CountingRecords, ReadStats, counting_records, lines_of, read_counting, refuse_strays,
};
pub use round_requests::{RotationBasis, RoundRequests};
pub use schema::*;
pub use write::{
    JsonlWriter, json_bytes, keep_committed_lines, push_line, read_json, repair_jsonl, sync_dir,
    write_atomic, write_atomic_with, write_json_atomic, write_json_once, write_once,
};
pub use writer_lock::WriterLock;

use std::path::PathBuf;

/// A run-directory problem, naming the file (and line, for JSON lines).
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// An I/O error on a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// A JSON (de)serialisation error.
    #[error("{}{}: {source}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line, when reading JSON lines.
        line: Option<u64>,
        /// Parser error.
        source: serde_json::Error,
    },
    /// An immutable artifact already exists with different content.
    #[error("{path} is immutable and already holds different content; refusing to rewrite it")]
    Immutable {
        /// The file.
        path: PathBuf,
    },
    /// The run directory holds no results file.
    #[error("{0}: no raw/results.jsonl nor raw/results-attempt-N.jsonl")]
    NoResults(PathBuf),
    /// A run-directory file is a symbolic link: it is never followed (the link could send a
    /// write anywhere the user may write).
    #[error(
        "{path} is a symbolic link (to {target}); a run directory's files are never opened \
         through a link: replace it with the file itself"
    )]
    Symlink {
        /// The link.
        path: PathBuf,
        /// Where it points.
        target: String,
    },
    /// A run-directory file is a FIFO, a device or a folder where a regular file belongs.
    #[error("{path} is {kind}, not a regular file; refusing to open it")]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// The run directory holds symbolic links (found when a writer takes it).
    #[error(
        "{dir} holds symbolic link(s): {links}; a run directory's files are never opened through \
         a link: replace each with the file itself"
    )]
    Links {
        /// The run directory.
        dir: PathBuf,
        /// Every link, with where it points.
        links: String,
    },
    /// An immutable artifact no longer has the hash the run manifest recorded for it.
    #[error(
        "{path} was changed after it was written (the run manifest recorded sha256 {recorded}, \
         it now has {now}); an immutable artifact is never edited: restore it"
    )]
    ArtifactChanged {
        /// The artifact.
        path: PathBuf,
        /// The hash the manifest recorded.
        recorded: String,
        /// The hash it has now.
        now: String,
    },
    /// Records this run did not write (another run's, or outside its plan).
    #[error(
        "{path}: {count} record(s) this run did not write: {first}; refusing to go on (remove \
         those lines, or move them to their own run, and try again)"
    )]
    Strays {
        /// The records file.
        path: PathBuf,
        /// How many.
        count: usize,
        /// The first few, each with its line, request and reason.
        first: String,
    },
    /// A run-directory file no longer holds what was committed (see [`chain`]).
    #[error("{}: {detail}; a run directory is never edited after it is written", path.display())]
    Tampered {
        /// The file.
        path: PathBuf,
        /// What differs, naming the line.
        detail: String,
    },
    /// A JSON-lines line longer than [`lines::RECORD_LINE_BYTES`].
    #[error(
        "{}:{line}: longer than the {limit}-byte limit for one line; refusing to read it",
        path.display()
    )]
    LineTooLong {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// The bound.
        limit: u64,
    },
    /// A run-directory file larger than the bound for its kind.
    #[error("{}: larger than the {limit}-byte limit for this file; refusing to read it", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The bound.
        limit: u64,
    },
    /// Another process holds the run directory's writer lock.
    #[error(
        "{dir} is being written by another process ({holder}); refusing to open it a second time"
    )]
    Busy {
        /// The run directory.
        dir: PathBuf,
        /// Who holds it, as recorded in the lock file (pid and command).
        holder: String,
    },
}
