//! Load metrics (METHODOLOGY §9, docs/load.md): from one small record per request to a step's
//! aggregates, per lane and pooled, and the saturation rule over steps.
//!
//! - One request's sample and timings (TTFO, TTFA, E2E, TPOT, ITL gaps, send lag, the `_sched`
//!   variants) and whether it meets the SLO are the report kit's
//!   (`openbench_report_kit::request`), shared with `watch`; re-exported here.
//! - [`step`]: a step's distributions, throughputs, achieved rate and goodput.
//! - [`saturation`]: which steps were sustained, the saturation point, the search's next rate.
//! - The seeded percentile-bootstrap interval over a step's requests is the report kit's
//!   (`openbench_report_kit::bootstrap::sample_percentile_interval`).

pub mod saturation;
pub mod step;
#[cfg(test)]
mod tests;

pub use openbench_report_kit::request::{
    Distribution, ReadGroup, RequestSample, RequestTimings, Slo, SloMetric, itl_per_token,
};
pub use step::{
    FailureClass, Goodput, HeldLength, RateCheck, RateVerdict, StepMetrics, StepReport,
    StepSettings,
};
