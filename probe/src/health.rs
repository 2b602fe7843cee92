//! The standard gRPC health service (`grpc.health.v1`) on a listener of its own, in plaintext
//! and without a token, for orchestrators: Kubernetes' gRPC readiness probes speak neither TLS
//! nor bearer tokens. It reveals only that the process is up and serving, never who it serves.

use crate::error::ProbeError;
use std::net::SocketAddr;

/// A running health server.
#[derive(Debug)]
pub struct HealthServerHandle {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
}

impl HealthServerHandle {
    /// The address the health service listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the health service.
    pub async fn shutdown(mut self) -> Result<(), ProbeError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match (&mut self.task).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(ProbeError::Server {
                message: format!("health service: {e}"),
            }),
            Err(e) => Err(ProbeError::Server {
                message: format!("health service task failed: {e}"),
            }),
        }
    }
}

/// Serves `grpc.health.v1` on `listener`, reporting the whole server (`""`) as serving.
pub fn serve_health(listener: tokio::net::TcpListener) -> Result<HealthServerHandle, ProbeError> {
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
    Ok(HealthServerHandle {
        addr,
        stop: Some(stop),
        task,
    })
}
