//! The `load:` section as the runner hands it over: read from the spec's workflow sections,
//! checked with every problem named at once, and written back normalised (what the lock hashes).

use crate::spec::{Limits, LoadSection, WorkloadSpec};
use openbench_common::spec::Spec;
use openbench_common::workflow::WorkflowError;

/// The section's key in a spec.
pub const SECTION: &str = "load";

/// Every problem with the workflow's part of `spec` (unknown fields or sections, the section's
/// shape, every rule of [`LoadSection::problems`], what it names that the spec lacks), or the
/// section.
pub fn read(spec: &Spec) -> Result<LoadSection, Vec<String>> {
    let mut problems = Vec::new();
    for key in spec.benchmark.workflow_fields.keys() {
        problems.push(format!("benchmark.{key}: not a field of workflow load"));
    }
    for key in spec.workflow_sections.keys().filter(|k| *k != SECTION) {
        problems.push(format!("{key}: unknown section (workflow load has `load`)"));
    }
    let section = match spec.workflow_sections.get(SECTION) {
        None => {
            problems.push("load: missing (the steps, phases and workload of the run)".into());
            None
        }
        Some(value) => match serde_json::from_value::<LoadSection>(value.clone()) {
            Ok(section) => Some(section),
            Err(e) => {
                problems.push(format!("load: {e}"));
                None
            }
        },
    };
    if let Some(section) = &section {
        let limits = Limits {
            max_output_tokens: spec.request.max_output_tokens,
            lanes_per_probe: spec.providers.len(),
        };
        problems.extend(section.problems(&limits));
        problems.extend(runner_problems(section, spec));
    }
    match section {
        Some(section) if problems.is_empty() => Ok(section),
        _ => Err(problems),
    }
}

/// The section as written, when it parses at all (whatever else is wrong with it): what names
/// the files read at `init` (prompt file, traces) beside the section's own problems.
pub fn as_written(spec: &Spec) -> Option<LoadSection> {
    let value = spec.workflow_sections.get(SECTION)?;
    serde_json::from_value::<LoadSection>(value.clone()).ok()
}

/// What the section names that the spec lacks (an `ignore_eos` provider) or leaves empty (the
/// prompt file's path).
fn runner_problems(section: &LoadSection, spec: &Spec) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, key) in section.ignore_eos.iter().enumerate() {
        if !spec.providers.iter().any(|p| p.key == *key) {
            problems.push(format!(
                "load.ignore_eos[{i}]: {key:?} is not a provider of this spec"
            ));
        }
    }
    // An agent step offers tools and sends a tool loop: legacy completions have neither.
    for (i, _) in section.steps.iter().enumerate() {
        if section.agent(i).is_none() {
            continue;
        }
        for p in spec.providers.iter().filter(|p| !p.api.has_tools()) {
            problems.push(format!(
                "load.steps[{i}].agent: provider {} speaks {}, which has no tools (an agent \
                 step offers tools and sends their results)",
                p.key, p.api
            ));
        }
    }
    if let WorkloadSpec::Jsonl { path, .. } = &section.workload
        && path.trim().is_empty()
    {
        problems.push("load.workload.path: empty".into());
    }
    problems
}

/// Checks the section and writes it back normalised.
pub fn check(spec: &mut Spec) -> Vec<String> {
    match read(spec) {
        Ok(section) => {
            match serde_json::to_value(&section) {
                Ok(value) => {
                    spec.workflow_sections.insert(SECTION.into(), value);
                }
                Err(e) => return vec![format!("load: {e}")],
            }
            Vec::new()
        }
        Err(problems) => problems,
    }
}

/// The (already checked) section, for planning and reporting.
pub fn of(spec: &Spec) -> Result<LoadSection, WorkflowError> {
    read(spec).map_err(|problems| WorkflowError(problems.join("; ").into()))
}
