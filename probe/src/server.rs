//! The probe server: the tonic `Probe` service in front of one actor per provider.
//!
//! `Execute` routes a planned request to its provider's actor; `Describe` says who this probe is
//! (version, region, lock hashes, providers). Trace context: the caller's W3C `traceparent` is
//! parsed by hand and set as the remote parent of a span created by hand (never inside an
//! `#[instrument]` function, where `set_parent` fails), and the trace id is also kept as a field.

use crate::actor::{Busy, ProviderActor, ProviderMsg};
use crate::auth::{ProbeToken, RequireToken};
use crate::credentials::Credentials;
use crate::error::ProbeError;
use crate::executor::Executor;
use openbench_common::hash::{canonical_json, sha256_hex};
use openbench_common::plan::PlannedRequest;
use openbench_common::spec::{ProviderAdapter, RequestContract};
use openbench_proto::v1::probe_server::{Probe, ProbeServer};
use openbench_proto::v1::{DescribeRequest, DescribeResponse, ExecuteRequest, ExecuteResponse};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use ractor::{Actor, ActorRef, rpc::CallResult};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::ServerTlsConfig;
use tonic::{Request, Response, Status};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Everything a probe server needs.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// Region label reported by `Describe`.
    pub region: String,
    /// The fixed request contract.
    pub contract: RequestContract,
    /// Providers with resolved http(s) endpoints.
    pub providers: Vec<ProviderAdapter>,
    /// This probe's own credentials.
    pub credentials: Credentials,
    /// Digest of the code the probe runs (the lock's `code` hash), reported by `Describe`.
    pub code_digest: String,
}

/// Largest request message a probe decodes: a planned request is a few KiB of messages, so 1 MiB
/// leaves ample room while refusing a caller who sends megabytes for the provider to read.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;

/// How a probe server is protected. The default (no TLS, no token) is for loopback only.
#[derive(Debug, Clone, Default)]
pub struct ProbeSecurity {
    /// TLS (and, with a client CA, mutual TLS); `None` serves plaintext.
    pub tls: Option<ServerTlsConfig>,
    /// The bearer token every call must carry; `None` admits calls without one.
    pub token: Option<ProbeToken>,
}

/// A running probe server (or its health service alone, from [`serve_health`]).
#[derive(Debug)]
pub struct ProbeServerHandle {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
    actors: Vec<ActorRef<ProviderMsg>>,
}

impl ProbeServerHandle {
    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting calls, lets in-flight calls finish, then stops the provider actors.
    pub async fn shutdown(mut self) -> Result<(), ProbeError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let served = (&mut self.task).await;
        for actor in &self.actors {
            actor.stop(None);
        }
        match served {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(ProbeError::Server {
                message: e.to_string(),
            }),
            Err(e) => Err(ProbeError::Server {
                message: format!("server task failed: {e}"),
            }),
        }
    }
}

/// Starts one actor per provider and serves the `Probe` service on `listener` in plaintext,
/// without a token (the coordinator's in-process loopback probes).
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    config: ProbeConfig,
) -> Result<ProbeServerHandle, ProbeError> {
    serve_secured(listener, config, ProbeSecurity::default()).await
}

/// [`serve_on`] with TLS and a token as `security` says.
pub async fn serve_secured(
    listener: tokio::net::TcpListener,
    config: ProbeConfig,
    security: ProbeSecurity,
) -> Result<ProbeServerHandle, ProbeError> {
    let addr = listener.local_addr().map_err(|e| ProbeError::Server {
        message: format!("listener has no local address: {e}"),
    })?;
    let adapters_value =
        serde_json::to_value(&config.providers).map_err(|e| ProbeError::Server {
            message: format!("cannot hash the adapters: {e}"),
        })?;
    let tokenizer = tokio::task::spawn_blocking(openbench_common::tokenizer::ranks_sha256)
        .await
        .map_err(|e| ProbeError::Server {
            message: format!("cannot hash the tokenizer ranks: {e}"),
        })?;
    let lock_hashes = BTreeMap::from([
        (
            "adapters".to_string(),
            sha256_hex(canonical_json(&adapters_value)),
        ),
        ("code".to_string(), config.code_digest.clone()),
        ("tokenizer".to_string(), tokenizer),
    ]);
    let mut actors = HashMap::new();
    for adapter in &config.providers {
        let key = adapter.key.clone();
        let executor = Executor::new(
            adapter.clone(),
            config.contract.clone(),
            &config.credentials,
        )?;
        let (actor, _join) = Actor::spawn(None, ProviderActor, executor)
            .await
            .map_err(|e| ProbeError::Server {
                message: format!("provider {key}: cannot start its actor: {e}"),
            })?;
        actors.insert(key, actor);
    }
    let service = ProbeService {
        region: config.region.clone(),
        providers: config.providers.iter().map(|p| p.key.clone()).collect(),
        lock_hashes,
        timeout_ms: config.contract.timeout_ms,
        actors: actors.clone(),
    };
    let mut builder = tonic::transport::Server::builder();
    if let Some(tls) = security.tls {
        builder = builder.tls_config(tls).map_err(|e| ProbeError::Server {
            message: format!("cannot use the TLS configuration: {e}"),
        })?;
    }
    let guarded = InterceptedService::new(
        ProbeServer::new(service).max_decoding_message_size(MAX_REQUEST_BYTES),
        RequireToken::new(security.token.as_ref()),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let task = tokio::spawn(builder.add_service(guarded).serve_with_incoming_shutdown(
        incoming,
        async {
            let _ = stopped.await;
        },
    ));
    Ok(ProbeServerHandle {
        addr,
        stop: Some(stop),
        task,
        actors: actors.into_values().collect(),
    })
}

/// Serves the standard gRPC health service (`grpc.health.v1`, from tonic-health) on a listener of
/// its own, in plaintext and without a token, for orchestrators: Kubernetes' gRPC readiness
/// probes speak neither TLS nor bearer tokens. It reports the whole server (`""`) as serving and
/// reveals nothing about the providers.
pub fn serve_health(listener: tokio::net::TcpListener) -> Result<ProbeServerHandle, ProbeError> {
    let addr = listener.local_addr().map_err(|e| ProbeError::Server {
        message: format!("health listener has no local address: {e}"),
    })?;
    let (_reporter, service) = tonic_health::server::health_reporter();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let task = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stopped.await;
            }),
    );
    Ok(ProbeServerHandle {
        addr,
        stop: Some(stop),
        task,
        actors: Vec::new(),
    })
}

/// The tonic service: routes and describes.
struct ProbeService {
    region: String,
    providers: Vec<String>,
    lock_hashes: BTreeMap<String, String>,
    /// The spec's `timeout_ms`: no caller may ask for a longer deadline.
    timeout_ms: u64,
    actors: HashMap<String, ActorRef<ProviderMsg>>,
}

#[tonic::async_trait]
impl Probe for ProbeService {
    async fn execute(
        &self,
        request: Request<ExecuteRequest>,
    ) -> Result<Response<ExecuteResponse>, Status> {
        let call = request.into_inner();
        let actor = self.actors.get(&call.provider).ok_or_else(|| {
            Status::not_found(format!(
                "probe in region {} serves no provider {:?} (it serves: {})",
                self.region,
                call.provider,
                self.providers.join(", ")
            ))
        })?;
        let mut planned: PlannedRequest = serde_json::from_str(&call.planned_request_json)
            .map_err(|e| {
                Status::invalid_argument(format!(
                    "request {}: planned_request_json is not a PlannedRequest: {e}",
                    call.request_id
                ))
            })?;
        if planned.provider != call.provider {
            return Err(Status::invalid_argument(format!(
                "request {}: planned provider {:?} differs from the call's provider {:?}",
                call.request_id, planned.provider, call.provider
            )));
        }
        planned.deadline_ms = bounded_deadline(&call, &planned, self.timeout_ms)?;
        let span = request_span(&call);
        let reply = actor
            .call(
                |port| ProviderMsg::Execute(Box::new(planned), span, port),
                None,
            )
            .await;
        let execution = match reply {
            Ok(CallResult::Success(Ok(execution))) => execution,
            Ok(CallResult::Success(Err(Busy))) => {
                return Err(Status::failed_precondition(format!(
                    "provider {} is busy with another request in region {} (one at a time)",
                    call.provider, self.region
                )));
            }
            Ok(CallResult::Timeout) | Ok(CallResult::SenderError) | Err(_) => {
                return Err(Status::internal(format!(
                    "provider {}: its probe actor did not answer request {}",
                    call.provider, call.request_id
                )));
            }
        };
        let execution_json = serde_json::to_string(&execution).map_err(|e| {
            Status::internal(format!(
                "request {}: cannot encode the record: {e}",
                call.request_id
            ))
        })?;
        Ok(Response::new(ExecuteResponse { execution_json }))
    }

    async fn describe(
        &self,
        _request: Request<DescribeRequest>,
    ) -> Result<Response<DescribeResponse>, Status> {
        Ok(Response::new(DescribeResponse {
            version: openbench_common::VERSION.to_string(),
            region: self.region.clone(),
            lock_hashes: self.lock_hashes.clone().into_iter().collect(),
            providers: self.providers.clone(),
        }))
    }
}

/// The deadline to run with (the planned one, else the call's), refused with `INVALID_ARGUMENT`
/// naming the field when either exceeds the spec's `timeout_ms`: a caller cannot hold a lane (and
/// the provider's key) longer than the contract allows.
fn bounded_deadline(
    call: &ExecuteRequest,
    planned: &PlannedRequest,
    timeout_ms: u64,
) -> Result<u64, Status> {
    for (field, value) in [
        ("deadline_ms", call.deadline_ms),
        ("planned_request_json.deadline_ms", planned.deadline_ms),
    ] {
        if value > timeout_ms {
            return Err(Status::invalid_argument(format!(
                "request {}: {field} {value} exceeds the spec's timeout_ms {timeout_ms}",
                call.request_id
            )));
        }
    }
    Ok(if planned.deadline_ms > 0 {
        planned.deadline_ms
    } else {
        call.deadline_ms
    })
}

/// The probe span of one request, a child of the caller's span when `traceparent` is valid.
fn request_span(call: &ExecuteRequest) -> tracing::Span {
    let parent = call
        .trace_context
        .get("traceparent")
        .and_then(|v| parse_traceparent(v));
    let trace_id = parent
        .as_ref()
        .map(|p| p.trace_id().to_string())
        .unwrap_or_default();
    let span = tracing::info_span!(
        "probe.execute",
        request_id = %call.request_id,
        provider = %call.provider,
        lane = %call.lane,
        trace_id = %trace_id,
    );
    if let Some(parent) = parent {
        let cx = opentelemetry::Context::new().with_remote_span_context(parent);
        // Fails only when no OpenTelemetry layer is installed; the trace_id field remains.
        let _ = span.set_parent(cx);
    }
    span
}

/// Parses a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`); `None` when malformed or zero.
pub fn parse_traceparent(value: &str) -> Option<SpanContext> {
    let parts: Vec<&str> = value.trim().split('-').collect();
    let [version, trace, span, flags] = parts.as_slice() else {
        return None;
    };
    let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
    if !hex(version, 2) || *version == "ff" || !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some(SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags),
        true,
        TraceState::default(),
    ))
}
