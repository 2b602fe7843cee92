//! Builds the OTLP exporters for an [`Export`]: gRPC (tonic) or HTTP/protobuf (blocking reqwest,
//! which runs on the SDK's own export threads), TLS with the system roots for `https://`
//! endpoints plus the CA of `OTEL_EXPORTER_OTLP_CERTIFICATE` when given. Spans and metrics share
//! the transport setup; only the builder type differs.

use super::config::{Export, Protocol};
use anyhow::Context;
use opentelemetry_otlp::tonic_types::transport::{Certificate, ClientTlsConfig};
use opentelemetry_otlp::{
    MetricExporter, SpanExporter, WithExportConfig, WithHttpConfig, WithTonicConfig,
};
use std::time::Duration;

/// Per-request timeout of the HTTP client we build for a custom CA (the exporter's default).
const HTTP_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The span exporter for `export`; endpoint, headers and timeout not given on the command line
/// come from the `OTEL_EXPORTER_OTLP_*` variables, read by the exporter.
pub fn span_exporter(export: &Export) -> anyhow::Result<SpanExporter> {
    let ca_pem = read_ca(export)?;
    let exporter = match export.protocol {
        Protocol::Grpc => tonic(SpanExporter::builder().with_tonic(), export, ca_pem).build(),
        Protocol::HttpProtobuf => {
            http(SpanExporter::builder().with_http(), export, ca_pem)?.build()
        }
    };
    exporter.context("cannot build the OTLP span exporter")
}

/// The metric exporter for `export` (cumulative temporality, the OTLP default).
pub fn metric_exporter(export: &Export) -> anyhow::Result<MetricExporter> {
    let ca_pem = read_ca(export)?;
    let exporter = match export.protocol {
        Protocol::Grpc => tonic(MetricExporter::builder().with_tonic(), export, ca_pem).build(),
        Protocol::HttpProtobuf => {
            http(MetricExporter::builder().with_http(), export, ca_pem)?.build()
        }
    };
    exporter.context("cannot build the OTLP metric exporter")
}

/// The collector CA's PEM, when one is configured.
fn read_ca(export: &Export) -> anyhow::Result<Option<Vec<u8>>> {
    let Some(path) = &export.ca_certificate else {
        return Ok(None);
    };
    openbench_common::input_file::read_regular(
        path,
        openbench_common::input_file::CREDENTIAL_FILE_BYTES,
    )
    .map(Some)
    .with_context(|| {
        format!(
            "cannot read the collector CA {} (OTEL_EXPORTER_OTLP_CERTIFICATE)",
            path.display()
        )
    })
}

/// A gRPC builder with the flag's endpoint and TLS for `https://` (plus the CA).
fn tonic<B: WithExportConfig + WithTonicConfig>(
    mut builder: B,
    export: &Export,
    ca_pem: Option<Vec<u8>>,
) -> B {
    if let Some(endpoint) = export.cli_signal_endpoint() {
        builder = builder.with_endpoint(endpoint);
    }
    if export.https || ca_pem.is_some() {
        let mut tls = ClientTlsConfig::new().with_enabled_roots();
        if let Some(pem) = ca_pem {
            tls = tls.ca_certificate(Certificate::from_pem(pem));
        }
        builder = builder.with_tls_config(tls);
    }
    builder
}

/// An HTTP/protobuf builder with the flag's endpoint and, for a custom CA, a client trusting it.
fn http<B: WithExportConfig + WithHttpConfig>(
    builder: B,
    export: &Export,
    ca_pem: Option<Vec<u8>>,
) -> anyhow::Result<B> {
    let mut builder = builder.with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
    if let Some(endpoint) = export.cli_signal_endpoint() {
        builder = builder.with_endpoint(endpoint);
    }
    if let Some(pem) = ca_pem {
        builder = builder.with_http_client(http_client_trusting(pem)?);
    }
    Ok(builder)
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
