//! Inputs of a run and its directory: loading spec, dataset and credentials (no network), creating
//! a locked run directory, and reopening one for a resume only when every locked hash still holds.

use crate::error::CoordinatorError;
use crate::lock::{InputHashes, build_lock, lock_drift};
use openbench_common::credentials::Credentials;
use openbench_common::rundir::{
    self as layout, RunDirError, RunLock, RunManifest, WriterLock, json_bytes, read_json,
    write_once,
};
use openbench_common::spec::{LoadedSpec, resolve_beside};
use openbench_common::workflow::{DatasetRelease, PlanInputs, Workflow};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// Everything a run reads, validated and loaded before any network call.
#[derive(Clone)]
pub struct RunInputs {
    /// The spec and its bytes.
    pub spec: LoadedSpec,
    /// The workflow the spec names.
    pub workflow: Arc<dyn Workflow>,
    /// The dataset release.
    pub dataset: DatasetRelease,
    /// The credentials this process needs itself: every declared one when a region's probe runs
    /// in-process, none when every probe is remote (values never printed).
    pub credentials: Credentials,
    /// Digest of the sources built into the binary.
    pub code_sha256: String,
}

/// Loads the spec, the dataset (through the workflow) and the credentials in-process probes need
/// (`Spec::local_credential_names`), from the process environment or `./.env`. No network.
pub fn prepare_inputs(
    spec_path: &Path,
    workflow: Arc<dyn Workflow>,
    code_sha256: &str,
) -> Result<RunInputs, CoordinatorError> {
    prepare_inputs_for(spec_path, workflow, code_sha256, None)
}

/// [`prepare_inputs`] for the providers named in `only` (all when `None`): the others are left
/// out of the run, its lock and the credentials it demands (a name not in the spec is a problem
/// listed with the spec's). The workflow checks its section against every provider first.
pub fn prepare_inputs_for(
    spec_path: &Path,
    workflow: Arc<dyn Workflow>,
    code_sha256: &str,
    only: Option<&[String]>,
) -> Result<RunInputs, CoordinatorError> {
    let spec = LoadedSpec::load_checked(spec_path, |spec| {
        let mut problems = checked_by_workflow(spec, spec_path, workflow.as_ref());
        if let Some(only) = only {
            problems.extend(keep_providers(spec, only));
        }
        problems
    })
    .map_err(|e| CoordinatorError::Setup {
        what: format!("spec {}", spec_path.display()),
        source: e.into(),
    })?;
    if spec.spec.benchmark.workflow != workflow.name() {
        return Err(CoordinatorError::Setup {
            what: format!("spec {} benchmark.workflow", spec_path.display()),
            source: format!(
                "{:?} does not match the selected workflow {:?}",
                spec.spec.benchmark.workflow,
                workflow.name()
            )
            .into(),
        });
    }
    let credentials = Credentials::from_env(&spec.spec.local_credential_names()).map_err(|e| {
        CoordinatorError::Setup {
            what: format!("credentials for spec {}", spec_path.display()),
            source: e.into(),
        }
    })?;
    let dir = spec.dataset_dir();
    let dataset = workflow
        .load_dataset(&dir, &spec.spec.dataset.manifest)
        .map_err(|source| CoordinatorError::Dataset {
            dir: dir.clone(),
            source,
        })?;
    Ok(RunInputs {
        spec,
        workflow,
        dataset,
        credentials,
        code_sha256: code_sha256.to_string(),
    })
}

/// The workflow's defaults and problems for its own section and the files it names, only when
/// the spec names it: every problem of both parts is listed at once.
fn checked_by_workflow(
    spec: &mut openbench_common::spec::Spec,
    spec_path: &Path,
    workflow: &dyn Workflow,
) -> Vec<String> {
    spec.fill_benchmark_defaults(workflow.name(), &workflow.default_schedule_version());
    if spec.benchmark.workflow != workflow.name() {
        return Vec::new();
    }
    let mut problems = workflow.check_spec(spec);
    let dataset_dir = resolve_beside(spec_path, &spec.dataset.source);
    problems.extend(workflow.section_file_problems(spec, &dataset_dir));
    problems
}

/// Keeps only the providers named in `only`, in the spec's order; a name the spec lacks is a
/// problem naming the known keys.
fn keep_providers(spec: &mut openbench_common::spec::Spec, only: &[String]) -> Vec<String> {
    let known: Vec<String> = spec.providers.iter().map(|p| p.key.clone()).collect();
    let problems: Vec<String> = only
        .iter()
        .filter(|name| !known.contains(name))
        .map(|name| {
            format!(
                "--providers: no provider {name:?} in the spec; its providers: {}",
                known.join(", ")
            )
        })
        .collect();
    spec.providers.retain(|p| only.contains(&p.key));
    problems
}

/// The spec path recorded in a run's lock (for resumes given only `--run-dir`).
pub fn locked_spec_path(run_dir: &Path) -> Result<PathBuf, CoordinatorError> {
    let lock: RunLock = read_json(&layout::path(run_dir, layout::RUN_LOCK))?;
    Ok(PathBuf::from(lock.spec_path))
}

/// An open, locked run directory, held by this process alone for as long as any clone lives.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// The directory.
    pub dir: PathBuf,
    /// Its lock.
    pub lock: RunLock,
    /// The advisory writer lock: a second writer on this directory is refused while it is held.
    pub writer: Arc<WriterLock>,
}

impl RunDir {
    /// Creates `<run_root>/<workflow>/run-YYYYMMDD-HHMMSS` (suffixed `-2`, `-3`… if taken) and
    /// writes the lock, the selection and an `initialized` manifest. `command` names the holder
    /// of the writer lock (`run`, `smoke`, `init`).
    pub fn create(
        inputs: &RunInputs,
        approval_id: Option<&str>,
        command: &str,
    ) -> Result<RunDir, CoordinatorError> {
        let parent = inputs
            .spec
            .run_root()
            .join(&inputs.spec.spec.benchmark.workflow);
        let dir = new_run_dir(&parent)?;
        RunDir::create_in(inputs, &dir, approval_id, command)
    }

    /// Locks a run in `dir`, a fresh directory from [`new_run_dir`] (which may already hold the
    /// run's own spec, as the `load` command writes it): the lock, the selection and an
    /// `initialized` manifest, as [`RunDir::create`] does.
    pub fn create_in(
        inputs: &RunInputs,
        dir: &Path,
        approval_id: Option<&str>,
        command: &str,
    ) -> Result<RunDir, CoordinatorError> {
        let dir = dir.to_path_buf();
        let writer = Arc::new(WriterLock::acquire(&dir, command)?);
        let run_id = dir
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let hashes = input_hashes(inputs);
        let lock = build_lock(
            &run_id,
            &inputs.spec,
            &inputs.dataset,
            &hashes,
            inputs.workflow.item_groups(&inputs.spec.spec),
            approval_id.map(str::to_string),
        );
        let lock_path = layout::path(&dir, layout::RUN_LOCK);
        write_once(&lock_path, &json_bytes(&lock_path, &lock)?)?;
        lock_artifacts(inputs, &dir)?;
        let mut manifest = RunManifest::new(&run_id, &lock.workflow);
        manifest.save(&dir)?;
        Ok(RunDir { dir, lock, writer })
    }

    /// Opens an existing run for a resume: refuses at once when another process writes it, when
    /// any locked hash changed, and when the lock itself was edited (its hash is not the one the
    /// manifest recorded, or a field no longer follows from the inputs it locks), naming which.
    pub fn open(inputs: &RunInputs, dir: &Path, command: &str) -> Result<RunDir, CoordinatorError> {
        let lock_path = layout::path(dir, layout::RUN_LOCK);
        if !lock_path.exists() {
            return Err(CoordinatorError::Resume {
                dir: dir.to_path_buf(),
                message: format!("no {} here: not a run directory", layout::RUN_LOCK),
            });
        }
        let writer = Arc::new(WriterLock::acquire(dir, command)?);
        let lock: RunLock = read_json(&lock_path)?;
        if lock.workflow != inputs.spec.spec.benchmark.workflow {
            return Err(CoordinatorError::Resume {
                dir: dir.to_path_buf(),
                message: format!(
                    "run is for workflow {:?}, the spec names {:?}",
                    lock.workflow, inputs.spec.spec.benchmark.workflow
                ),
            });
        }
        if let Ok(manifest) = RunManifest::load(dir) {
            manifest.verify_artifacts(dir)?;
        }
        let hashes = input_hashes(inputs);
        let mut changes = hashes.changes_against(&lock);
        if changes.is_empty() {
            let rebuilt = build_lock(
                &lock.run_id,
                &inputs.spec,
                &inputs.dataset,
                &hashes,
                inputs.workflow.item_groups(&inputs.spec.spec),
                lock.approval_id.clone(),
            );
            changes = lock_drift(&lock, &rebuilt);
        }
        if !changes.is_empty() {
            return Err(CoordinatorError::LockMismatch {
                lock: lock_path,
                changes,
            });
        }
        lock_artifacts(inputs, dir)?;
        Ok(RunDir {
            dir: dir.to_path_buf(),
            lock,
            writer,
        })
    }

    /// Opens `dir` when given, otherwise creates a new run.
    pub fn open_or_create(
        inputs: &RunInputs,
        dir: Option<&Path>,
        approval_id: Option<&str>,
        command: &str,
    ) -> Result<RunDir, CoordinatorError> {
        match dir {
            Some(dir) => RunDir::open(inputs, dir, command),
            None => RunDir::create(inputs, approval_id, command),
        }
    }

    /// The run id (the directory's name).
    pub fn run_id(&self) -> &str {
        &self.lock.run_id
    }
}

/// Makes a new, empty run directory under `parent`: `run-YYYYMMDD-HHMMSS`, suffixed `-2`, `-3`…
/// when taken (parents created as needed).
pub fn new_run_dir(parent: &Path) -> Result<PathBuf, CoordinatorError> {
    std::fs::create_dir_all(parent).map_err(|source| RunDirError::Io {
        path: parent.to_path_buf(),
        source,
    })?;
    let stamp = openbench_common::clock::run_stamp(SystemTime::now());
    let mut n = 1;
    loop {
        let name = if n == 1 {
            format!("run-{stamp}")
        } else {
            format!("run-{stamp}-{n}")
        };
        let dir = parent.join(&name);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
            Err(source) => return Err(RunDirError::Io { path: dir, source }.into()),
        }
    }
}

/// The hashes of the run's inputs as they are on disk now.
fn input_hashes(inputs: &RunInputs) -> InputHashes {
    let files = inputs
        .workflow
        .input_files(&inputs.spec.spec, &inputs.dataset);
    InputHashes::compute(&inputs.spec, &inputs.dataset, &inputs.code_sha256, &files)
}

/// Writes (or, on a resume, checks) the artifacts the workflow derives when a run is locked.
fn lock_artifacts(inputs: &RunInputs, dir: &Path) -> Result<(), CoordinatorError> {
    let plan_inputs = PlanInputs {
        spec: &inputs.spec.spec,
        dataset: &inputs.dataset,
        run_dir: dir,
    };
    inputs
        .workflow
        .lock_artifacts(&plan_inputs)
        .map_err(|source| CoordinatorError::Plan {
            workflow: inputs.workflow.name().to_string(),
            source,
        })
}
