//! The load workflow's pure parts: everything that does not need the runner's schedule seam.
//!
//! Read top-down:
//! - [`spec`]: the `load:` section (load models, phases, SLO, workload) and its validation.
//! - [`arrivals`]: open-loop release schedules (constant, seeded Poisson) and measured windows.
//! - [`workload`]: prompts of exact o200k lengths, shared prefixes, and JSONL prompt files.
//! - [`metrics`]: per-request timings → per-step aggregates, goodput, achieved rate, and the
//!   saturation rule (docs/load.md holds every definition).
//!
//! - [`run`]: the [`run::LoadWorkflow`] the registry lists: the section checked at `init`, one
//!   load phase per step, the saturation search step by step, the run read back for the report.
//!
//! Nothing here sleeps or sends: the coordinator's runner owns time and the network.

pub mod agent_family;
pub mod arrivals;
pub mod metrics;
pub mod report;
pub mod run;
pub mod spec;
pub mod trace;
pub mod workload;
