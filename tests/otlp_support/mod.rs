//! An OTLP/gRPC receiver inside the test process: the `TraceService` and `MetricsService` of the
//! `opentelemetry-proto` crate on a loopback listener bound to port 0, optionally behind TLS,
//! collecting every exported span (with its resource) and metric point, so tests assert on real
//! OTLP data rather than on a collector's debug text.

#![allow(dead_code)]

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One received span, flattened: ids as hex, attributes as JSON-like values.
#[derive(Debug, Clone)]
pub struct Got {
    /// `service.name` of the exporting process.
    pub service: String,
    /// Every resource attribute of the exporting process.
    pub resource: BTreeMap<String, Val>,
    /// Trace id, hex.
    pub trace_id: String,
    /// Span id, hex.
    pub span_id: String,
    /// Parent span id, hex (empty for a root).
    pub parent_id: String,
    /// Span name.
    pub name: String,
    /// OTLP span kind (3 = CLIENT).
    pub kind: i32,
    /// OTLP status code (2 = ERROR).
    pub status_code: i32,
    /// Attributes.
    pub attributes: BTreeMap<String, Val>,
    /// Events: name and time (ns since the epoch).
    pub events: Vec<(String, u64)>,
    /// Start time, ns since the epoch.
    pub start_ns: u64,
}

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// String.
    S(String),
    /// Integer.
    I(i64),
    /// Float.
    F(f64),
    /// Boolean.
    B(bool),
    /// Array (of the above).
    A(Vec<Val>),
    /// Anything else.
    Other,
}

fn val(v: &Option<AnyValue>) -> Val {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => Val::S(s.clone()),
        Some(any_value::Value::IntValue(i)) => Val::I(*i),
        Some(any_value::Value::DoubleValue(f)) => Val::F(*f),
        Some(any_value::Value::BoolValue(b)) => Val::B(*b),
        Some(any_value::Value::ArrayValue(a)) => {
            Val::A(a.values.iter().map(|v| val(&Some(v.clone()))).collect())
        }
        _ => Val::Other,
    }
}

fn attrs(list: &[KeyValue]) -> BTreeMap<String, Val> {
    list.iter()
        .map(|kv| (kv.key.clone(), val(&kv.value)))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One received metric point: a histogram's count and bucket boundaries, or a sum's value.
#[derive(Debug, Clone)]
pub struct Point {
    /// Metric name.
    pub name: String,
    /// Point attributes.
    pub attributes: BTreeMap<String, Val>,
    /// Histogram: number of values recorded; sum: its value.
    pub count: u64,
    /// Histogram bucket boundaries (empty for a sum).
    pub bounds: Vec<f64>,
}

#[derive(Clone, Default)]
struct Sink {
    spans: Arc<Mutex<Vec<Got>>>,
    points: Arc<Mutex<Vec<Point>>>,
    raw: Arc<Mutex<Vec<String>>>,
}

#[tonic::async_trait]
impl MetricsService for Sink {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let body = request.into_inner();
        self.raw.lock().unwrap().push(format!("{body:?}"));
        let mut out = Vec::new();
        for rm in &body.resource_metrics {
            for sm in &rm.scope_metrics {
                for m in &sm.metrics {
                    match &m.data {
                        Some(metric::Data::Histogram(h)) => {
                            out.extend(h.data_points.iter().map(|p| Point {
                                name: m.name.clone(),
                                attributes: attrs(&p.attributes),
                                count: p.count,
                                bounds: p.explicit_bounds.clone(),
                            }))
                        }
                        Some(metric::Data::Sum(sum)) => {
                            out.extend(sum.data_points.iter().map(|p| Point {
                                name: m.name.clone(),
                                attributes: attrs(&p.attributes),
                                count: match p.value {
                                    Some(number_data_point::Value::AsInt(i)) => i as u64,
                                    Some(number_data_point::Value::AsDouble(f)) => f as u64,
                                    None => 0,
                                },
                                bounds: Vec::new(),
                            }))
                        }
                        _ => {}
                    }
                }
            }
        }
        self.points.lock().unwrap().extend(out);
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl TraceService for Sink {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let body = request.into_inner();
        self.raw.lock().unwrap().push(format!("{body:?}"));
        let mut out = Vec::new();
        for rs in &body.resource_spans {
            let resource = rs
                .resource
                .as_ref()
                .map(|r| attrs(&r.attributes))
                .unwrap_or_default();
            let service = match resource.get("service.name") {
                Some(Val::S(s)) => s.clone(),
                _ => String::new(),
            };
            for ss in &rs.scope_spans {
                for span in &ss.spans {
                    out.push(Got {
                        service: service.clone(),
                        resource: resource.clone(),
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_id: hex(&span.parent_span_id),
                        name: span.name.clone(),
                        kind: span.kind,
                        status_code: span.status.as_ref().map(|s| s.code).unwrap_or(0),
                        attributes: attrs(&span.attributes),
                        events: span
                            .events
                            .iter()
                            .map(|e| (e.name.clone(), e.time_unix_nano))
                            .collect(),
                        start_ns: span.start_time_unix_nano,
                    });
                }
            }
        }
        self.spans.lock().unwrap().extend(out);
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// A running receiver; stops with the test process.
pub struct Receiver {
    /// The address it listens on.
    pub addr: SocketAddr,
    sink: Sink,
    _runtime: tokio::runtime::Runtime,
}

impl Receiver {
    /// Starts a plain-text receiver on a loopback port the kernel picks.
    pub fn start() -> Receiver {
        Self::start_with(None)
    }

    /// Starts a receiver; with `tls` = (certificate PEM, key PEM) it serves TLS.
    pub fn start_with(tls: Option<(String, String)>) -> Receiver {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let sink = Sink::default();
        // Collectors forward gzip-compressed OTLP by default.
        let gzip = tonic::codec::CompressionEncoding::Gzip;
        let service = TraceServiceServer::new(sink.clone()).accept_compressed(gzip);
        let metrics = MetricsServiceServer::new(sink.clone()).accept_compressed(gzip);
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let mut builder = tonic::transport::Server::builder();
        if let Some((cert, key)) = tls {
            let identity = tonic::transport::Identity::from_pem(cert, key);
            builder = builder
                .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
                .unwrap();
        }
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        let router = builder.add_service(service).add_service(metrics);
        runtime.spawn(async move { router.serve_with_incoming(incoming).await });
        Receiver {
            addr,
            sink,
            _runtime: runtime,
        }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Got> {
        self.sink.spans.lock().unwrap().clone()
    }

    /// Every metric point received so far, in arrival order (cumulative: later points of the
    /// same series supersede earlier ones).
    pub fn points(&self) -> Vec<Point> {
        self.sink.points.lock().unwrap().clone()
    }

    /// Every export request received so far, as debug text (for "no secret anywhere" checks).
    pub fn raw_text(&self) -> String {
        self.sink.raw.lock().unwrap().join("\n")
    }

    /// Waits until `done(spans)` holds or `limit` passes; returns the spans either way.
    pub fn wait_for(&self, limit: Duration, done: impl Fn(&[Got]) -> bool) -> Vec<Got> {
        let started = Instant::now();
        loop {
            let spans = self.spans();
            if done(&spans) || started.elapsed() >= limit {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
