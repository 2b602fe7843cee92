//! The probe's stall canaries, one pair per session (docs/validity.md): one on the work runtime
//! (where releases are timed and streams stamped) and one on the gRPC server's own thread (which
//! stamps pings, the clock-offset samples). `Health` answers with both summaries.

use openbench_common::validity::canary::Canary;
use openbench_proto::v1::HealthResponse;
use tonic::Status;

/// The canaries of one open session; they stop when the session is replaced and dropped.
pub(crate) struct SessionCanaries(Vec<Canary>);

impl SessionCanaries {
    /// Starts a canary on `work` and one on the runtime this is called from (the server's
    /// thread: `OpenSession` runs there).
    pub(crate) fn start(work: &tokio::runtime::Handle) -> SessionCanaries {
        let server = tokio::runtime::Handle::current();
        SessionCanaries(vec![
            Canary::start("probe", work),
            Canary::start("probe-link", &server),
        ])
    }

    /// Every canary's summary so far, as the `Health` answer.
    pub(crate) fn answer(&self) -> Result<HealthResponse, Status> {
        let summaries: Vec<_> = self.0.iter().map(Canary::summary).collect();
        let health_json = serde_json::to_string(&summaries)
            .map_err(|e| Status::internal(format!("health summary not encoded: {e}")))?;
        Ok(HealthResponse { health_json })
    }
}
