//! Trace context across the coordinator→probe gRPC hop, with the OpenTelemetry propagators: W3C
//! trace context (`traceparent`, `tracestate`) and baggage (`baggage`) as gRPC metadata, where
//! gRPC tooling and proxies see them. The coordinator injects the context of its call span; the
//! probe extracts it and makes it the remote parent of its request span.

use opentelemetry::propagation::{
    Extractor, Injector, TextMapCompositePropagator, TextMapPropagator,
};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The propagators of the hop: W3C trace context, then W3C baggage. Built once: every call on
/// the hop injects or extracts, and building them allocated on each (a load generator's
/// thousands of requests per second).
fn propagator() -> &'static TextMapCompositePropagator {
    static PROPAGATOR: std::sync::LazyLock<TextMapCompositePropagator> =
        std::sync::LazyLock::new(|| {
            TextMapCompositePropagator::new(vec![
                Box::new(TraceContextPropagator::new()),
                Box::new(BaggagePropagator::new()),
            ])
        });
    &PROPAGATOR
}

/// Writes the context of `span` (and its baggage) into `metadata`. Writes nothing when no
/// OpenTelemetry layer is installed: the span context is then invalid and there is nothing to join.
pub fn inject(span: &tracing::Span, metadata: &mut MetadataMap) {
    propagator().inject_context(&span.context(), &mut MetadataInjector(metadata));
}

/// The caller's context read from `metadata`: the remote parent span (when a valid
/// `traceparent` is present) and the baggage.
pub fn extract(metadata: &MetadataMap) -> opentelemetry::Context {
    propagator().extract(&MetadataExtractor(metadata))
}

/// Writes propagation fields as ASCII gRPC metadata; a field that is not valid metadata is
/// skipped (the propagators only write ASCII header values).
struct MetadataInjector<'a>(&'a mut MetadataMap);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            MetadataKey::from_bytes(key.as_bytes()),
            MetadataValue::try_from(value.as_str()),
        ) {
            self.0.insert(key, value);
        }
    }
}

/// Reads propagation fields from ASCII gRPC metadata.
struct MetadataExtractor<'a>(&'a MetadataMap);

impl Extractor for MetadataExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .keys()
            .filter_map(|key| match key {
                tonic::metadata::KeyRef::Ascii(key) => Some(key.as_str()),
                tonic::metadata::KeyRef::Binary(_) => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use opentelemetry::KeyValue;
    use opentelemetry::baggage::BaggageExt;
    use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn no_layer_means_no_metadata() {
        let span = tracing::info_span!("probe_call");
        let mut metadata = MetadataMap::new();
        inject(&span, &mut metadata);
        assert!(metadata.is_empty());
        assert!(!extract(&metadata).span().span_context().is_valid());
    }

    #[test]
    fn parses_a_w3c_traceparent_written_by_hand() {
        let mut metadata = MetadataMap::new();
        metadata.insert(
            "traceparent",
            MetadataValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        metadata.insert("tracestate", MetadataValue::from_static("vendor=abc"));
        metadata.insert("baggage", MetadataValue::from_static("openbench.run_id=r1"));
        let cx = extract(&metadata);
        let sc = cx.span().span_context().clone();
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_sampled() && sc.is_remote());
        assert_eq!(sc.trace_state().get("vendor"), Some("abc"));
        assert_eq!(
            cx.baggage().get("openbench.run_id").map(|v| v.to_string()),
            Some("r1".to_string())
        );
        // An all-zero trace id or a bad version is no parent.
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            let mut metadata = MetadataMap::new();
            metadata.insert("traceparent", bad.parse().unwrap());
            assert!(
                !extract(&metadata).span().span_context().is_valid(),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_span_and_its_baggage_round_trip() {
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("probe_call");
            let baggage = opentelemetry::Context::current()
                .with_baggage([KeyValue::new("openbench.run_id", "run-7")]);
            let _ = span.set_parent(baggage);
            let mut metadata = MetadataMap::new();
            inject(&span, &mut metadata);
            let sent = span.context().span().span_context().clone();
            let traceparent = metadata.get("traceparent").unwrap().to_str().unwrap();
            assert_eq!(
                traceparent,
                format!("00-{}-{}-01", sent.trace_id(), sent.span_id())
            );
            let cx = extract(&metadata);
            assert_eq!(cx.span().span_context().trace_id(), sent.trace_id());
            assert_eq!(cx.span().span_context().span_id(), sent.span_id());
            assert_eq!(
                cx.baggage().get("openbench.run_id").map(|v| v.to_string()),
                Some("run-7".to_string())
            );
        });
    }
}
