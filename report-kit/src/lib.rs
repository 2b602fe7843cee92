//! Report plumbing that works for any workflow's records, so a second workflow reuses it instead
//! of copying it out of micro-single-task:
//!
//! - [`admission`]: which final records a report may count (the plan's and the lock's), refusing
//!   unplanned and duplicate records unless the user accepts them;
//! - [`observe`]: the workflow-agnostic part of an observation — interned lanes, failure
//!   details, the record labels — and the [`observe::LaneRecord`] view admission reads;
//! - [`plan_view`]: the slice of a plan a report reads;
//! - [`format`]: the deterministic number formatting of report tables;
//! - [`table`]: markdown tables and their plain-text (terminal) twin;
//! - [`html`]: the self-contained page shell and the `plotters` chart primitives;
//! - [`bootstrap`]: the stratified round resampling and percentile interval of comparisons, and
//!   the seeded request-resampling interval of one population's percentile;
//! - [`repeats`]: the Student t interval of a figure across a run's repeats;
//! - [`request`]: one request's sample, timings (TTFA, tokens/s, ITL, send lag) and SLO check,
//!   and the answer-bearing events they are read from (the load report's and `watch`'s).
//!
//! Nothing here knows a task family, an item, gold or scoring: that stays in the workflow.
//! Percentiles are `openbench_common::stats`.

pub mod admission;
pub mod bootstrap;
pub mod format;
pub mod html;
pub mod observe;
pub mod plan_view;
pub mod repeats;
pub mod request;
pub mod table;
