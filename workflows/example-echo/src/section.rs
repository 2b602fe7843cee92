//! The workflow's spec section (`echo:`), checked with every problem named at once.

use openbench_common::spec::Spec;
use openbench_common::workflow::WorkflowError;
use serde::{Deserialize, Serialize};

/// The `echo:` section: the full run's phases in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EchoSection {
    /// The full run's phases.
    pub phases: Vec<PhaseSpec>,
}

/// One phase as the spec writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PhaseSpec {
    /// `concurrency` slots per lane, `per_slot` requests each.
    ClosedLoop {
        /// Phase label.
        name: String,
        /// Slots per lane.
        concurrency: u32,
        /// Requests per slot.
        per_slot: u64,
    },
    /// `count` requests per lane at `rate_per_s`, Poisson gaps when `poisson_seed` is given.
    OpenLoop {
        /// Phase label.
        name: String,
        /// Requests per lane.
        count: u64,
        /// Requests per second per lane.
        rate_per_s: f64,
        /// Requests a lane may have in flight at once.
        max_in_flight: u32,
        /// Seed of Poisson gaps; constant gaps without one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        poisson_seed: Option<u64>,
    },
}

impl EchoSection {
    /// Every problem with the workflow's part of `spec`, each naming its field.
    pub fn read(spec: &Spec) -> Result<EchoSection, Vec<String>> {
        let mut problems = Vec::new();
        for key in spec.benchmark.workflow_fields.keys() {
            problems.push(format!(
                "benchmark.{key}: not a field of workflow example-echo"
            ));
        }
        for key in spec.workflow_sections.keys().filter(|k| *k != "echo") {
            problems.push(format!("{key}: unknown section (example-echo has `echo`)"));
        }
        let section = match spec.workflow_sections.get("echo") {
            None => {
                problems.push("echo: missing (the phases of the run)".to_string());
                None
            }
            Some(value) => match serde_json::from_value::<EchoSection>(value.clone()) {
                Ok(section) => Some(section),
                Err(e) => {
                    problems.push(format!("echo: {e}"));
                    None
                }
            },
        };
        if let Some(section) = &section {
            if section.phases.is_empty() {
                problems.push("echo.phases: must list at least one phase".to_string());
            }
            for (i, phase) in section.phases.iter().enumerate() {
                problems.extend(phase.problems(&format!("echo.phases[{i}]")));
            }
        }
        match section {
            Some(section) if problems.is_empty() => Ok(section),
            _ => Err(problems),
        }
    }

    /// Checks the section and writes it back normalised (what the lock hashes).
    pub fn check(spec: &mut Spec) -> Vec<String> {
        match EchoSection::read(spec) {
            Ok(section) => {
                let value = serde_json::to_value(&section).unwrap_or_default();
                spec.workflow_sections.insert("echo".into(), value);
                Vec::new()
            }
            Err(problems) => problems,
        }
    }

    /// The (already checked) section, for planning.
    pub fn of(spec: &Spec) -> Result<EchoSection, WorkflowError> {
        EchoSection::read(spec).map_err(|problems| WorkflowError(problems.join("; ").into()))
    }
}

impl PhaseSpec {
    fn problems(&self, at: &str) -> Vec<String> {
        let mut problems = Vec::new();
        match self {
            PhaseSpec::ClosedLoop {
                concurrency,
                per_slot,
                ..
            } => {
                if *concurrency == 0 {
                    problems.push(format!("{at}.concurrency: must be at least 1"));
                }
                if *per_slot == 0 {
                    problems.push(format!("{at}.per_slot: must be at least 1"));
                }
            }
            PhaseSpec::OpenLoop {
                count,
                rate_per_s,
                max_in_flight,
                ..
            } => {
                if *count == 0 {
                    problems.push(format!("{at}.count: must be at least 1"));
                }
                if !(*rate_per_s > 0.0 && rate_per_s.is_finite()) {
                    problems.push(format!("{at}.rate_per_s: {rate_per_s} must be above 0"));
                }
                if *max_in_flight == 0 {
                    problems.push(format!("{at}.max_in_flight: must be at least 1"));
                }
            }
        }
        problems
    }
}
