//! Coordinator errors, each naming the file, field, provider or input it concerns.

use openbench_common::rundir::RunDirError;
use std::path::PathBuf;

/// Everything that can stop a run from starting or continuing.
#[derive(Debug, thiserror::Error)]
pub enum CoordinatorError {
    /// Starting the simulator, a probe or a client failed.
    #[error("{what}: {source}")]
    Setup {
        /// What was being set up (names the region, provider or URL).
        what: String,
        /// Why it failed: the underlying error, or a sentence when there is none.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A run-directory file could not be read or written.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// The workflow could not plan the run (a dataset too small for its plan, say) or write the
    /// artifacts it locks.
    #[error("workflow {workflow}: {source}")]
    Plan {
        /// The workflow's name.
        workflow: String,
        /// Its error.
        source: openbench_common::workflow::WorkflowError,
    },
    /// A resume found inputs that differ from the lock.
    #[error("refusing to resume {lock}: {}", changes.join("; "))]
    LockMismatch {
        /// The lock file.
        lock: PathBuf,
        /// One entry per changed input (spec, dataset, adapters, tokenizer, code).
        changes: Vec<String>,
    },
    /// The run directory cannot be resumed as asked.
    #[error("{dir}: {message}")]
    Resume {
        /// The run directory.
        dir: PathBuf,
        /// Why.
        message: String,
    },
    /// The workflow refused (dataset, canned answers).
    #[error("workflow: {0}")]
    Workflow(String),
    /// The workflow could not load the dataset named in the spec.
    #[error("workflow: dataset {}: {source}", dir.display())]
    Dataset {
        /// The dataset directory.
        dir: PathBuf,
        /// The workflow's error.
        source: openbench_common::workflow::WorkflowError,
    },
    /// A probe differs from this run: other code or another tokenizer (found by `Describe`).
    #[error("region {region}: the probe's {field} differs: {message}")]
    ProbeMismatch {
        /// The region.
        region: String,
        /// The `Describe` field that differs (`code_digest`, `tokenizer_sha256`).
        field: String,
        /// Both values (abbreviated) and what it means.
        message: String,
    },
    /// A probe refused a setup call (`Describe`, `OpenSession`) or did not answer it.
    #[error("region {region}: the probe refused {rpc}: {message}")]
    ProbeRefused {
        /// The region.
        region: String,
        /// The call (`Describe`, `OpenSession`).
        rpc: String,
        /// The probe's status code and message (names the provider and variable when a
        /// credential is missing).
        message: String,
    },
    /// The coordinator actor failed.
    #[error("coordinator actor: {0}")]
    Actor(String),
}
