//! The coordinator: turns a spec and a dataset release into a locked run directory and executes
//! the schedule its workflow plans (paired rounds, open and closed loops) through probes over
//! gRPC, crash-safe and resumable. It names no workflow: planning, selection and the smoke
//! criterion come through `openbench_common::workflow::Workflow`.
//!
//! Read top-down: [`run_dir`] loads inputs and opens or creates a locked run directory ([`lock`]; every file
//! goes through `openbench_common::rundir`); [`runner`] runs a full plan or a smoke, phase by
//! phase: paired rounds through the [`actor`], open and closed loops through [`load`], both given
//! the sitting's options and stop signal by [`sitting`] and gRPC clients from [`probe_links`]
//! (what serves the probes and any `sim://` endpoint is the binary's [`TargetHost`];
//! [`session_open`] checks each probe and opens the run's session on it). No module imports one
//! that imports it back (`tests/module_graph.rs` fails on any circle). The live view of a run is
//! the `openbench-watch` crate.

pub mod actor;
pub mod error;
pub mod faults;
pub mod health;
pub mod lane_call;
pub mod lane_guard;
pub mod load;
pub mod lock;
pub mod probe_links;
pub mod replicas;
pub mod round_jobs;
pub mod run_dir;
pub mod runner;
mod runtime_health;
mod schedule_files;
pub mod session_open;
pub mod sitting;
pub mod sitting_report;
pub mod spans;
pub mod writer_thread;

pub use error::CoordinatorError;
pub use health::{FaultPolicy, LinkSettings, RegionDownPolicy};
pub use openbench_common::rundir::{RunManifest, RunStatus};
pub use probe_links::{BoxFuture, ProbeAt, RemoteProbes, TargetHost, Targets};
pub use run_dir::{
    RunDir, RunInputs, locked_spec_path, new_run_dir, prepare_inputs, prepare_inputs_for,
};
pub use runner::{FullOutcome, SmokeOutcome, run_full, run_smoke};
pub use sitting::{RunOptions, StopRequest};
pub use sitting_report::{Progress, ProgressFn, SittingReport, SittingStatus};
