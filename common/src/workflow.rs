//! The seam between the generic runner and a workflow.
//!
//! The coordinator knows lanes, probes, run directories and how to execute a schedule; a
//! workflow knows its spec section, its dataset, what to send when (its [`Schedule`]), how to
//! judge a smoke, what the simulator should answer, how to score and how to report. The binary's
//! registry hands the coordinator a `&dyn Workflow`, so a second workflow is a sibling crate and
//! one registry line (docs/adding-a-workflow.md).

use crate::record::{Outcome, TerminalRecord};
use crate::schedule::Schedule;
use crate::spec::Spec;
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// One dataset row as the runner needs it: identity, prompt and its content hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkItem {
    /// The item's group (`Workflow::item_groups`; micro-single-task's task family).
    pub group: String,
    /// Item id, unique within the release.
    pub item_id: String,
    /// System prompt.
    pub system: String,
    /// User prompt.
    pub user: String,
    /// sha256 of the row's canonical JSON.
    pub item_hash: String,
}

/// A validated, hashed dataset release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetRelease {
    /// Folder the release was loaded from.
    pub dir: PathBuf,
    /// sha256 of the sorted `path:hash` lines (METHODOLOGY §7).
    pub release_hash: String,
    /// Path as written in the manifest → sha256 of its bytes.
    pub file_hashes: BTreeMap<String, String>,
    /// Family → its items (any order; selection sorts ids itself).
    pub items: BTreeMap<String, Vec<WorkItem>>,
}

/// Aggregate figures a workflow reports back after scoring a run, for the terminal.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOutcome {
    /// The summary table as plain text (the seed's layout).
    pub summary_table: String,
    /// Paths written, for the user to open.
    pub written: Vec<PathBuf>,
}

/// What the simulator answers to one prompt, so simulated runs exercise real scoring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CannedAnswer {
    /// The item's group (micro-single-task's task family).
    pub group: String,
    /// The exact user prompt the simulator will receive.
    pub user_prompt: String,
    /// A correct JSON answer.
    pub correct: String,
    /// A schema-valid but wrong JSON answer.
    pub incorrect: String,
}

/// What `report` may accept that it otherwise refuses. Each accepted kind is counted and stated in
/// the report's header; the default refuses both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportOptions {
    /// Count records whose request is not in the plan, or whose provider or lane is not in the
    /// run lock (`--accept-unplanned`).
    pub accept_unplanned: bool,
    /// Count a request that has more than one committed record, its last one
    /// (`--accept-duplicates`).
    pub accept_duplicates: bool,
}

/// A failure inside a workflow, phrased for a person (names the file, line or field). It wraps
/// the workflow's own error, so `source()` still reaches the I/O or parse error underneath; a
/// plain message converts with `.into()`.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct WorkflowError(pub Box<dyn std::error::Error + Send + Sync + 'static>);

/// Bootstrap settings of `compare` (see the workflow's documentation of the method).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompareSettings {
    /// Bootstrap replicates per run.
    pub replicates: usize,
    /// Seed of the resampling.
    pub seed: u64,
}

/// What a workflow plans from: the checked spec, the loaded dataset and the run directory.
#[derive(Clone, Copy)]
pub struct PlanInputs<'a> {
    /// The spec, its workflow section checked and normalised by [`Workflow::check_spec`].
    pub spec: &'a Spec,
    /// The dataset release.
    pub dataset: &'a DatasetRelease,
    /// The run directory (for artifacts the workflow writes once, such as a selection).
    pub run_dir: &'a Path,
}

/// Counts from one offline scoring pass (`score`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScoreCounts {
    /// Lines scored.
    pub scored: u64,
    /// Lines rejected.
    pub bad_lines: u64,
}

/// A dataset release a workflow generated (`dataset generate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedDataset {
    /// The seed used (the workflow's default when none was given).
    pub seed: u64,
    /// The release hash of what was written.
    pub release_hash: String,
    /// Per-family figures for the terminal, one line each (each ending in a newline).
    pub details: String,
}

/// What `bench analysis` asks a workflow to synthesise: about `records` completed records over
/// `lanes` lanes, their latencies drawn from `seed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthesisRequest {
    /// Records wanted (the workflow rounds to its own unit, such as whole rounds).
    pub records: u64,
    /// Lanes (providers), at least one.
    pub lanes: usize,
    /// Seed of the synthetic latencies.
    pub seed: u64,
}

/// A synthetic run a workflow wrote for `bench analysis`: its exact counts, and the step the
/// bench times (the workflow's report over what synthesis holds in memory).
pub struct SynthesizedRun {
    /// Records written.
    pub records: u64,
    /// Rounds (or the workflow's unit of planning) written.
    pub rounds: u64,
    /// Recomputes every derived artifact and writes the reports, as `report` does.
    pub report: Box<dyn FnOnce() -> Result<(), WorkflowError> + Send>,
}

/// What `bench fidelity` asks a workflow for: the inputs of a run of at least `rounds` rounds
/// over the given providers, written under `dir`.
#[derive(Debug, Clone, Copy)]
pub struct BenchFixtureRequest<'a> {
    /// Folder to write the dataset, the spec and the run root into.
    pub dir: &'a Path,
    /// Rounds wanted (the workflow rounds up to what it can plan).
    pub rounds: usize,
    /// The spec's provider list entries, YAML lines under `providers:` (each `  - key: …`).
    pub providers_yaml: &'a str,
}

/// What a lock holds for an input file that cannot be read: no sha256 is this, so a resume reads
/// it as changed.
pub const UNREADABLE_FILE: &str = "unreadable";

/// sha256 of each of `files` ([`Workflow::input_files`]) by name, [`UNREADABLE_FILE`] for one
/// that cannot be read: not a regular file, or over [`crate::input_file::PROMPT_FILE_BYTES`]
/// (hashed streamed through [`crate::input_file::sha256_regular`], so a FIFO or `/dev/zero`
/// named as an input file never hangs a command).
pub fn input_files_sha256(files: &[(String, PathBuf)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(name, path)| {
            let hash =
                crate::input_file::sha256_regular(path, crate::input_file::PROMPT_FILE_BYTES)
                    .map(|(hash, _)| hash)
                    .unwrap_or_else(|_| UNREADABLE_FILE.to_string());
            (name.clone(), hash)
        })
        .collect()
}

/// The refusal of an optional capability a workflow does not implement, naming the workflow.
pub fn unsupported(workflow: &str, capability: &str) -> WorkflowError {
    WorkflowError(format!("workflow {workflow:?} {capability}").into())
}

/// What a workflow provides to the runner.
pub trait Workflow: Send + Sync {
    /// Registry name (`micro-single-task`).
    fn name(&self) -> &'static str;
    /// One line for `list-workflows`.
    fn description(&self) -> &'static str;
    /// The `benchmark.schedule_version` a spec that leaves it out runs under (`<name>-v1`).
    fn default_schedule_version(&self) -> String {
        format!("{}-v1", self.name())
    }
    /// Checks the workflow's part of the spec (the keys of `benchmark` and the top-level
    /// sections the generic spec does not own: [`Spec::workflow_sections`],
    /// [`crate::spec::Benchmark::workflow_fields`]) and rewrites them normalised, defaults
    /// filled, so the lock hashes what the run uses. Returns every problem, each naming its field.
    fn check_spec(&self, spec: &mut Spec) -> Vec<String>;
    /// The groups its items fall in, in order (micro-single-task: task families), recorded in the
    /// lock as `families`.
    fn item_groups(&self, spec: &Spec) -> Vec<String> {
        let _ = spec;
        Vec::new()
    }
    /// Problems a run would meet only once it plans against `dataset` (micro-single-task: more
    /// items per family than the release holds), each naming its field; `init` lists them.
    fn dataset_problems(&self, spec: &Spec, dataset: &DatasetRelease) -> Vec<String> {
        let _ = (spec, dataset);
        Vec::new()
    }
    /// Problems of the files the workflow's section names (the load workflow's prompt file:
    /// every broken line), read from `dataset_dir` when the spec is loaded, even when the
    /// section has problems of its own, so `init` lists every problem at once. None by default.
    fn section_file_problems(&self, spec: &Spec, dataset_dir: &Path) -> Vec<String> {
        let _ = (spec, dataset_dir);
        Vec::new()
    }
    /// Files the workflow reads besides the spec and the dataset release (the load workflow's
    /// prompt file): each as the spec names it, with where it is. The lock pins their sha256, so
    /// a resume of a run whose file changed is refused, naming it. None by default.
    fn input_files(&self, spec: &Spec, dataset: &DatasetRelease) -> Vec<(String, PathBuf)> {
        let _ = (spec, dataset);
        Vec::new()
    }
    /// Loads and validates a dataset release, refusing one whose hashes disagree with its manifest.
    fn load_dataset(&self, dir: &Path, manifest: &str) -> Result<DatasetRelease, WorkflowError>;
    /// Writes the immutable artifacts a run derives from its inputs when it is locked (and checks
    /// them again on every resume), such as a selection. None by default.
    fn lock_artifacts(&self, inputs: &PlanInputs<'_>) -> Result<(), WorkflowError> {
        let _ = inputs;
        Ok(())
    }
    /// The schedule of the full run (`attempt` 0) or of smoke attempt `attempt`: what to send,
    /// to which lane, when, and what a request waits for. A pure function of the inputs, so a
    /// resume plans the same request ids.
    fn plan(&self, inputs: &PlanInputs<'_>, attempt: u32) -> Result<Schedule, WorkflowError>;
    /// For a schedule chosen as it runs (the load workflow's saturation search): the phases to
    /// append once every phase of `schedule` is done, given its records so far (request id →
    /// record); none when the schedule is complete. The runner asks after each phase ends and, on
    /// a resume, replays the questions from the records, so it must be a pure function of them.
    /// None by default (a schedule planned in full by [`Workflow::plan`]).
    fn next_phases(
        &self,
        inputs: &PlanInputs<'_>,
        schedule: &Schedule,
        records: &BTreeMap<String, TerminalRecord>,
    ) -> Result<Vec<crate::schedule::Phase>, WorkflowError> {
        let _ = (inputs, schedule, records);
        Ok(Vec::new())
    }
    /// Smoke attempts at most (a second attempt runs only when the first fails).
    fn smoke_attempts(&self, spec: &Spec) -> u32 {
        let _ = spec;
        1
    }
    /// The smoke criterion: one line per failure of an attempt's schedule, given the records
    /// that count (request id → record); empty when the smoke passed.
    fn smoke_failures(
        &self,
        schedule: &Schedule,
        records: &BTreeMap<String, TerminalRecord>,
    ) -> Vec<String>;
    /// What the embedded simulator answers to this workflow's prompts, so simulated runs exercise
    /// real scoring. None by default (the simulator then drafts its own answers).
    fn simulator_answers(
        &self,
        dataset: &DatasetRelease,
    ) -> Result<Vec<CannedAnswer>, WorkflowError> {
        let _ = dataset;
        Ok(Vec::new())
    }
    /// Recomputes every derived artifact of a run from its raw records and writes the reports,
    /// refusing records that `options` does not accept.
    fn report(
        &self,
        run_dir: &Path,
        options: &ReportOptions,
    ) -> Result<ReportOutcome, WorkflowError>;
    /// For a workflow that measures steps of load: its run directory read back and computed
    /// exactly as its report does, as the rows the results store keeps (`publish`). `None` (the
    /// default) means the run is stored as a paired run.
    fn load_figures(
        &self,
        run_dir: &Path,
    ) -> Result<Option<crate::load_figures::LoadFigures>, WorkflowError> {
        let _ = run_dir;
        Ok(None)
    }
    /// For a workflow of paired rounds: its run directory (locked by `lock`) read back and scored
    /// exactly as its report does, as the rows the results store keeps (`publish`). `None` (the
    /// default) means the store has no paired figures of this workflow's runs.
    fn paired_figures(
        &self,
        run_dir: &Path,
        lock: &crate::rundir::RunLock,
    ) -> Result<Option<crate::paired_figures::PairedFigures>, WorkflowError> {
        let _ = (run_dir, lock);
        Ok(None)
    }
    /// Compares run B against run A (two runs of this workflow) and writes the comparison's
    /// files into `out_dir`, returning their paths. A workflow without a comparison refuses.
    fn compare(
        &self,
        run_a: &Path,
        run_b: &Path,
        out_dir: &Path,
        settings: CompareSettings,
    ) -> Result<Vec<PathBuf>, WorkflowError> {
        let _ = (run_a, run_b, out_dir, settings);
        Err(WorkflowError(
            format!("workflow {} cannot compare runs", self.name()).into(),
        ))
    }
    /// Scores an answers file offline (`score`): one evaluation line per good input line to
    /// `out`, one message per bad line (`<source>:<line>: …`) to `errors`. `dataset` (folder,
    /// manifest) supplies gold for lines that do not carry their own, and is loaded only when a
    /// line needs it. A workflow without an offline scorer refuses.
    fn score_answers(
        &self,
        source: &str,
        answers: &mut dyn BufRead,
        dataset: (&Path, &str),
        out: &mut dyn Write,
        errors: &mut dyn Write,
    ) -> Result<ScoreCounts, WorkflowError> {
        let _ = (source, answers, dataset, out, errors);
        Err(unsupported(self.name(), "has no offline scorer"))
    }
    /// Generates the workflow's dataset release deterministically from `seed` (its default seed
    /// when `None`) into `out`, or its public sample. A workflow without a generator refuses.
    fn generate_dataset(
        &self,
        out: &Path,
        seed: Option<u64>,
        public_sample: bool,
    ) -> Result<GeneratedDataset, WorkflowError> {
        let _ = (out, seed, public_sample);
        Err(unsupported(self.name(), "has no dataset generator"))
    }
    /// Writes a synthetic run of this workflow into `run_dir` for `bench analysis` (records as a
    /// run would commit them, seeded and deterministic). A workflow without one refuses.
    fn synthesize_run(
        &self,
        run_dir: &Path,
        request: &SynthesisRequest,
    ) -> Result<SynthesizedRun, WorkflowError> {
        let _ = (run_dir, request);
        Err(unsupported(
            self.name(),
            "cannot synthesise a run (bench analysis)",
        ))
    }
    /// Writes the dataset and spec of a `bench fidelity` run and returns the spec's path. A
    /// workflow without a bench fixture refuses.
    fn bench_fixture(&self, request: &BenchFixtureRequest<'_>) -> Result<PathBuf, WorkflowError> {
        let _ = request;
        Err(unsupported(
            self.name(),
            "has no bench fixture (bench fidelity)",
        ))
    }
    /// Validates a release (manifest, hashes, every row; with `contract_only` false also the
    /// workflow's own deeper checks) and returns the lines that describe it for the terminal.
    /// The default checks what [`Workflow::load_dataset`] checks.
    fn validate_dataset(
        &self,
        dir: &Path,
        manifest: &str,
        contract_only: bool,
    ) -> Result<String, WorkflowError> {
        let _ = contract_only;
        let release = self.load_dataset(dir, manifest)?;
        Ok(format!(
            "{}: valid, release hash {}\n",
            release.dir.display(),
            release.release_hash
        ))
    }
}

/// Why a record fails the generic part of a smoke criterion (no record, not completed, not 2xx,
/// an empty answer), or `None` when it passes it: the part every workflow's smoke shares.
pub fn smoke_problem(record: Option<&TerminalRecord>) -> Option<String> {
    match record {
        None => Some("no terminal record".to_string()),
        Some(r) if r.outcome != Outcome::Completed => Some(format!(
            "{:?}{}",
            r.outcome,
            r.error_message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        )),
        Some(r) if !r.http_status.is_some_and(|s| (200..300).contains(&s)) => {
            Some(format!("HTTP status {:?}", r.http_status))
        }
        Some(r) if r.answer_text.trim().is_empty() => Some("empty answer".into()),
        Some(_) => None,
    }
}
