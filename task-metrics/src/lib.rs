//! The figures of a task-scored, paired-round run, wherever the run is read from: micro-single-task's
//! report and `compare` read a run directory, the results store's `history` reads stored runs,
//! and both compute here, so neither imports the other.
//!
//! - [`metrics`]: one final record reduced to an [`metrics::Observation`] (scored exactly, by
//!   `openbench_tasks::scoring`), and the per-lane, per-family summaries of `metrics.json`;
//! - [`paired`]: lanes compared round by round (win shares, E2E differences);
//! - [`compare`]: one run against another, lane by lane and family by family, with the
//!   stratified round bootstrap interval on every change, rendered as `compare.md` and
//!   `compare.html`;
//! - [`repeats`]: a repeated run's headline figures per repeat and their t interval.

pub mod compare;
pub mod metrics;
pub mod paired;
pub mod repeats;
