//! The micro-single-task workflow: one latency-sensitive user, small structured tasks, paired
//! rounds. Its spec section, selection and paired rounds (`plan`), the reports (`report`,
//! `html`), `compare` over two run directories, the contract part of generated specs
//! (`spec_yaml`), a synthetic run for timing them (`synthetic`) and the inputs of `bench`
//! (`bench_inputs`) live here; records are read through `openbench_common::rundir`. The dataset
//! and exact scoring (`dataset`, `scoring`: `openbench-tasks`) and the metrics, paired and
//! run-to-run comparisons (`metrics`, `paired`, `compare`'s figures: `openbench-task-metrics`)
//! are shared crates, re-exported here. The generic runner only sees the [`Workflow`] impl.

pub mod bench_inputs;
pub mod compare;
pub mod html;
pub mod plan;
pub mod report;
pub mod spec_yaml;
pub mod store_rows;
pub mod synthetic;

/// The task families' dataset and exact scorer live in `openbench-tasks` (shared with the load
/// workflow); re-exported under their old paths.
pub use openbench_tasks::{dataset, scoring};

/// The figures of task-scored runs (observations, summaries, paired comparisons) live in
/// `openbench-task-metrics` (shared with the results store); re-exported under their old paths.
pub use openbench_task_metrics::{metrics, paired};

use openbench_common::record::TerminalRecord;
use openbench_common::rundir::RunLock;
use openbench_common::schedule::Schedule;
use openbench_common::spec::Spec;
use openbench_common::workflow::{
    BenchFixtureRequest, CannedAnswer, CompareSettings, DatasetRelease, GeneratedDataset,
    PlanInputs, ReportOptions, ReportOutcome, ScoreCounts, SynthesisRequest, SynthesizedRun,
    Workflow, WorkflowError,
};
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// The workflow's registry name, also written into its runs' locks.
pub const WORKFLOW_NAME: &str = "micro-single-task";

/// The micro-single-task workflow.
pub struct MicroSingleTask;

impl Workflow for MicroSingleTask {
    fn name(&self) -> &'static str {
        WORKFLOW_NAME
    }
    fn description(&self) -> &'static str {
        "one latency-sensitive user, small structured tasks, paired rounds"
    }
    fn default_schedule_version(&self) -> String {
        String::from("micro-single-task-paired-round-robin-sha256-v1")
    }
    fn load_dataset(&self, dir: &Path, manifest: &str) -> Result<DatasetRelease, WorkflowError> {
        dataset::load_release(dir, manifest)
            .map(|release| release.to_dataset_release())
            .map_err(|e| WorkflowError(Box::new(e)))
    }
    fn check_spec(&self, spec: &mut Spec) -> Vec<String> {
        plan::MicroSpec::check(spec)
    }
    fn item_groups(&self, spec: &Spec) -> Vec<String> {
        plan::MicroSpec::read(spec)
            .map(|micro| micro.families)
            .unwrap_or_default()
    }
    fn dataset_problems(&self, spec: &Spec, dataset: &DatasetRelease) -> Vec<String> {
        let Ok(micro) = plan::MicroSpec::read(spec) else {
            return Vec::new();
        };
        let mut problems = Vec::new();
        for (field, needed) in [
            (
                "plans.full_items_per_family",
                micro.plans.full_items_per_family,
            ),
            (
                "plans.smoke_items_per_family",
                micro.plans.smoke_items_per_family,
            ),
        ] {
            for family in &micro.families {
                let available = dataset.items.get(family).map_or(0, Vec::len);
                if available < needed {
                    problems.push(format!(
                        "{field}: {needed} items per family, but family {family:?} of the \
                         dataset holds {available}"
                    ));
                }
            }
        }
        problems
    }
    fn lock_artifacts(&self, inputs: &PlanInputs<'_>) -> Result<(), WorkflowError> {
        plan::write_selection(inputs)
    }
    fn plan(&self, inputs: &PlanInputs<'_>, attempt: u32) -> Result<Schedule, WorkflowError> {
        plan::schedule(inputs, attempt)
    }
    fn smoke_attempts(&self, spec: &Spec) -> u32 {
        plan::MicroSpec::read(spec).map_or(1, |micro| micro.plans.smoke_max_attempts)
    }
    fn smoke_failures(
        &self,
        schedule: &Schedule,
        records: &BTreeMap<String, TerminalRecord>,
    ) -> Vec<String> {
        plan::smoke_failures(schedule, records)
    }
    fn simulator_answers(
        &self,
        dataset: &DatasetRelease,
    ) -> Result<Vec<CannedAnswer>, WorkflowError> {
        dataset::canned::canned_answers(dataset).map_err(|e| WorkflowError(Box::new(e)))
    }
    fn paired_figures(
        &self,
        run_dir: &Path,
        lock: &RunLock,
    ) -> Result<Option<openbench_common::paired_figures::PairedFigures>, WorkflowError> {
        store_rows::paired_figures(run_dir, lock).map(Some)
    }
    fn compare(
        &self,
        run_a: &Path,
        run_b: &Path,
        out_dir: &Path,
        settings: CompareSettings,
    ) -> Result<Vec<PathBuf>, WorkflowError> {
        let fail = |e: compare::CompareError| WorkflowError(Box::new(e));
        let read = |dir: &Path| report::read_lock(dir).map_err(|e| fail(e.into_compare(dir)));
        let (lock_a, lock_b) = (read(run_a)?, read(run_b)?);
        let (gold_a, gold_b) = (gold_table(&lock_a)?, gold_table(&lock_b)?);
        let options = compare::CompareOptions {
            replicates: settings.replicates,
            seed: settings.seed,
        };
        let comparison = compare::compare(
            &compare::RunInput {
                dir: run_a,
                lock: &lock_a,
                gold: &gold_a,
            },
            &compare::RunInput {
                dir: run_b,
                lock: &lock_b,
                gold: &gold_b,
            },
            options,
        )
        .map_err(fail)?;
        compare::write(out_dir, &comparison).map_err(fail)
    }
    fn report(
        &self,
        run_dir: &Path,
        options: &ReportOptions,
    ) -> Result<ReportOutcome, WorkflowError> {
        let fail = |e: report::ReportError| WorkflowError(Box::new(e));
        let lock = report::read_lock(run_dir).map_err(fail)?;
        let gold = gold_table(&lock)?;
        let (summary_table, written) =
            report::write_all_with(run_dir, &lock, &gold, options).map_err(fail)?;
        Ok(ReportOutcome {
            summary_table,
            written,
        })
    }
    fn score_answers(
        &self,
        source: &str,
        answers: &mut dyn BufRead,
        (dir, manifest): (&Path, &str),
        out: &mut dyn Write,
        errors: &mut dyn Write,
    ) -> Result<ScoreCounts, WorkflowError> {
        // Loaded only when a line needs it, so self-contained files work without a dataset.
        let mut gold: Option<Result<report::GoldTable, String>> = None;
        let mut lookup = |item_id: &str| -> Result<scoring::GoldRef, String> {
            let table = gold.get_or_insert_with(|| {
                dataset::load_release(dir, manifest)
                    .map(|release| release_gold(&release))
                    .map_err(|e| format!("dataset {}: {e}", dir.display()))
            });
            match table {
                Ok(t) => {
                    t.0.get(item_id)
                        .cloned()
                        .ok_or_else(|| format!("item_id {item_id:?} is not in {}", dir.display()))
                }
                Err(e) => Err(e.clone()),
            }
        };
        scoring::answers::score_stream(source, answers, out, errors, &mut lookup)
            .map_err(|e| WorkflowError(Box::new(e)))
    }
    fn generate_dataset(
        &self,
        out: &Path,
        seed: Option<u64>,
        public_sample: bool,
    ) -> Result<GeneratedDataset, WorkflowError> {
        dataset::cli::generate_release(out, seed, public_sample)
    }
    fn validate_dataset(
        &self,
        dir: &Path,
        manifest: &str,
        contract_only: bool,
    ) -> Result<String, WorkflowError> {
        dataset::cli::validate_release(dir, manifest, contract_only)
    }
    fn synthesize_run(
        &self,
        run_dir: &Path,
        request: &SynthesisRequest,
    ) -> Result<SynthesizedRun, WorkflowError> {
        bench_inputs::synthesize(run_dir, request)
    }
    fn bench_fixture(&self, request: &BenchFixtureRequest<'_>) -> Result<PathBuf, WorkflowError> {
        bench_inputs::fixture(request)
    }
}

/// The gold of the release a run locked, checked against the lock's release hash.
pub fn gold_table(lock: &RunLock) -> Result<report::GoldTable, WorkflowError> {
    let dir = Path::new(&lock.dataset_dir);
    let release = dataset::load_release(dir, &lock.dataset_manifest)
        .map_err(|e| WorkflowError(format!("dataset {}: {e}", dir.display()).into()))?;
    if release.release_hash != lock.dataset_release_hash {
        return Err(WorkflowError(
            format!(
                "dataset {}: release hash {} differs from the run lock's {}",
                dir.display(),
                release.release_hash,
                lock.dataset_release_hash
            )
            .into(),
        ));
    }
    Ok(release_gold(&release))
}

/// Gold answers of every row of a loaded release, by item id.
fn release_gold(release: &dataset::Release) -> report::GoldTable {
    report::GoldTable(
        release
            .rows()
            .iter()
            .map(|row| {
                (
                    row.id.clone(),
                    scoring::GoldRef::from_gold(&row.gold, &row.aliases),
                )
            })
            .collect(),
    )
}
