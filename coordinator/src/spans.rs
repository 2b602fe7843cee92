//! The coordinator's spans: one `openbench.run` span per sitting (the root of its trace) and one
//! `openbench.round` span per round, opened when the round is released and closed when its last
//! lane is terminal. Each lane's request span is opened on its probe as a child of the round (the
//! round's context travels in the gRPC metadata). A load phase has one `openbench.load_phase`
//! span, the parent of its requests' spans in the same way. Attribute names are in
//! [`openbench_common::semconv`].

use crate::round_jobs::RoundJob;
use openbench_common::rundir::PlannedRound;
use openbench_common::schedule::LoadPhase;
use openbench_common::semconv as sc;
use std::collections::VecDeque;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The span of a sitting executing `jobs` (a root span: a trace per sitting).
pub fn run_span(jobs: &VecDeque<RoundJob>) -> tracing::Span {
    let span = tracing::info_span!(parent: None, "run", otel.name = sc::SPAN_RUN);
    let run_id = jobs
        .front()
        .map(|job| job.run_id().to_string())
        .unwrap_or_default();
    span.set_attribute(sc::RUN_ID, run_id);
    span.set_attribute(
        sc::ROUNDS_PLANNED,
        i64::try_from(jobs.len()).unwrap_or(i64::MAX),
    );
    span
}

/// The span of `round`, a child of the run span.
pub fn round_span(run: &tracing::Span, round: &PlannedRound) -> tracing::Span {
    let span = tracing::info_span!(parent: run, "round", otel.name = sc::SPAN_ROUND);
    span.set_attribute(
        sc::ROUND_INDEX,
        i64::try_from(round.round_index).unwrap_or(i64::MAX),
    );
    span.set_attribute(sc::ROUND_ID, round.round_id.clone());
    span.set_attribute(sc::TASK_FAMILY, round.task_family.clone());
    span.set_attribute(sc::ITEM_ID, round.item_id.clone());
    span
}

/// The span of load phase `index` (a root span: a trace per phase), named for its step and load
/// so that every request span under it says which step it served.
pub fn load_phase_span(index: u32, open_loop: bool, load: &LoadPhase) -> tracing::Span {
    let span = tracing::info_span!(parent: None, "load_phase", otel.name = sc::SPAN_LOAD_PHASE);
    span.set_attribute(sc::PHASE_INDEX, i64::from(index));
    span.set_attribute(sc::PHASE_NAME, load.name.clone());
    span.set_attribute(sc::LOAD_TARGET, load.load.clone());
    let kind = if open_loop {
        "open_loop"
    } else {
        "closed_loop"
    };
    span.set_attribute(sc::PHASE_KIND, kind);
    span.set_attribute(
        sc::PHASE_LANES,
        i64::try_from(load.lanes.len()).unwrap_or(i64::MAX),
    );
    span
}

/// Records the finished round's launch skew and harness errors on its span.
pub fn close_round(span: &tracing::Span, launch_skew_ms: f64, harness_errors: usize) {
    span.set_attribute(sc::LAUNCH_SKEW_MS, launch_skew_ms);
    span.set_attribute(
        sc::HARNESS_ERRORS,
        i64::try_from(harness_errors).unwrap_or(i64::MAX),
    );
}
