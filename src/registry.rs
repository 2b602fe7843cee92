//! The workflow registry: the one place that names every workflow this build ships.

use openbench_common::workflow::{CannedAnswer, DatasetRelease, Workflow};

/// Every registered workflow, in listing order.
pub fn workflows() -> Vec<Box<dyn Workflow>> {
    vec![Box::new(openbench_micro_single_task::MicroSingleTask)]
}

/// The workflow with this name, or an error listing the known ones.
pub fn find(name: &str) -> anyhow::Result<Box<dyn Workflow>> {
    let all = workflows();
    let known: Vec<&str> = all.iter().map(|w| w.name()).collect();
    let known = known.join(", ");
    all.into_iter()
        .find(|w| w.name() == name)
        .ok_or_else(|| anyhow::anyhow!("unknown workflow {name:?}; known: {known}"))
}

/// What the embedded simulator answers for `workflow`'s prompts, derived from the release's gold:
/// the edge where a workflow meets the simulator (the generic `Workflow` trait knows nothing of
/// it). Empty for a workflow without canned answers.
pub fn canned_answers(
    workflow: &str,
    dataset: &DatasetRelease,
) -> anyhow::Result<Vec<CannedAnswer>> {
    match workflow {
        "micro-single-task" => {
            Ok(openbench_micro_single_task::dataset::canned::canned_answers(dataset)?)
        }
        _ => Ok(Vec::new()),
    }
}
