//! The load workflow as the runner sees it ([`LoadWorkflow`], registry name `load`): the
//! `load:` section checked at `init`, a schedule of one load phase per step (a saturation
//! search's chosen one at a time from the records), the task families' items (`openbench-tasks`,
//! as micro-single-task sends them) when the workload is `tasks`, and the report read back from the raw records (docs/load.md).

pub mod agent;
mod agent_data;
pub mod conversation;
pub mod follow_up;
mod plan;
pub mod run_data;
mod section;
mod slot_replay;
pub mod store_rows;
mod workload;

pub use plan::LaneLayout;
pub use run_data::RunContext;
pub use section::SECTION;
pub use workload::{StepSource, Workload};

use crate::report;
use crate::spec::{JsonlFormat, LoadSection, WorkloadSpec};
use crate::trace::{read_traces, trace_paths};
use crate::workload::jsonl::{FilePrompt, parse_prompts};
use openbench_common::hash::sha256_hex;
use openbench_common::record::TerminalRecord;
use openbench_common::rundir::{self as layout, RunLock, counting_records, read_json};
use openbench_common::schedule::{Phase, Schedule, lanes};
use openbench_common::spec::{LoadedSpec, Spec};
use openbench_common::workflow::{
    CannedAnswer, CompareSettings, DatasetRelease, PlanInputs, ReportOptions, ReportOutcome,
    Workflow, WorkflowError, input_files_sha256, smoke_problem,
};
use openbench_tasks::dataset;
use openbench_tasks::scoring::GoldRef;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The dataset manifest name that means "no dataset" (synthetic and file workloads).
pub const NO_DATASET: &str = openbench_common::spec::NO_DATASET_MANIFEST;

/// The load workflow.
pub struct LoadWorkflow;

impl Workflow for LoadWorkflow {
    fn name(&self) -> &'static str {
        "load"
    }
    fn description(&self) -> &'static str {
        "providers under load: closed and open loops, sweeps to saturation, goodput, ITL"
    }
    fn check_spec(&self, spec: &mut Spec) -> Vec<String> {
        section::check(spec)
    }
    fn item_groups(&self, spec: &Spec) -> Vec<String> {
        let group = match section::read(spec).map(|s| s.workload) {
            Ok(WorkloadSpec::Tasks) => "tasks",
            Ok(WorkloadSpec::Jsonl { .. }) => "file",
            _ => "synthetic",
        };
        vec![group.to_string()]
    }
    fn dataset_problems(&self, spec: &Spec, dataset: &DatasetRelease) -> Vec<String> {
        let Ok(section) = section::read(spec) else {
            return Vec::new();
        };
        match &section.workload {
            WorkloadSpec::Tasks if dataset.items.values().all(Vec::is_empty) => vec![
                "dataset: the `tasks` workload needs the micro-single-task release \
                 (dataset.source, dataset.manifest), not `none`"
                    .into(),
            ],
            _ => Vec::new(),
        }
    }
    fn section_file_problems(&self, spec: &Spec, dataset_dir: &Path) -> Vec<String> {
        let Some(written) = section::as_written(spec) else {
            return Vec::new();
        };
        let mut problems = match &written.workload {
            WorkloadSpec::Jsonl { path, format, .. } if !path.trim().is_empty() => {
                read_file(dataset_dir, path, *format)
                    .err()
                    .unwrap_or_default()
            }
            _ => Vec::new(),
        };
        if let Err(trace_problems) =
            read_traces(&written, dataset_dir, spec.request.max_output_tokens)
        {
            problems.extend(trace_problems);
        }
        problems
    }
    fn input_files(&self, spec: &Spec, dataset: &DatasetRelease) -> Vec<(String, PathBuf)> {
        let Ok(section) = section::read(spec) else {
            return Vec::new();
        };
        let mut files = Vec::new();
        if let WorkloadSpec::Jsonl { path, .. } = &section.workload {
            files.push((path.clone(), dataset.dir.join(path)));
        }
        for path in trace_paths(&section) {
            let full = dataset.dir.join(&path);
            files.push((path, full));
        }
        files
    }
    fn load_dataset(&self, dir: &Path, manifest: &str) -> Result<DatasetRelease, WorkflowError> {
        if manifest == NO_DATASET {
            return Ok(DatasetRelease {
                dir: dir.to_path_buf(),
                release_hash: sha256_hex(NO_DATASET),
                file_hashes: BTreeMap::new(),
                items: BTreeMap::new(),
            });
        }
        dataset::load_release(dir, manifest)
            .map(|release| release.to_dataset_release())
            .map_err(|e| WorkflowError(Box::new(e)))
    }
    fn plan(&self, inputs: &PlanInputs<'_>, attempt: u32) -> Result<Schedule, WorkflowError> {
        let ctx = context(inputs.spec, inputs.dataset, false)?;
        if let Workload::Synthetic(synthetic) = &*ctx.workload {
            synthetic
                .prompt(0)
                .map_err(|e| WorkflowError(Box::new(e)))?;
        }
        let phases = if attempt == 0 {
            plan::first_steps(&ctx.section, &ctx.traces)
                .iter()
                .map(|step| plan::step_phase(step, &ctx.section, &ctx.layout, &ctx.workload))
                .collect()
        } else {
            vec![plan::smoke_phase(&ctx.layout, &ctx.workload)]
        };
        Ok(Schedule {
            version: inputs.spec.benchmark.schedule_version.clone(),
            attempt,
            phases,
        })
    }
    fn next_phases(
        &self,
        inputs: &PlanInputs<'_>,
        schedule: &Schedule,
        records: &BTreeMap<String, TerminalRecord>,
    ) -> Result<Vec<Phase>, WorkflowError> {
        if schedule.attempt != 0 {
            return Ok(Vec::new());
        }
        let ctx = context(inputs.spec, inputs.dataset, true)?;
        if ctx.section.saturation.is_none() {
            return Ok(Vec::new());
        }
        // The steps with records, replayed; on a resume they run past the schedule so far, and
        // only its own steps decide what comes next.
        let ran = run_data::steps_run(&ctx, records);
        let Some(ran) = ran.get(..schedule.phases.len()) else {
            // A step of the schedule without records: nothing to decide from yet.
            return Ok(Vec::new());
        };
        let mut history = Vec::new();
        for (step, mine) in ran {
            let rate = step.model.target_rate().unwrap_or(0.0);
            history.push((rate, ctx.sustained(step, mine)));
        }
        Ok(plan::next_step(&ctx.section, &history)
            .map(|step| plan::step_phase(&step, &ctx.section, &ctx.layout, &ctx.workload))
            .into_iter()
            .collect())
    }
    fn smoke_failures(
        &self,
        schedule: &Schedule,
        records: &BTreeMap<String, TerminalRecord>,
    ) -> Vec<String> {
        let mut failures = Vec::new();
        for index in 0..schedule.phases.len() {
            for id in schedule.load_request_ids(index) {
                if let Some(why) = smoke_problem(records.get(&id)) {
                    failures.push(format!("{id}: {why}"));
                }
            }
        }
        failures
    }
    fn simulator_answers(
        &self,
        dataset: &DatasetRelease,
    ) -> Result<Vec<CannedAnswer>, WorkflowError> {
        // The agent family's scripts, so a simulated agent run makes its calls and answers.
        let mut answers = crate::agent_family::canned_answers();
        if dataset.items.is_empty() {
            return Ok(answers);
        }
        answers.extend(
            dataset::canned::canned_answers(dataset).map_err(|e| WorkflowError(Box::new(e)))?,
        );
        // Conversations' follow-ups, so a simulated run can answer them right.
        let items: Vec<_> = dataset.items.values().flatten().cloned().collect();
        answers.extend(follow_up::canned_follow_ups(&items));
        Ok(answers)
    }
    fn report(
        &self,
        run_dir: &Path,
        _options: &ReportOptions,
    ) -> Result<ReportOutcome, WorkflowError> {
        let results = load_results(run_dir)?;
        report::write_reports(run_dir, &results)
    }
    fn load_figures(
        &self,
        run_dir: &Path,
    ) -> Result<Option<openbench_common::load_figures::LoadFigures>, WorkflowError> {
        store_rows::figures(run_dir).map(Some)
    }
    fn compare(
        &self,
        run_a: &Path,
        run_b: &Path,
        out_dir: &Path,
        settings: CompareSettings,
    ) -> Result<Vec<PathBuf>, WorkflowError> {
        let a = load_results(run_a)?;
        let b = load_results(run_b)?;
        report::compare_runs(&a, &b, out_dir, settings)
    }
}

/// The prompts of a `jsonl` workload's file (its path relative to the dataset's folder, which
/// `dataset: {source: ., manifest: none}` makes the spec's), or every broken line, each naming
/// the field and line.
fn read_file(
    dataset_dir: &Path,
    path: &str,
    format: JsonlFormat,
) -> Result<Vec<FilePrompt>, Vec<String>> {
    let full = dataset_dir.join(path);
    let bytes = crate::workload::jsonl::read_prompt_file(&full)
        .map_err(|e| vec![format!("load.workload.path: {}: {e}", full.display())])?;
    let (prompts, problems) = parse_prompts(&bytes, format);
    if !problems.is_empty() {
        return Err(problems
            .into_iter()
            .map(|p| format!("load.workload.path: {}: {p}", full.display()))
            .collect());
    }
    if prompts.is_empty() {
        return Err(vec![format!(
            "load.workload.path: {}: holds no prompt",
            full.display()
        )]);
    }
    Ok(prompts)
}

/// Refuses a run whose prompt or trace file is no longer the one its lock hashed, naming the
/// file: the report rebuilds each request's prompt (and a trace step's schedule) from it.
fn refuse_changed_files(
    spec: &Spec,
    dataset: &DatasetRelease,
    lock: &RunLock,
) -> Result<(), WorkflowError> {
    let files = LoadWorkflow.input_files(spec, dataset);
    let traces = section::read(spec)
        .map(|s| trace_paths(&s))
        .unwrap_or_default();
    let now = input_files_sha256(&files);
    for (name, path) in &files {
        if lock.input_files_sha256.get(name) != now.get(name) {
            let kind = if traces.contains(name) {
                "trace"
            } else {
                "prompt"
            };
            return Err(WorkflowError(
                format!(
                    "{kind} file {}: changed since run {} was locked (sha256 differs from the \
                     lock's)",
                    path.display(),
                    lock.run_id
                )
                .into(),
            ));
        }
    }
    Ok(())
}

/// The run's section, lanes, workload and (with `score`, for the `tasks` workload) gold.
pub fn context(
    spec: &Spec,
    dataset: &DatasetRelease,
    score: bool,
) -> Result<RunContext, WorkflowError> {
    let section: LoadSection = section::of(spec)?;
    let file = match &section.workload {
        WorkloadSpec::Jsonl { path, format, .. } => read_file(&dataset.dir, path, *format)
            .map_err(|problems| WorkflowError(problems.join("; ").into()))?,
        _ => Vec::new(),
    };
    let traces = read_traces(&section, &dataset.dir, spec.request.max_output_tokens)
        .map_err(|problems| WorkflowError(problems.join("; ").into()))?;
    let items = dataset.items.values().flatten().cloned().collect();
    let workload = Workload::new(&section, file, items, spec.request.max_output_tokens);
    let gold = match (&section.workload, score) {
        (WorkloadSpec::Tasks, true) => Some(gold_of(dataset, &spec.dataset.manifest)?),
        _ => None,
    };
    Ok(RunContext {
        layout: LaneLayout::new(lanes(spec), &spec.region_names(), &section.ignore_eos),
        section,
        workload: Arc::new(workload),
        gold,
        traces,
    })
}

/// Gold answers of the release, by item id, exactly as micro-single-task scores them.
fn gold_of(
    dataset: &DatasetRelease,
    manifest: &str,
) -> Result<BTreeMap<String, GoldRef>, WorkflowError> {
    let release =
        dataset::load_release(&dataset.dir, manifest).map_err(|e| WorkflowError(Box::new(e)))?;
    Ok(release
        .rows()
        .iter()
        .map(|row| (row.id.clone(), GoldRef::from_gold(&row.gold, &row.aliases)))
        .collect())
}

/// A load run directory read back: its lock, spec (refused when it changed since the lock),
/// dataset, records and events, as the report's input.
pub fn load_results(run_dir: &Path) -> Result<report::LoadResults, WorkflowError> {
    let run = read_run(run_dir)?;
    let mut results = run_data::results_of(
        &run.ctx,
        &run.lock.run_id,
        &run.records,
        &run.chunks,
        run.notes,
    );
    results.health = report::validity::run_health(run_dir);
    Ok(results)
}

/// A load run directory as read for its report (before any figure is computed).
pub(crate) struct RunRead {
    /// The lock.
    pub lock: RunLock,
    /// The run's section, lanes, workload and gold.
    pub ctx: RunContext,
    /// The committed records by request id.
    pub records: BTreeMap<String, TerminalRecord>,
    /// Answer-bearing events by request id (offsets and read groups).
    pub chunks: BTreeMap<String, run_data::AnswerStream>,
    /// Lines the report states in its header.
    pub notes: Vec<String>,
}

/// Reads and verifies a load run directory as [`load_results`] does.
pub(crate) fn read_run(run_dir: &Path) -> Result<RunRead, WorkflowError> {
    let fail = |e: layout::RunDirError| WorkflowError(Box::new(e));
    let lock: RunLock = read_json(&layout::path(run_dir, layout::RUN_LOCK)).map_err(fail)?;
    let spec_path = Path::new(&lock.spec_path);
    let spec = LoadedSpec::load_checked(spec_path, |spec| {
        spec.fill_benchmark_defaults(
            LoadWorkflow.name(),
            &LoadWorkflow.default_schedule_version(),
        );
        section::check(spec)
    })
    .map_err(|e| WorkflowError(Box::new(e)))?;
    if sha256_hex(&spec.bytes) != lock.spec_sha256 {
        return Err(WorkflowError(
            format!(
                "spec {}: changed since run {} was locked (sha256 differs from the lock's)",
                spec_path.display(),
                lock.run_id
            )
            .into(),
        ));
    }
    let dataset =
        LoadWorkflow.load_dataset(Path::new(&lock.dataset_dir), &lock.dataset_manifest)?;
    refuse_changed_files(&spec.spec, &dataset, &lock)?;
    let ctx = context(&spec.spec, &dataset, true)?;
    let records = counting_records(&layout::path(run_dir, layout::FULL_RESULTS)).map_err(fail)?;
    let chunks = run_data::answer_events(&layout::path(run_dir, layout::STREAM_EVENTS))?;
    let unheld: Vec<&str> = spec
        .spec
        .providers
        .iter()
        .filter(|p| !ctx.section.ignore_eos.contains(&p.key))
        .map(|p| p.key.as_str())
        .collect();
    let mut notes = Vec::new();
    if !unheld.is_empty() && !matches!(ctx.section.workload, WorkloadSpec::Tasks) {
        notes.push(format!(
            "output length is a ceiling only (no ignore_eos) for: {}",
            unheld.join(", ")
        ));
    }
    Ok(RunRead {
        lock,
        ctx,
        records,
        chunks,
        notes,
    })
}
