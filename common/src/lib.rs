//! Shared vocabulary of openbench-inference: the spec, planned requests, terminal records,
//! hashing, the tokenizer and nearest-rank statistics.
//!
//! Every crate that measures, plans, stores or reports speaks these types, so a record written by
//! a probe in one region reads back identically in the coordinator and the report.

pub mod clock;
pub mod hash;
pub mod layout;
pub mod limits;
pub mod plan;
pub mod record;
pub mod spec;
pub mod stats;
pub mod tokenizer;
pub mod workflow;

/// Benchmark slug of the reference workflow (METHODOLOGY §7).
pub const BENCHMARK_SLUG: &str = "inference-micro-single-task";
/// Schedule version of the paired round-robin plan (METHODOLOGY §7).
pub const SCHEDULE_VERSION: &str = "micro-single-task-paired-round-robin-sha256-v1";
/// Version of this program, recorded in locks, manifests and probe descriptions.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
