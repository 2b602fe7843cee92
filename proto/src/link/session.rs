//! Opening a session on a probe (`OpenSession`), as the coordinator does before round 1 and
//! again after a probe restarts: the one place that turns a [`SessionOpen`] into the call.

use super::ProbeChannel;
use crate::v1::probe_client::ProbeClient;
use crate::v1::{OpenSessionRequest, OpenSessionResponse};
use openbench_common::probe_session::SessionOpen;

/// Opens `session` on the probe behind `client`: the session id `Execute` calls carry and the
/// probe id records name, or the probe's refusal (a session that cannot be encoded is refused
/// here as `INVALID_ARGUMENT`, before any call).
pub async fn open_session(
    client: &mut ProbeClient<ProbeChannel>,
    session: &SessionOpen,
) -> Result<tonic::Response<OpenSessionResponse>, tonic::Status> {
    let session_json = serde_json::to_string(session).map_err(|e| {
        tonic::Status::invalid_argument(format!("the session cannot be encoded: {e}"))
    })?;
    client
        .open_session(OpenSessionRequest { session_json })
        .await
}
