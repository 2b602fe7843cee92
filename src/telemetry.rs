//! Logging and tracing for the binary: a `tracing` subscriber on stderr, and, when an OTLP
//! endpoint is configured (`OTEL_EXPORTER_OTLP_ENDPOINT` or `--otlp-endpoint`), an OpenTelemetry
//! layer that exports spans over OTLP/gRPC. Trace context crosses the coordinator→probe gRPC hop
//! as W3C `traceparent`, so a run's spans from every region join one trace.
//!
//! Nothing here records a credential: spans carry ids, provider keys, outcomes and timings only.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Keeps the exporter alive; flushes and shuts it down when the command ends.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// Installs the subscriber. Must run inside the tokio runtime (the OTLP exporter needs it).
///
/// Log level comes from `RUST_LOG` (default `warn`, so progress bars stay clean).
pub fn init(otlp_endpoint: Option<&str>, service_name: &str) -> anyhow::Result<Telemetry> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_filter(filter);
    let Some(endpoint) = otlp_endpoint.filter(|e| !e.trim().is_empty()) else {
        tracing_subscriber::registry().with(fmt).try_init()?;
        return Ok(Telemetry { provider: None });
    };
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .build()?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name(service_name.to_string())
                .build(),
        )
        .build();
    let tracer = provider.tracer("openbench-inference");
    let otel = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(EnvFilter::new(
            "info,h2=off,hyper=off,tonic=off,tower=off,reqwest=off",
        ));
    tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init()?;
    opentelemetry::global::set_tracer_provider(provider.clone());
    Ok(Telemetry {
        provider: Some(provider),
    })
}

impl Telemetry {
    /// Flushes pending spans and stops the exporter (blocking work, so off the async threads).
    pub async fn shutdown(self) {
        if let Some(provider) = self.provider {
            let result = tokio::task::spawn_blocking(move || provider.shutdown()).await;
            if let Ok(Err(e)) = result {
                eprintln!("warning: OTLP exporter did not shut down cleanly: {e}");
            }
        }
    }
}
