//! The probe server: the connection limits ([`crate::connections`]), TLS, the token check and
//! the request-size limit in front of the `Probe` service ([`crate::service`]), which runs one actor per provider of the open session; and the
//! plain `grpc.health.v1` service for orchestrators.
//!
//! A probe starts knowing only its region, where its credentials come from and which endpoints
//! they may go to ([`ProbeConfig`]); the adapters and the request contract arrive with the
//! coordinator's session (`OpenSession`). `Link.Ping`
//! ([`crate::link`]) answers the coordinator's health checks on the same port.
//!
//! The server runs on a runtime thread of its own ([`LinkRuntime`]); the requests' work runs on
//! the caller's runtime, so streams in flight never starve a ping (docs/faults.md).

use crate::auth::{ProbeToken, RequireToken};
use crate::connections::{ConnectionLimits, Gate, guarded_incoming};
use crate::error::ProbeError;
use crate::service::{Actors, ProbeService};
use crate::session_open::{CredentialSource, EndpointRules};
use openbench_proto::link::{InProcessProbe, LinkRuntime};
use openbench_proto::v1::link_server::LinkServer;
use openbench_proto::v1::probe_server::ProbeServer;
use std::net::SocketAddr;
use std::sync::Arc;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::ServerTlsConfig;

/// Everything a probe server needs before any session: who it is and what it keeps.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// Region label: a session for another region is refused.
    pub region: String,
    /// This probe's own credentials (the only thing it keeps).
    pub credentials: CredentialSource,
    /// Endpoints served in this process and the owner's allow-list.
    pub endpoints: EndpointRules,
    /// Digest of the code the probe runs (the lock's `code` hash), reported by `Describe`. The
    /// binary passes the digest it was built with; only tests pass another.
    pub code_digest: String,
}

/// Largest request message a probe decodes: a planned request is a few KiB of messages, so 1 MiB
/// leaves ample room while refusing a caller who sends megabytes for the provider to read.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;

/// How a probe server is protected. The default (no TLS, no token, the default connection
/// limits) is for loopback only.
#[derive(Debug, Clone, Default)]
pub struct ProbeSecurity {
    /// TLS (and, with a client CA, mutual TLS); `None` serves plaintext.
    pub tls: Option<ServerTlsConfig>,
    /// The bearer token every call must carry; `None` admits calls without one.
    pub token: Option<ProbeToken>,
    /// What connections that have not shown the token may hold.
    pub connections: ConnectionLimits,
}

/// A running probe server (or its health service alone, from [`serve_health`]).
#[derive(Debug)]
pub struct ProbeServerHandle {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
    actors: Actors,
    gate: Arc<Gate>,
    /// The thread the server's connections and calls run on, kept while the server runs.
    _runtime: LinkRuntime,
}

impl ProbeServerHandle {
    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting calls, closes the connections that never authenticated, lets in-flight
    /// calls finish, then stops the provider actors.
    pub async fn shutdown(mut self) -> Result<(), ProbeError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.gate.close_all();
        let served = (&mut self.task).await;
        self.actors.stop_all();
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

/// Serves the `Probe` service on `listener` in plaintext, without a token (in-process probes on
/// loopback).
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
    // The requests' work (upstream connections, timing, records) runs on the caller's runtime;
    // the server itself (connections, HTTP/2, every call's framing, `Link.Ping`) on a thread of
    // its own, so thousands of streams in flight never starve a health ping.
    let work = tokio::runtime::Handle::current();
    let runtime = server_runtime("openbench-probe-link")?;
    let actors = Actors::default();
    let service = ProbeService::new(config, actors.clone(), work).await?;
    let mut builder = tonic::transport::Server::builder();
    if let Some(tls) = security.tls {
        builder = builder.tls_config(tls).map_err(|e| ProbeError::Server {
            message: format!("cannot use the TLS configuration: {e}"),
        })?;
    }
    let service = InterceptedService::new(
        ProbeServer::new(service).max_decoding_message_size(MAX_REQUEST_BYTES),
        RequireToken::new(security.token.as_ref()),
    );
    // The coordinator's health pings, on the same port, TLS and token as `Execute`.
    let link = InterceptedService::new(
        LinkServer::new(crate::link::LinkService),
        RequireToken::new(security.token.as_ref()),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let gate = Gate::new(security.connections);
    let listener = move_listener(listener, &runtime)?;
    let incoming = guarded_incoming(listener, gate.clone());
    let task = runtime.handle().spawn(
        builder
            .add_service(service)
            .add_service(link)
            .serve_with_incoming_shutdown(incoming, async {
                let _ = stopped.await;
            }),
    );
    Ok(ProbeServerHandle {
        addr,
        stop: Some(stop),
        task,
        actors,
        gate,
        _runtime: runtime,
    })
}

/// A probe served in this process: its routes, called by the coordinator's client without a
/// socket ([`InProcessProbe`]), and its provider actors, stopped by [`InProcessServer::shutdown`].
#[derive(Debug)]
pub struct InProcessServer {
    routes: InProcessProbe,
    actors: Actors,
}

impl InProcessServer {
    /// What the coordinator's channel calls.
    pub fn probe(&self) -> InProcessProbe {
        self.routes.clone()
    }

    /// Stops the provider actors (the calls themselves run on their callers' tasks, which have
    /// ended when the session is shut down).
    pub fn shutdown(self) {
        self.actors.stop_all();
    }
}

/// Serves the `Probe` and `Link` services in this process, without a listener: the same
/// services, message limit and per-provider actors as [`serve_on`], with no TLS, token or
/// connection limits, since nothing outside the process can reach them. Calls run on the
/// caller's runtime, which also does the requests' work.
pub async fn serve_in_process(config: ProbeConfig) -> Result<InProcessServer, ProbeError> {
    let work = tokio::runtime::Handle::current();
    let actors = Actors::default();
    let service = ProbeService::new(config, actors.clone(), work).await?;
    let routes = tonic::service::Routes::new(
        ProbeServer::new(service).max_decoding_message_size(MAX_REQUEST_BYTES),
    )
    .add_service(LinkServer::new(crate::link::LinkService))
    .prepare();
    Ok(InProcessServer {
        routes: InProcessProbe::new(routes),
        actors,
    })
}

/// Serves the standard gRPC health service (`grpc.health.v1`, from tonic-health) on a listener of
/// its own, in plaintext and without a token, for orchestrators: Kubernetes' gRPC readiness
/// probes speak neither TLS nor bearer tokens. It reports the whole server (`""`) as serving and
/// reveals nothing about the providers. No call here carries a token, so every connection is
/// closed at `limits`' handshake deadline (an orchestrator's check takes one call) and counts
/// against its caps.
pub fn serve_health(
    listener: tokio::net::TcpListener,
    limits: ConnectionLimits,
) -> Result<ProbeServerHandle, ProbeError> {
    let addr = listener.local_addr().map_err(|e| ProbeError::Server {
        message: format!("health listener has no local address: {e}"),
    })?;
    let runtime = server_runtime("openbench-probe-health")?;
    let (_reporter, service) = tonic_health::server::health_reporter();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let gate = Gate::new(limits);
    let listener = move_listener(listener, &runtime)?;
    let incoming = guarded_incoming(listener, gate.clone());
    let task = runtime.handle().spawn(
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
        actors: Actors::default(),
        gate,
        _runtime: runtime,
    })
}

/// The runtime thread a server runs on.
fn server_runtime(name: &str) -> Result<LinkRuntime, ProbeError> {
    LinkRuntime::start(name).map_err(|e| ProbeError::Server {
        message: format!("cannot start the server's runtime thread: {e}"),
    })
}

/// `listener`, registered with `runtime`'s reactor instead of the caller's: its accepts then
/// wake the server's own thread, whatever load the caller's runtime carries.
fn move_listener(
    listener: tokio::net::TcpListener,
    runtime: &LinkRuntime,
) -> Result<tokio::net::TcpListener, ProbeError> {
    let error = |e: std::io::Error| ProbeError::Server {
        message: format!("cannot move the listener to the server's thread: {e}"),
    };
    let listener = listener.into_std().map_err(error)?;
    let _entered = runtime.handle().enter();
    tokio::net::TcpListener::from_std(listener).map_err(error)
}
