//! Logging and tracing for the binary: a `tracing` subscriber on stderr, and, when an OTLP
//! endpoint is configured by the standard OpenTelemetry variables (or `--otlp-endpoint`), an
//! OpenTelemetry layer exporting spans over OTLP/gRPC or OTLP/HTTP (see [`config`]).
//!
//! Export can never hurt a run: a collector that cannot be configured is a warning and the
//! command runs without export; spans go through the SDK's bounded batch queue (`OTEL_BSP_*`,
//! default 2048 spans), which drops when full and reports the count as a warning; the flush at
//! exit is bounded by [`FLUSH_BOUND`]. Trace context and baggage cross the coordinator→probe gRPC
//! hop in the request metadata (W3C `traceparent`/`tracestate`/`baggage`), so a run's spans from
//! every region join one trace.
//!
//! Nothing here records a credential: spans carry ids, provider keys, outcomes and timings only.

pub mod config;
pub mod exporter;
pub mod resource;

pub use resource::{COORDINATOR_SERVICE, PROBE_SERVICE, ServiceIdentity};

use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Longest the command waits at exit for pending spans to reach the collector.
pub const FLUSH_BOUND: Duration = Duration::from_secs(5);

/// Keeps the exporter alive; flushes and shuts it down when the command ends.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// Installs the subscriber. Must run inside the tokio runtime (the OTLP exporter needs it).
///
/// Log level comes from `RUST_LOG` (default `warn`, so progress bars stay clean). Fails only
/// when a subscriber is already installed; export problems are warnings.
pub fn init(otlp_endpoint: Option<&str>, identity: &ServiceIdentity) -> anyhow::Result<Telemetry> {
    opentelemetry::global::set_text_map_propagator(TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ]));
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_filter(filter);
    let export = config::trace_export(|name| std::env::var(name).ok(), otlp_endpoint);
    let Some(export) = export else {
        tracing_subscriber::registry().with(fmt).try_init()?;
        return Ok(Telemetry { provider: None });
    };
    for warning in &export.warnings {
        eprintln!("warning: {warning}");
    }
    let exporter = match exporter::span_exporter(&export) {
        Ok(exporter) => exporter,
        Err(e) => {
            eprintln!("warning: traces are not exported: {e:#}");
            tracing_subscriber::registry().with(fmt).try_init()?;
            return Ok(Telemetry { provider: None });
        }
    };
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource::resource(identity))
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
    /// Flushes pending spans and stops the exporter, waiting at most [`FLUSH_BOUND`] (plus a
    /// second of slack): the flush runs on a detached thread, so a collector that never answers
    /// cannot hold the exit. Failures are warnings; they never fail the command.
    pub async fn shutdown(self) {
        let Some(provider) = self.provider else {
            return;
        };
        let (done, finished) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("otlp-flush".into())
            .spawn(move || {
                let _ = done.send(provider.shutdown_with_timeout(FLUSH_BOUND));
            });
        if let Err(e) = spawned {
            eprintln!("warning: cannot start the OTLP flush: {e}");
            return;
        }
        match tokio::time::timeout(FLUSH_BOUND + Duration::from_secs(1), finished).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => eprintln!("warning: OTLP exporter did not shut down cleanly: {e}"),
            Ok(Err(_)) => eprintln!("warning: the OTLP flush thread stopped without a result"),
            Err(_) => eprintln!(
                "warning: OTLP flush still pending after {} s; exiting without it",
                FLUSH_BOUND.as_secs() + 1
            ),
        }
    }
}
