//! Logging, tracing and metrics for the binary: a `tracing` subscriber on stderr, and, when an
//! OTLP endpoint is configured by the standard OpenTelemetry variables (or `--otlp-endpoint`), an
//! OpenTelemetry layer exporting spans, and a meter provider exporting the request metrics
//! (`openbench_probe::genai_metrics`), over OTLP/gRPC or OTLP/HTTP (see [`config`]).
//!
//! Export can never hurt a run: a collector that cannot be configured is a warning and the
//! command runs without export; spans go through the SDK's bounded batch queue (`OTEL_BSP_*`,
//! default 2048 spans), which drops when full and reports the count as a warning; the flush at
//! exit is bounded by [`FLUSH_BOUND`]. Trace context and baggage cross the coordinator→probe gRPC
//! hop in the request metadata (`openbench_probe::trace_context`), so a run's spans from every
//! region join one trace.
//!
//! Nothing here records a credential: spans carry ids, provider keys, outcomes and timings only.

pub mod config;
pub mod exporter;
pub mod resource;

pub use resource::{COORDINATOR_SERVICE, PROBE_SERVICE, ServiceIdentity};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Longest the command waits at exit for pending spans and metrics to reach the collector.
pub const FLUSH_BOUND: Duration = Duration::from_secs(5);

/// Keeps the exporters alive; flushes and shuts them down when the command ends.
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
    meters: Option<SdkMeterProvider>,
}

/// Installs the subscriber. Must run inside the tokio runtime (the OTLP exporter needs it).
///
/// Log level comes from `RUST_LOG` (default `warn`, so progress bars stay clean). Fails only
/// when a subscriber is already installed; export problems are warnings.
pub fn init(otlp_endpoint: Option<&str>, identity: &ServiceIdentity) -> anyhow::Result<Telemetry> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal: a log redirected to a file or a pipe reads plain.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .with_filter(filter);
    let env = |name: &str| std::env::var(name).ok();
    let meters = config::export(config::Signal::Metrics, env, otlp_endpoint)
        .and_then(|export| meter_provider(&export, identity));
    let traces = config::export(config::Signal::Traces, env, otlp_endpoint)
        .and_then(|export| tracer_provider(&export, identity));
    let Some(provider) = traces else {
        tracing_subscriber::registry().with(fmt).try_init()?;
        return Ok(Telemetry {
            traces: None,
            meters,
        });
    };
    // Spans carry our attributes only: no idle/busy times, source locations or thread names.
    // Only run traces leave the process: the actor framework's own spans (`Actor`, one root per
    // actor, target `ractor`) belong to no run and would clutter the backend.
    let otel = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("openbench-inference"))
        .with_tracked_inactivity(false)
        .with_location(false)
        .with_threads(false)
        .with_filter(EnvFilter::new(
            "info,h2=off,hyper=off,tonic=off,tower=off,reqwest=off,ractor=off",
        ));
    tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init()?;
    opentelemetry::global::set_tracer_provider(provider.clone());
    Ok(Telemetry {
        traces: Some(provider),
        meters,
    })
}

/// The tracer provider for `export`: spans through the SDK's bounded batch queue. `None`, with
/// a warning, when the exporter cannot be built.
fn tracer_provider(
    export: &config::Export,
    identity: &ServiceIdentity,
) -> Option<SdkTracerProvider> {
    warn_all(&export.warnings);
    match exporter::span_exporter(export) {
        Ok(exporter) => Some(
            SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource::resource(identity))
                .build(),
        ),
        Err(e) => {
            eprintln!("warning: traces are not exported: {e:#}");
            None
        }
    }
}

/// The meter provider for `export` (a periodic reader, `OTEL_METRIC_EXPORT_INTERVAL`, default
/// 60 s, and a final export at exit), installed as the global one the probe's instruments use.
fn meter_provider(export: &config::Export, identity: &ServiceIdentity) -> Option<SdkMeterProvider> {
    match exporter::metric_exporter(export) {
        Ok(exporter) => {
            let provider = SdkMeterProvider::builder()
                .with_periodic_exporter(exporter)
                .with_resource(resource::resource(identity))
                .build();
            opentelemetry::global::set_meter_provider(provider.clone());
            // The probe's request metrics record only once an exporting provider is installed.
            openbench_probe::genai_metrics::note_exported();
            Some(provider)
        }
        Err(e) => {
            eprintln!("warning: metrics are not exported: {e:#}");
            None
        }
    }
}

/// Prints the configuration warnings of an export.
fn warn_all(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
}

impl Telemetry {
    /// Flushes pending spans and metrics and stops the exporters, waiting at most
    /// [`FLUSH_BOUND`] (plus a second of slack): the flushes run at once on detached threads, so
    /// a collector that never answers cannot hold the exit. Failures are warnings; they never
    /// fail the command.
    pub async fn shutdown(self) {
        let Telemetry { traces, meters } = self;
        if traces.is_none() && meters.is_none() {
            return;
        }
        let (done, finished) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("otlp-flush".into())
            .spawn(move || {
                let metrics = std::thread::spawn(move || {
                    meters.map(|m| m.shutdown_with_timeout(FLUSH_BOUND))
                });
                let traces = traces.map(|p| p.shutdown_with_timeout(FLUSH_BOUND));
                let metrics = metrics.join().ok().flatten();
                let failed: Vec<String> = [traces, metrics]
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r.err().map(|e| e.to_string()))
                    .collect();
                let _ = done.send(failed);
            });
        if let Err(e) = spawned {
            eprintln!("warning: cannot start the OTLP flush: {e}");
            return;
        }
        match tokio::time::timeout(FLUSH_BOUND + Duration::from_secs(1), finished).await {
            Ok(Ok(failed)) if failed.is_empty() => {}
            Ok(Ok(failed)) => eprintln!(
                "warning: OTLP exporter did not shut down cleanly: {}",
                failed.join("; ")
            ),
            Ok(Err(_)) => eprintln!("warning: the OTLP flush thread stopped without a result"),
            Err(_) => eprintln!(
                "warning: OTLP flush still pending after {} s; exiting without it",
                FLUSH_BOUND.as_secs() + 1
            ),
        }
    }
}
