//! Shared vocabulary of openbench-inference: the spec, planned requests, terminal records,
//! hashing, the tokenizer and nearest-rank statistics.
//!
//! Every crate that measures, plans, stores or reports speaks these types, so a record written by
//! a probe in one region reads back identically in the coordinator and the report.

pub mod agent;
pub mod arrivals;
pub mod clock;
pub mod credentials;
pub mod error_text;
pub mod hash;
pub mod input_file;
pub mod labels;
pub mod limits;
pub mod load_figures;
pub mod paired_figures;
pub mod probe_session;
pub mod record;
pub mod request;
pub mod rng;
pub mod rundir;
pub mod schedule;
pub mod semconv;
pub mod spec;
pub mod stats;
pub mod tokenizer;
pub mod tool;
pub mod untrusted_text;
pub mod validity;
pub mod workflow;

/// Version of this program, recorded in locks, manifests and probe descriptions.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
