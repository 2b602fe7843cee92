//! The workflow registry: the one place that names every workflow this build ships.

use openbench_common::workflow::Workflow;

/// Every registered workflow, in listing order.
pub fn workflows() -> Vec<Box<dyn Workflow>> {
    vec![
        Box::new(openbench_micro_single_task::MicroSingleTask),
        Box::new(openbench_example_echo::ExampleEcho),
        Box::new(openbench_load::run::LoadWorkflow),
        Box::new(openbench_cache_probe::CacheProbe),
    ]
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
