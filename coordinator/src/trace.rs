//! W3C trace context for the coordinator→probe hop, so the probe's span of a request joins the
//! coordinator's trace when spans are exported over OTLP.

use opentelemetry::trace::TraceContextExt;
use std::collections::HashMap;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The `traceparent` of `span` as a gRPC trace-context map; empty when no OpenTelemetry layer is
/// installed (the span context is then invalid and there is nothing to join).
pub fn trace_context(span: &tracing::Span) -> HashMap<String, String> {
    let context = span.context();
    let otel_span = context.span();
    let sc = otel_span.span_context();
    if !sc.is_valid() {
        return HashMap::new();
    }
    HashMap::from([(
        String::from("traceparent"),
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        ),
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn no_layer_means_no_context() {
        let span = tracing::info_span!("probe_call");
        assert!(trace_context(&span).is_empty());
    }

    #[test]
    fn carries_the_span_ids_as_traceparent() {
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("probe_call");
            let map = trace_context(&span);
            let tp = map.get("traceparent").cloned().unwrap_or_default();
            let parts: Vec<&str> = tp.split('-').collect();
            assert_eq!(parts.len(), 4, "{tp}");
            assert_eq!(parts[0], "00");
            assert_eq!(parts[1].len(), 32);
            assert_eq!(parts[2].len(), 16);
            let sc = span.context().span().span_context().clone();
            assert_eq!(parts[1], sc.trace_id().to_string());
            assert_eq!(parts[2], sc.span_id().to_string());
            // Sampled (the SDK's default sampler records every span); that the probe parses
            // this back into the same ids is `tests/otlp_traces.rs`, end to end.
            assert_eq!(parts[3], "01");
        });
    }
}
