//! Builds the OTLP span exporter for a [`TraceExport`]: gRPC (tonic) or HTTP/protobuf
//! (blocking reqwest, which runs on the batch processor's own thread), TLS with the system roots
//! for `https://` endpoints plus the CA of `OTEL_EXPORTER_OTLP_CERTIFICATE` when given.

use super::config::{Protocol, TraceExport};
use anyhow::Context;
use opentelemetry_otlp::tonic_types::transport::{Certificate, ClientTlsConfig};
use opentelemetry_otlp::{SpanExporter, WithExportConfig, WithHttpConfig, WithTonicConfig};
use std::time::Duration;

/// Per-request timeout of the HTTP client we build for a custom CA (the exporter's default).
const HTTP_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The span exporter for `export`; endpoint, headers and timeout not given on the command line
/// come from the `OTEL_EXPORTER_OTLP_*` variables, read by the exporter.
pub fn span_exporter(export: &TraceExport) -> anyhow::Result<SpanExporter> {
    let ca_pem = match &export.ca_certificate {
        Some(path) => Some(std::fs::read(path).with_context(|| {
            format!(
                "cannot read the collector CA {} (OTEL_EXPORTER_OTLP_CERTIFICATE)",
                path.display()
            )
        })?),
        None => None,
    };
    let exporter = match export.protocol {
        Protocol::Grpc => {
            let mut builder = SpanExporter::builder().with_tonic();
            if let Some(endpoint) = export.cli_signal_endpoint() {
                builder = builder.with_endpoint(endpoint);
            }
            if export.https || ca_pem.is_some() {
                let mut tls = ClientTlsConfig::new().with_enabled_roots();
                if let Some(pem) = &ca_pem {
                    tls = tls.ca_certificate(Certificate::from_pem(pem));
                }
                builder = builder.with_tls_config(tls);
            }
            builder.build()
        }
        Protocol::HttpProtobuf => {
            let mut builder = SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
            if let Some(endpoint) = export.cli_signal_endpoint() {
                builder = builder.with_endpoint(endpoint);
            }
            if let Some(pem) = ca_pem {
                builder = builder.with_http_client(http_client_trusting(pem)?);
            }
            builder.build()
        }
    };
    exporter.context("cannot build the OTLP span exporter")
}

/// A blocking HTTP client trusting the system roots and the CA in `pem`. Built on a thread of
/// its own: the blocking client owns a runtime, which must not be created on an async thread.
fn http_client_trusting(pem: Vec<u8>) -> anyhow::Result<reqwest::blocking::Client> {
    let certificate = reqwest::Certificate::from_pem(&pem)
        .context("the collector CA (OTEL_EXPORTER_OTLP_CERTIFICATE) is not a PEM certificate")?;
    std::thread::spawn(move || {
        reqwest::blocking::Client::builder()
            .timeout(HTTP_EXPORT_TIMEOUT)
            .add_root_certificate(certificate)
            .build()
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the thread building the OTLP HTTP client panicked"))?
    .context("cannot build the OTLP HTTP client")
}
