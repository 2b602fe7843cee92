//! What micro-single-task sends, when: its spec section (`benchmark.families`, `plans:`), the
//! deterministic selection (METHODOLOGY §7, [`selection`] with CPython's generator in [`mt`]),
//! the paired rounds built from it ([`rounds`]) and the smoke criterion (every lane × family
//! returned a 2xx, non-empty, schema-valid answer).

pub mod cpython_random;
pub mod rounds;
pub mod selection;

use crate::scoring;
use openbench_common::record::TerminalRecord;
use openbench_common::rundir::{self as layout, write_json_once};
use openbench_common::schedule::{PairedRounds, Phase, Schedule};
use openbench_common::spec::Spec;
use openbench_common::workflow::{DatasetRelease, PlanInputs, WorkflowError, smoke_problem};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Plan sizes for the full run and the smoke (the spec's `plans:` section).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plans {
    /// Items per family in a full run (200).
    #[serde(default = "default_full_items")]
    pub full_items_per_family: usize,
    /// Items per family in a smoke (1).
    #[serde(default = "default_smoke_items")]
    pub smoke_items_per_family: usize,
    /// Smoke attempts at most (2).
    #[serde(default = "default_smoke_attempts")]
    pub smoke_max_attempts: u32,
    /// Passes of the full run over its round set (1..=100; absent or 1: once), AIPerf's
    /// `--num-profile-runs`: pass r asks every selected item again in its own seeded order, with
    /// its own round indices and request ids, and the report gives the headline figures per
    /// repeat and across repeats with a 95% Student t interval (docs/methodology.md, "Repeats
    /// of paired rounds"). Smoke attempts run once. Left out when absent or 1, so a spec
    /// without it (or with 1) locks, plans and sends byte for byte what it did before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
}

/// Most passes `plans.repeats` may ask for (as `load.repeats`).
pub const MAX_REPEATS: u32 = 100;

impl Default for Plans {
    fn default() -> Self {
        Plans {
            full_items_per_family: default_full_items(),
            smoke_items_per_family: default_smoke_items(),
            smoke_max_attempts: default_smoke_attempts(),
            repeats: None,
        }
    }
}

fn default_full_items() -> usize {
    200
}
fn default_smoke_items() -> usize {
    1
}
fn default_smoke_attempts() -> u32 {
    2
}

/// micro-single-task's part of the spec.
#[derive(Debug, Clone, PartialEq)]
pub struct MicroSpec {
    /// Task families in round order (`benchmark.families`).
    pub families: Vec<String>,
    /// How every item is answered (`benchmark.answer_via`).
    pub answer_via: AnswerVia,
    /// Plan sizes (`plans:`).
    pub plans: Plans,
}

/// How the families' items are answered (`benchmark.answer_via`, docs/methodology.md §5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerVia {
    /// A JSON object in the answer text (the reference benchmark).
    #[default]
    JsonObject,
    /// A call of the family's one forced tool, whose arguments are the JSON object
    /// ([`crate::scoring::tool_call::tool_for`]): the tool-call variant of every family.
    ToolCall,
}

/// The keys micro-single-task adds to `benchmark`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BenchmarkFields {
    families: Vec<String>,
    #[serde(default)]
    answer_via: AnswerVia,
}

/// The top-level sections micro-single-task owns.
const SECTIONS: [&str; 1] = ["plans"];

impl MicroSpec {
    /// Reads the workflow's part of `spec`, or every problem with it, each naming its field.
    pub fn read(spec: &Spec) -> Result<MicroSpec, Vec<String>> {
        let mut problems = Vec::new();
        let fields = serde_json::Value::Object(
            spec.benchmark
                .workflow_fields
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        );
        let (families, answer_via) = match serde_json::from_value::<BenchmarkFields>(fields) {
            Ok(fields) => (fields.families, fields.answer_via),
            Err(e) => {
                problems.push(format!("benchmark: {e}"));
                (Vec::new(), AnswerVia::default())
            }
        };
        if answer_via == AnswerVia::ToolCall {
            for (i, provider) in spec.providers.iter().enumerate() {
                if !provider.api.has_tools() {
                    problems.push(format!(
                        "providers[{i}] ({}): api {} has no tools, so it cannot answer with \
                         benchmark.answer_via: tool_call",
                        provider.key, provider.api
                    ));
                }
            }
        }
        if families.is_empty() && problems.is_empty() {
            problems.push("benchmark.families: must list at least one family".to_string());
        }
        for key in spec.workflow_sections.keys() {
            if !SECTIONS.contains(&key.as_str()) {
                problems.push(format!(
                    "{key}: unknown section (the spec's sections and micro-single-task's `plans`)"
                ));
            }
        }
        let mut plans = match spec.workflow_sections.get("plans") {
            None => Plans::default(),
            Some(value) => serde_json::from_value(value.clone()).unwrap_or_else(|e| {
                problems.push(format!("plans: {e}"));
                Plans::default()
            }),
        };
        match plans.repeats {
            Some(1) => plans.repeats = None,
            Some(n) if !(1..=MAX_REPEATS).contains(&n) => problems.push(format!(
                "plans.repeats: {n} is outside 1..={MAX_REPEATS} (leave it out to run once)"
            )),
            _ => {}
        }
        if plans.full_items_per_family == 0 || plans.smoke_items_per_family == 0 {
            problems.push("plans: items per family must be at least 1".to_string());
        }
        if !(1..=2).contains(&plans.smoke_max_attempts) {
            problems.push(format!(
                "plans.smoke_max_attempts: {} must be 1 or 2",
                plans.smoke_max_attempts
            ));
        }
        if problems.is_empty() {
            Ok(MicroSpec {
                families,
                answer_via,
                plans,
            })
        } else {
            Err(problems)
        }
    }

    /// Checks the workflow's part of `spec` and writes `plans` back with its defaults filled, so
    /// the lock hashes the sizes the run uses (as it did when `plans` was a generic section).
    pub fn check(spec: &mut Spec) -> Vec<String> {
        match MicroSpec::read(spec) {
            Ok(micro) => {
                let plans = serde_json::to_value(&micro.plans).unwrap_or_default();
                spec.workflow_sections.insert("plans".into(), plans);
                Vec::new()
            }
            Err(problems) => problems,
        }
    }

    /// Reads the (already checked) section for planning.
    pub fn of(spec: &Spec) -> Result<MicroSpec, WorkflowError> {
        MicroSpec::read(spec).map_err(|problems| WorkflowError(problems.join("; ").into()))
    }
}

/// The selection of a run (every family's full-run prefix), as `selection.json` holds it.
pub fn selection_of(
    spec: &Spec,
    dataset: &DatasetRelease,
) -> Result<selection::Selection, WorkflowError> {
    let micro = MicroSpec::of(spec)?;
    selection::select(
        dataset,
        &spec.benchmark.slug,
        &spec.benchmark.schedule_version,
        &micro.families,
        micro.plans.full_items_per_family,
    )
    .map_err(|e| WorkflowError(Box::new(e)))
}

/// Writes `artifacts/selection.json` (refusing a different one already there).
pub fn write_selection(inputs: &PlanInputs<'_>) -> Result<(), WorkflowError> {
    let selection = selection_of(inputs.spec, inputs.dataset)?;
    write_json_once(&layout::path(inputs.run_dir, layout::SELECTION), &selection)
        .map_err(|e| WorkflowError(Box::new(e)))
}

/// The paired rounds of the full run (attempt 0) or of smoke attempt `attempt`.
pub fn schedule(inputs: &PlanInputs<'_>, attempt: u32) -> Result<Schedule, WorkflowError> {
    let micro = MicroSpec::of(inputs.spec)?;
    let selection = selection_of(inputs.spec, inputs.dataset)?;
    let (items, repeats) = if attempt == 0 {
        (micro.plans.full_items_per_family, micro.plans.repeats)
    } else {
        (micro.plans.smoke_items_per_family, None)
    };
    selection
        .require(items)
        .map_err(|e| WorkflowError(Box::new(e)))?;
    let plan = rounds::build_plan(
        inputs.spec,
        &micro.families,
        &selection,
        inputs.dataset,
        (items, repeats),
        attempt,
    );
    let prompts = rounds::DatasetPrompts::new(Arc::new(inputs.dataset.clone()))
        .with_tools(micro.answer_via == AnswerVia::ToolCall);
    Ok(Schedule {
        version: inputs.spec.benchmark.schedule_version.clone(),
        attempt,
        phases: vec![Phase::PairedRounds(PairedRounds {
            plan: Arc::new(plan),
            prompts: Arc::new(prompts),
        })],
    })
}

/// The smoke criterion: every lane × family returned a 2xx, non-empty, schema-valid answer.
pub fn smoke_failures(
    schedule: &Schedule,
    records: &BTreeMap<String, TerminalRecord>,
) -> Vec<String> {
    let mut failures = Vec::new();
    for phase in &schedule.phases {
        let Phase::PairedRounds(paired) = phase else {
            continue;
        };
        for round in &paired.plan.rounds {
            for lane in round.requests.iter() {
                let record = records.get(&lane.request_id);
                let why = smoke_problem(record).or_else(|| {
                    record
                        .filter(|r| !answer_is_schema_valid(r))
                        .map(|_| "answer is not schema-valid".to_string())
                });
                if let Some(why) = why {
                    failures.push(format!("{} × {}: {why}", lane.lane, round.task_family));
                }
            }
        }
    }
    failures
}

/// True when a completed record's answer is schema-valid for its family.
/// (With a tool offered, the answer is the arguments of its one call of that tool.)
pub fn answer_is_schema_valid(record: &TerminalRecord) -> bool {
    let Ok(answer) = scoring::tool_call::answer_text(record) else {
        return false;
    };
    !answer.trim().is_empty()
        && scoring::Family::parse(&record.task_family)
            .is_some_and(|f| scoring::is_schema_valid(f, answer))
}
