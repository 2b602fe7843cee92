//! How a probe channel reaches its probe: over the network (a tonic [`Channel`], for a probe in
//! another process or region), or in this process ([`InProcessProbe`]), where tonic's client
//! calls the probe's own gRPC service without a socket. Both carry the same `Probe` and `Link`
//! calls, encoded the same way; the in-process one only skips loopback TCP, HTTP/2 framing and
//! the probe server's own thread, which at hundreds of requests a second cost more CPU than the
//! requests' own work (docs/performance.md).

use openbench_common::record::Execution;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tonic::body::Body;
use tonic::codegen::Service;
use tonic::codegen::http::{Request, Response};
use tonic::transport::Channel;
use tower::ServiceExt;
use tower::util::BoxCloneSyncService;

/// The error a probe transport returns: the network channel's own error, boxed as tonic's
/// client boxes it anyway (so a failed connection still reads as `Unavailable`).
pub type TransportError = Box<dyn std::error::Error + Send + Sync>;

/// A response on its way back from a probe.
type ResponseFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, TransportError>> + Send>>;

/// A probe served in this process: its gRPC routes (`Probe`, `Link`) as one service, called
/// directly by the coordinator's client.
#[derive(Clone)]
pub struct InProcessProbe(BoxCloneSyncService<Request<Body>, Response<Body>, TransportError>);

impl InProcessProbe {
    /// Wraps a probe's routes (tonic's `Routes`, which never fail: a refusal is a gRPC status
    /// inside the response).
    pub fn new<S>(routes: S) -> InProcessProbe
    where
        S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        InProcessProbe(BoxCloneSyncService::new(
            routes.map_err(|never: Infallible| -> TransportError { match never {} }),
        ))
    }
}

impl std::fmt::Debug for InProcessProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InProcessProbe")
    }
}

/// Marks a call that reached the probe through [`ProbeTransport::InProcess`]: the probe may then
/// hand its execution back in memory ([`InMemoryExecution`]) instead of as JSON, since nothing
/// crosses a process boundary.
#[derive(Clone, Copy, Debug)]
pub struct InProcessCall;

/// An execution handed back in memory by a probe in this process, as a response extension of
/// `Execute`, in place of the JSON a network caller gets: the same value the JSON would decode
/// to, without encoding and parsing it on the two sides of the call (docs/performance.md).
#[derive(Clone, Debug)]
pub struct InMemoryExecution(Arc<Mutex<Option<Execution>>>);

impl InMemoryExecution {
    /// Wraps the execution to hand back.
    pub fn new(execution: Execution) -> InMemoryExecution {
        InMemoryExecution(Arc::new(Mutex::new(Some(execution))))
    }

    /// The execution, once: `None` when it was taken already.
    pub fn take(&self) -> Option<Execution> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}

/// Where a probe channel's calls go.
#[derive(Clone, Debug)]
pub enum ProbeTransport {
    /// A connection (HTTP/2, optionally TLS) to a probe's URL.
    Network(Channel),
    /// A probe in this process, called without a socket.
    InProcess(InProcessProbe),
}

impl Service<Request<Body>> for ProbeTransport {
    type Response = Response<Body>;
    type Error = TransportError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        match self {
            ProbeTransport::Network(channel) => channel.poll_ready(cx).map_err(Into::into),
            ProbeTransport::InProcess(probe) => probe.0.poll_ready(cx),
        }
    }

    fn call(&mut self, mut request: Request<Body>) -> ResponseFuture {
        match self {
            ProbeTransport::Network(channel) => {
                let answer = channel.call(request);
                Box::pin(async move { answer.await.map_err(Into::into) })
            }
            ProbeTransport::InProcess(probe) => {
                // Routed now, decoded and admitted only after one yield: the caller's first
                // poll only hands the call over, as a network call's first poll hands it to the
                // connection's task, so a round's lanes are dispatched back to back instead of
                // each waiting for the one before it to be decoded and admitted. Dropped before
                // it answers (a harness timeout, a region declared down), the call is dropped
                // with it and the probe cancels the request, as for a reset network stream.
                request.extensions_mut().insert(InProcessCall);
                let answer = probe.0.call(request);
                Box::pin(async move {
                    tokio::task::yield_now().await;
                    answer.await
                })
            }
        }
    }
}
