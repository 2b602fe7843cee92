//! The probe's side of the link health check (`Link.Ping`, `link.proto`): answers at once with
//! its wall clock. The coordinator calls it on the port that serves `Execute` (same TLS, same
//! token), so a ping that goes unanswered means what matters: this probe cannot be reached for
//! work. It runs on the server's own thread, never behind the requests' work. It touches
//! no provider actor, so a busy lane never delays it.

use openbench_proto::v1::link_server::Link;
use openbench_proto::v1::{PingRequest, PingResponse};
use std::time::{SystemTime, UNIX_EPOCH};
use tonic::{Request, Response, Status};

/// The `Link` service: stateless.
#[derive(Debug, Clone, Copy, Default)]
pub struct LinkService;

#[tonic::async_trait]
impl Link for LinkService {
    async fn ping(&self, _request: Request<PingRequest>) -> Result<Response<PingResponse>, Status> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Ok(Response::new(PingResponse {
            probe_unix_micros: now,
        }))
    }
}
