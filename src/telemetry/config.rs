//! Which OTLP export (traces, metrics) this process does, read from the standard OpenTelemetry
//! variables.
//!
//! The exporter itself reads the endpoint, headers and timeout variables; this module decides
//! only what the SDK leaves to the application: whether export is on at all (off, at no cost,
//! when no endpoint is configured), the protocol (`grpc` unless `http/protobuf` is asked for), and
//! the collector CA (`OTEL_EXPORTER_OTLP_CERTIFICATE`, which the Rust exporter does not read).

use std::path::PathBuf;

/// Transport of the OTLP export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/gRPC (`grpc`), the default: collectors listen for it on port 4317.
    Grpc,
    /// OTLP/HTTP with protobuf bodies (`http/protobuf`), usually port 4318.
    HttpProtobuf,
}

/// The signals exported, each with its own `OTEL_EXPORTER_OTLP_<SIGNAL>_*` variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Spans.
    Traces,
    /// Metrics.
    Metrics,
}

impl Signal {
    /// The signal's part of the variable names (`TRACES`).
    fn var_part(self) -> &'static str {
        match self {
            Signal::Traces => "TRACES",
            Signal::Metrics => "METRICS",
        }
    }

    /// The OTLP/HTTP path of the signal.
    fn http_path(self) -> &'static str {
        match self {
            Signal::Traces => "/v1/traces",
            Signal::Metrics => "/v1/metrics",
        }
    }
}

/// The export of one signal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// The signal.
    pub signal: Signal,
    /// Transport to the collector.
    pub protocol: Protocol,
    /// Endpoint from `--otlp-endpoint`, which overrides the variables; `None` leaves the
    /// endpoint to the exporter (`OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT`, then `…_ENDPOINT`).
    pub cli_endpoint: Option<String>,
    /// Whether the endpoint in effect is `https://` (TLS with system roots, plus the CA below).
    pub https: bool,
    /// PEM file of an extra CA that signs the collector's certificate.
    pub ca_certificate: Option<PathBuf>,
    /// Problems with the variables that did not stop the export (reported as warnings).
    pub warnings: Vec<String>,
}

/// Reads the export of `signal` from the variables `env` returns (`std::env::var` in the
/// binary) and the `--otlp-endpoint` flag; `None` when it is off: no endpoint at all,
/// `OTEL_SDK_DISABLED=true`, or `OTEL_<SIGNAL>_EXPORTER=none`.
pub fn export(
    signal: Signal,
    env: impl Fn(&str) -> Option<String>,
    cli_endpoint: Option<&str>,
) -> Option<Export> {
    let var = |name: &str| {
        env(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let part = signal.var_part();
    let exporter_var = format!("OTEL_{part}_EXPORTER");
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || var(&exporter_var).is_some_and(|v| v.eq_ignore_ascii_case("none"))
    {
        return None;
    }
    let signal_var = |name: &str| format!("OTEL_EXPORTER_OTLP_{part}_{name}");
    let cli_endpoint = cli_endpoint
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(String::from);
    let endpoint = cli_endpoint
        .clone()
        .or_else(|| var(&signal_var("ENDPOINT")))
        .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"))?;
    let mut warnings = Vec::new();
    let protocol_var = signal_var("PROTOCOL");
    let protocol = match first_of(&var, &[&protocol_var, "OTEL_EXPORTER_OTLP_PROTOCOL"]) {
        None => Protocol::Grpc,
        Some((_, value)) if value == "grpc" => Protocol::Grpc,
        Some((_, value)) if value == "http/protobuf" => Protocol::HttpProtobuf,
        Some((name, value)) => {
            warnings.push(format!(
                "{name}={value:?} is not supported (use grpc or http/protobuf); exporting over grpc"
            ));
            Protocol::Grpc
        }
    };
    let certificate_var = signal_var("CERTIFICATE");
    let ca_certificate = first_of(&var, &[&certificate_var, "OTEL_EXPORTER_OTLP_CERTIFICATE"])
        .map(|(_, path)| PathBuf::from(path));
    Some(Export {
        signal,
        protocol,
        https: endpoint.to_ascii_lowercase().starts_with("https://"),
        cli_endpoint,
        ca_certificate,
        warnings,
    })
}

/// The first of `names` that is set, with its name and value.
fn first_of(var: &impl Fn(&str) -> Option<String>, names: &[&str]) -> Option<(String, String)> {
    names
        .iter()
        .find_map(|name| var(name).map(|v| (name.to_string(), v)))
}

impl Export {
    /// The `--otlp-endpoint` flag as the exporter wants it: as given for gRPC; for OTLP/HTTP the
    /// flag is a base URL like `OTEL_EXPORTER_OTLP_ENDPOINT`, so the signal's path is appended.
    pub fn cli_signal_endpoint(&self) -> Option<String> {
        let endpoint = self.cli_endpoint.as_deref()?;
        Some(match self.protocol {
            Protocol::Grpc => endpoint.to_string(),
            Protocol::HttpProtobuf => format!(
                "{}{}",
                endpoint.trim_end_matches('/'),
                self.signal.http_path()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)], cli: Option<&str>) -> Option<Export> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        export(Signal::Traces, |name| map.get(name).cloned(), cli)
    }

    #[test]
    fn metrics_have_their_own_endpoint_path_and_off_switch() {
        let map: HashMap<&str, &str> = HashMap::from([
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ]);
        let env = |name: &str| map.get(name).map(|v| v.to_string());
        assert_eq!(
            export(Signal::Metrics, env, None),
            None,
            "a traces endpoint is not a metrics one"
        );
        let metrics = export(Signal::Metrics, env, Some("http://c:4318"));
        assert_eq!(
            metrics.and_then(|e| e.cli_signal_endpoint()).as_deref(),
            Some("http://c:4318/v1/metrics")
        );
        let off = HashMap::from([
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ]);
        let env = |name: &str| off.get(name).map(|v| v.to_string());
        assert_eq!(export(Signal::Metrics, env, None), None);
        assert!(export(Signal::Traces, env, None).is_some());
    }

    #[test]
    fn off_without_an_endpoint() {
        assert_eq!(read(&[], None), None);
        assert_eq!(read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "  ")], None), None);
        assert_eq!(read(&[("OTEL_SERVICE_NAME", "x")], None), None);
    }

    #[test]
    fn the_traces_endpoint_alone_turns_export_on() {
        let export = read(
            &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4317")],
            None,
        );
        assert_eq!(export.map(|e| e.protocol), Some(Protocol::Grpc));
    }

    #[test]
    fn disabled_or_none_exporter_wins_over_an_endpoint() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317");
        assert_eq!(read(&[endpoint, ("OTEL_SDK_DISABLED", "TRUE")], None), None);
        assert_eq!(
            read(&[endpoint, ("OTEL_TRACES_EXPORTER", "none")], None),
            None
        );
        assert!(read(&[endpoint, ("OTEL_SDK_DISABLED", "false")], None).is_some());
    }

    #[test]
    fn protocol_per_signal_first_then_generic() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        let http = read(
            &[endpoint, ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")],
            None,
        );
        assert_eq!(http.map(|e| e.protocol), Some(Protocol::HttpProtobuf));
        let signal = read(
            &[
                endpoint,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
            ],
            None,
        );
        assert_eq!(signal.map(|e| e.protocol), Some(Protocol::Grpc));
    }

    #[test]
    fn an_unsupported_protocol_warns_and_falls_back_to_grpc() {
        let export = read(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ],
            None,
        )
        .unwrap_or_else(|| panic!("export should be on"));
        assert_eq!(export.protocol, Protocol::Grpc);
        assert_eq!(export.warnings.len(), 1);
        assert!(export.warnings[0].contains("OTEL_EXPORTER_OTLP_PROTOCOL"));
    }

    #[test]
    fn https_and_the_ca_come_from_the_endpoint_in_effect() {
        let export = read(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://plain:4317"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "HTTPS://secure:4317"),
                ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ca.pem"),
            ],
            None,
        )
        .unwrap_or_else(|| panic!("export should be on"));
        assert!(export.https);
        assert_eq!(export.ca_certificate, Some(PathBuf::from("/etc/ca.pem")));
        let flag = read(
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://secure:4317")],
            Some("http://plain:4317"),
        );
        assert_eq!(flag.map(|e| e.https), Some(false));
    }

    #[test]
    fn the_flag_is_a_base_url_for_http() {
        let export = read(
            &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")],
            Some("http://c:4318/"),
        );
        assert_eq!(
            export.and_then(|e| e.cli_signal_endpoint()).as_deref(),
            Some("http://c:4318/v1/traces")
        );
        let grpc = read(&[], Some("http://c:4317"));
        assert_eq!(
            grpc.and_then(|e| e.cli_signal_endpoint()).as_deref(),
            Some("http://c:4317")
        );
    }
}
