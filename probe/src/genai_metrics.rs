//! The probe's request metrics: the GenAI client instruments that fit a streaming client
//! (operation duration, time to first chunk, time per output chunk, token usage, with the
//! conventions' advisory buckets) and ours (TTFO, TTFA, E2E, visible-answer tokens/s, requests by
//! outcome), labelled by provider, model, region and task family — enough for a dashboard
//! without reading files. Recorded from the terminal record, so they agree with it. Without a
//! meter provider (no OTLP endpoint) every instrument is a no-op. Names in [`crate::semconv`].

use crate::semconv as sc;
use openbench_common::record::{Execution, Outcome};
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};
use std::sync::atomic::{AtomicBool, Ordering};

/// True once the process installed a meter provider that exports as the global one
/// ([`note_exported`]).
static EXPORTED: AtomicBool = AtomicBool::new(false);

/// Notes that this process installed a meter provider that exports as the global one (the
/// binary's telemetry does, when an OTLP endpoint is configured), so the instruments
/// [`RequestMetrics::global`] creates afterwards are recorded. Without one the global provider
/// is the no-op one, and recording would build every point's labels only to drop them.
pub fn note_exported() {
    EXPORTED.store(true, Ordering::Release);
}

/// The instruments, created once per probe server.
#[derive(Debug, Clone)]
pub struct RequestMetrics {
    /// False when nothing would keep a point (the global provider is the no-op one): then
    /// [`RequestMetrics::record`] does nothing.
    on: bool,
    duration: Histogram<f64>,
    time_to_first_chunk: Histogram<f64>,
    time_per_output_chunk: Histogram<f64>,
    token_usage: Histogram<u64>,
    ttfo: Histogram<f64>,
    ttfa: Histogram<f64>,
    e2e: Histogram<f64>,
    tokens_per_second: Histogram<f64>,
    requests: Counter<u64>,
}

impl RequestMetrics {
    /// The instruments on the global meter provider (installed by the binary's telemetry);
    /// they record only when [`note_exported`] was called before.
    pub fn global() -> Self {
        let mut metrics = Self::new(&opentelemetry::global::meter("openbench-probe"));
        metrics.on = EXPORTED.load(Ordering::Acquire);
        metrics
    }

    /// The instruments on `meter`.
    pub fn new(meter: &Meter) -> Self {
        let histogram = |name: &'static str, unit: &'static str, buckets: &[f64]| {
            meter
                .f64_histogram(name)
                .with_unit(unit)
                .with_boundaries(buckets.to_vec())
                .build()
        };
        Self {
            on: true,
            duration: histogram(
                sc::METRIC_OPERATION_DURATION,
                "s",
                &sc::BUCKETS_OPERATION_DURATION,
            ),
            time_to_first_chunk: histogram(
                sc::METRIC_TIME_TO_FIRST_CHUNK,
                "s",
                &sc::BUCKETS_TIME_TO_FIRST_CHUNK,
            ),
            time_per_output_chunk: histogram(
                sc::METRIC_TIME_PER_OUTPUT_CHUNK,
                "s",
                &sc::BUCKETS_TIME_PER_OUTPUT_CHUNK,
            ),
            token_usage: meter
                .u64_histogram(sc::METRIC_TOKEN_USAGE)
                .with_unit("{token}")
                .with_boundaries(sc::BUCKETS_TOKEN_USAGE.to_vec())
                .build(),
            ttfo: histogram(sc::METRIC_TTFO, "ms", &sc::BUCKETS_LATENCY_MS),
            ttfa: histogram(sc::METRIC_TTFA, "ms", &sc::BUCKETS_LATENCY_MS),
            e2e: histogram(sc::METRIC_E2E, "ms", &sc::BUCKETS_LATENCY_MS),
            tokens_per_second: histogram(
                sc::METRIC_OUTPUT_TOKENS_PER_SECOND,
                "{token}/s",
                &sc::BUCKETS_TOKENS_PER_SECOND,
            ),
            requests: meter
                .u64_counter(sc::METRIC_REQUESTS)
                .with_unit("{request}")
                .build(),
        }
    }

    /// Records one finished request; `load` is its planned load (`PlannedRequest::load`), which
    /// labels its points beside its phase when it served a load phase.
    pub fn record(&self, execution: &Execution, load: Option<&str>) {
        if !self.on {
            return;
        }
        let r = &execution.record;
        let mut labels = vec![
            KeyValue::new(sc::OPERATION_NAME, sc::OPERATION_CHAT),
            KeyValue::new(sc::PROVIDER_NAME, r.provider.clone()),
            KeyValue::new(sc::REQUEST_MODEL, r.requested_model.clone()),
            KeyValue::new(sc::REGION, r.region.clone()),
            KeyValue::new(sc::TASK_FAMILY, r.task_family.clone()),
        ];
        labels.extend(
            crate::genai_span::load_labels(r.phase, load)
                .into_iter()
                .map(|(key, value)| KeyValue::new(key, value)),
        );
        let outcome = crate::genai_span::snake_case(&r.outcome);
        let mut with_outcome = labels.clone();
        with_outcome.push(KeyValue::new(sc::OUTCOME, outcome.clone()));
        self.requests.add(1, &with_outcome);
        if r.outcome != Outcome::Completed {
            let error_type = r
                .error_type
                .as_ref()
                .map(crate::genai_span::snake_case)
                .unwrap_or(outcome);
            labels.push(KeyValue::new(sc::ERROR_TYPE, error_type));
        }
        if let Some(ms) = r.stream_end_ms {
            self.duration.record(ms / 1000.0, &labels);
        }
        if let Some(ms) = r.ttfo_ms {
            self.time_to_first_chunk.record(ms / 1000.0, &labels);
            self.ttfo.record(ms, &labels);
        }
        for gap_ms in output_chunk_gaps(execution) {
            self.time_per_output_chunk.record(gap_ms / 1000.0, &labels);
        }
        if let Some(usage) = &r.usage {
            for (kind, tokens) in [
                ("input", usage.prompt_tokens),
                ("output", usage.completion_tokens),
            ] {
                if let Some(tokens) = tokens {
                    let mut point = labels.clone();
                    point.push(KeyValue::new(sc::TOKEN_TYPE, kind));
                    self.token_usage.record(tokens, &point);
                }
            }
        }
        if let Some(ms) = r.ttfa_ms {
            self.ttfa.record(ms, &labels);
        }
        if let Some(ms) = r.e2e_ms {
            self.e2e.record(ms, &labels);
        }
        if let Some(tps) = r.output_tokens_per_second {
            self.tokens_per_second.record(tps, &labels);
        }
    }
}

/// Gaps between consecutive output-carrying chunks (reasoning or answer text), ms.
fn output_chunk_gaps(execution: &Execution) -> Vec<f64> {
    let offsets: Vec<f64> = execution
        .events
        .iter()
        .filter(|e| !e.reasoning.is_empty() || !e.answer.is_empty())
        .map(|e| e.offset_ms)
        .collect();
    offsets.windows(2).map(|w| w[1] - w[0]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_instruments_record_only_once_an_exporting_provider_was_noted() {
        // Nothing in this test binary installs a meter provider before this line.
        assert!(!RequestMetrics::global().on);
        note_exported();
        assert!(RequestMetrics::global().on);
        // Instruments on a meter the caller chose always record.
        assert!(RequestMetrics::new(&opentelemetry::global::meter("test")).on);
    }
}
