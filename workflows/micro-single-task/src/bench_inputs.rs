//! What `openbench-inference bench` needs from this workflow, reached through
//! [`Workflow::synthesize_run`](openbench_common::workflow::Workflow::synthesize_run) and
//! [`Workflow::bench_fixture`](openbench_common::workflow::Workflow::bench_fixture): a synthetic
//! run to time `report` on (`bench analysis`), and the dataset and spec of a run through the real
//! pipeline (`bench fidelity`).

use crate::dataset::generate;
use crate::spec_yaml::contract_sections;
use crate::synthetic::{self, SyntheticRun};
use openbench_common::workflow::{
    BenchFixtureRequest, SynthesisRequest, SynthesizedRun, WorkflowError,
};
use std::path::PathBuf;

/// Families of the workflow: a full plan has a round per family per item.
const FAMILIES: usize = 3;

/// Items per family in the public sample (its smallest family); larger plans use the release.
const SAMPLE_ITEMS: usize = 6;

/// Request deadline and harness grace of the bench spec, ms: far beyond any scripted stream.
const BENCH_DEADLINE_MS: u64 = 60_000;

/// Writes a synthetic run ([`synthetic::write_run`]) and hands back its report step.
pub fn synthesize(
    run_dir: &std::path::Path,
    request: &SynthesisRequest,
) -> Result<SynthesizedRun, WorkflowError> {
    let spec = SyntheticRun {
        records: request.records,
        lanes: request.lanes,
        seed: request.seed,
    };
    let run = synthetic::write_run(run_dir, &spec).map_err(|e| WorkflowError(Box::new(e)))?;
    let dir = run_dir.to_path_buf();
    let (lock, gold) = (run.lock, run.gold);
    Ok(SynthesizedRun {
        records: run.records,
        rounds: run.rounds,
        report: Box::new(move || {
            crate::report::write_all(&dir, &lock, &gold)
                .map(|_| ())
                .map_err(|e| WorkflowError(Box::new(e)))
        }),
    })
}

/// Generates the dataset (the public sample when it holds enough items, else the release) into
/// `dir/data` and writes `dir/spec.yaml`: the bench's providers, enough items per family for
/// `rounds` rounds (rounded up to whole items, a multiple of 3), a run root in `dir/runs`.
pub fn fixture(request: &BenchFixtureRequest<'_>) -> Result<PathBuf, WorkflowError> {
    let items = request.rounds.div_ceil(FAMILIES);
    let data = request.dir.join("data");
    generate::generate(&data, generate::DEFAULT_SEED, items <= SAMPLE_ITEMS)
        .map_err(|e| WorkflowError(format!("generating the dataset: {e}").into()))?;
    let mut text = contract_sections(BENCH_DEADLINE_MS, BENCH_DEADLINE_MS);
    text.push_str(request.providers_yaml);
    text.push_str(&format!(
        "dataset:\n  source: {}\nplans:\n  full_items_per_family: {items}\n  \
         smoke_items_per_family: 1\nrun_root: {}\n",
        data.display(),
        request.dir.join("runs").display()
    ));
    let path = request.dir.join("spec.yaml");
    std::fs::write(&path, text)
        .map_err(|e| WorkflowError(format!("writing {}: {e}", path.display()).into()))?;
    Ok(path)
}
