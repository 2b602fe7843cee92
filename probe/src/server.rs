//! The probe server: the tonic `Probe` service in front of one actor per provider.
//!
//! `Execute` routes a planned request to its provider's actor; `Describe` says who this probe is
//! (version, region, lock hashes, providers); `Link.Ping` ([`crate::link`]) answers the
//! coordinator's health checks on the same connection. Trace context: the caller's context, read from the
//! gRPC metadata by [`crate::trace_context`], is the remote parent of the request's GenAI span
//! ([`crate::genai_span`]), created by hand (never inside an `#[instrument]` function, where
//! `set_parent` fails).
//!
//! Guards, before a provider is ever called: the bearer token ([`crate::auth`]) and TLS
//! ([`ProbeSecurity`]), a request-size limit ([`MAX_REQUEST_BYTES`]), a deadline no longer than
//! the spec's `timeout_ms` ([`bounded_deadline`]) and one request at a time per provider lane.

use crate::actor::{Busy, ProviderActor, ProviderMsg};
use crate::auth::{ProbeToken, RequireToken};
use crate::credentials::Credentials;
use crate::error::ProbeError;
use crate::executor::Executor;
use crate::genai_metrics::RequestMetrics;
use crate::genai_span::{SpanPolicy, SpanTemplate, record_execution, request_span};
use crate::limits::encode_within;
use openbench_common::hash::{canonical_json, sha256_hex};
use openbench_common::limits::GRPC_MESSAGE_LIMIT_BYTES;
use openbench_common::request::PlannedRequest;
use openbench_common::spec::{MAX_TIMEOUT_MS, ProviderAdapter, RequestContract};
use openbench_proto::v1::link_server::LinkServer;
use openbench_proto::v1::probe_server::{Probe, ProbeServer};
use openbench_proto::v1::{DescribeRequest, DescribeResponse, ExecuteRequest, ExecuteResponse};
use ractor::{Actor, ActorRef, rpc::CallResult};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::ServerTlsConfig;
use tonic::{Request, Response, Status};

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
/// without a token (in-process probes on loopback).
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
        span_templates: config
            .providers
            .iter()
            .map(|p| (p.key.clone(), SpanTemplate::new(p, &config.contract)))
            .collect(),
        span_policy: SpanPolicy::from_env(),
        metrics: RequestMetrics::global(),
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
    // The coordinator's health pings, on the same port, TLS and token as `Execute`.
    let link = InterceptedService::new(
        LinkServer::new(crate::link::LinkService),
        RequireToken::new(security.token.as_ref()),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let task = tokio::spawn(
        builder
            .add_service(guarded)
            .add_service(link)
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stopped.await;
            }),
    );
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
    /// Per provider, what its GenAI request spans share.
    span_templates: HashMap<String, SpanTemplate>,
    /// Names and content capture of the request spans, from the environment.
    span_policy: SpanPolicy,
    /// The request metrics (no-ops without a meter provider).
    metrics: RequestMetrics,
}

#[tonic::async_trait]
impl Probe for ProbeService {
    async fn execute(
        &self,
        request: Request<ExecuteRequest>,
    ) -> Result<Response<ExecuteResponse>, Status> {
        let parent = crate::trace_context::extract(request.metadata());
        let call = request.into_inner();
        let planned: PlannedRequest =
            serde_json::from_str(&call.planned_request_json).map_err(|e| {
                Status::invalid_argument(format!(
                    "planned_request_json is not a PlannedRequest: {e}"
                ))
            })?;
        bounded_deadline(&planned, self.timeout_ms)?;
        let id = &planned.identity;
        let actor = self.actors.get(&id.provider).ok_or_else(|| {
            Status::not_found(format!(
                "request {}: probe in region {} serves no provider {:?} (it serves: {})",
                id.request_id,
                self.region,
                id.provider,
                self.providers.join(", ")
            ))
        })?;
        let span = match self.span_templates.get(&id.provider) {
            Some(template) => request_span(template, &planned, parent, self.span_policy),
            None => tracing::Span::none(),
        };
        let actor_span = span.clone();
        let (provider, request_id) = (id.provider.clone(), id.request_id.clone());
        let reply = actor
            .call(
                |port| ProviderMsg::Execute(Box::new(planned), actor_span, port),
                None,
            )
            .await;
        let mut execution = match reply {
            Ok(CallResult::Success(Ok(execution))) => execution,
            Ok(CallResult::Success(Err(Busy))) => {
                return Err(Status::failed_precondition(format!(
                    "provider {} is busy with another request in region {} (one at a time)",
                    provider, self.region
                )));
            }
            Ok(CallResult::Timeout) | Ok(CallResult::SenderError) | Err(_) => {
                return Err(Status::internal(format!(
                    "provider {}: its probe actor did not answer request {}",
                    provider, request_id
                )));
            }
        };
        record_execution(&span, &execution, self.span_policy);
        self.metrics.record(&execution);
        let within = GRPC_MESSAGE_LIMIT_BYTES - 64 * 1024;
        let execution_json = encode_within(&mut execution, within).map_err(|e| {
            Status::internal(format!(
                "request {request_id}: cannot encode the record: {e}"
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

/// Refuses, with `INVALID_ARGUMENT` naming the field, a planned deadline above the longest any
/// spec allows ([`MAX_TIMEOUT_MS`]) or above this probe's spec `timeout_ms`: a caller cannot hold
/// a lane (and the provider's key) longer than the contract allows. Zero means the contract's
/// timeout (the executor's default).
fn bounded_deadline(planned: &PlannedRequest, timeout_ms: u64) -> Result<(), Status> {
    let (request_id, deadline_ms) = (&planned.identity.request_id, planned.deadline_ms);
    if deadline_ms > MAX_TIMEOUT_MS {
        return Err(Status::invalid_argument(format!(
            "request {request_id}: deadline_ms {deadline_ms} is above {MAX_TIMEOUT_MS}"
        )));
    }
    if deadline_ms > timeout_ms {
        return Err(Status::invalid_argument(format!(
            "request {request_id}: deadline_ms {deadline_ms} exceeds the spec's timeout_ms \
             {timeout_ms}"
        )));
    }
    Ok(())
}
