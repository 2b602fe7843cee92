//! One lane's call to its region's probe: `Execute` under the harness wait (deadline + grace),
//! cut short with a `region_unreachable` harness record when the region's health monitor
//! declares it down, or when the link itself fails. Every failure of our own machinery becomes
//! a harness record, never a provider failure.

use crate::health::RegionState;
use openbench_common::probe_session::SESSION_NOT_OPEN;
use openbench_common::record::{ErrorType, Execution, Outcome, TerminalRecord};
use openbench_common::request::PlannedRequest;
use openbench_proto::link::{InMemoryExecution, ProbeChannel};
use openbench_proto::v1::ExecuteRequest;
use openbench_proto::v1::probe_client::ProbeClient;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

/// A planned request encoded for `Execute` (done before the round's gate opens, so no encoding
/// happens inside the launch-skew window).
pub fn encode(request: &PlannedRequest) -> Result<String, String> {
    serde_json::to_string(request).map_err(|e| e.to_string())
}

/// A lane's call as prepared for [`execute`]: the encoded request ([`encode`]) and the session
/// it names, read when the lane is sent.
#[derive(Debug)]
pub struct LaneCall {
    /// The planned request's JSON, or why it could not be encoded.
    pub body: Result<String, String>,
    /// The session the call names (`None`: a probe without sessions).
    pub session: Option<LaneSession>,
    /// When the probe sends it, on the probe's wall clock (µs since the UNIX epoch; 0: at
    /// once): an open-loop release.
    pub release_at_unix_us: i64,
    /// The probe replica it goes to (`eu#1`), named in its harness records; `None` for a
    /// region's one probe (named by its region).
    pub replica: Option<String>,
}

/// The session a lane's call names, and where to report that the probe no longer has it (its
/// region's health monitor, which then opens it again).
#[derive(Debug, Clone, Default)]
pub struct LaneSession {
    /// The session id `Execute` carries.
    pub id: String,
    /// Told the id when the probe refuses it as not open (a restarted probe).
    pub lost: Option<mpsc::UnboundedSender<String>>,
}

/// Calls the probe; any failure of our own machinery becomes a harness record. A region its
/// monitor sees down fails at once, and an in-flight call fails as soon as the monitor declares
/// its region down (`region_unreachable`), instead of waiting deadline + grace. The flag is true
/// when the record came from the probe. `call` is the request already encoded (before the
/// round's gate opens, so no encoding happens inside the launch-skew window; see [`encode`]).
pub async fn execute(
    client: Option<ProbeClient<ProbeChannel>>,
    region: Option<watch::Receiver<RegionState>>,
    call: LaneCall,
    request: &PlannedRequest,
    model: &str,
    wait: Duration,
    round: &tracing::Span,
) -> (Execution, bool) {
    let started_at = openbench_common::clock::now_rfc3339();
    let region_name = &request.identity.region;
    // What a harness record names: the region, or the replica that failed (a replicated
    // region's other replicas go on).
    let name = &match &call.replica {
        Some(replica) => format!("probe replica {replica} (region {region_name})"),
        None => format!("region {region_name}"),
    };
    let fail = |message: String| (harness(request, model, started_at.clone(), message), false);
    let Some(mut client) = client else {
        return fail(format!("no probe for {name}"));
    };
    let mut region = region.unwrap_or_else(|| watch::channel(RegionState::Up).1);
    if let RegionState::Down { reason } = &*region.borrow_and_update() {
        return (
            unreachable(request, model, started_at.clone(), name, reason),
            false,
        );
    }
    let LaneCall {
        body,
        session,
        release_at_unix_us,
        replica: _,
    } = call;
    let json = match body {
        Ok(json) => json,
        Err(e) => return fail(format!("cannot encode request: {e}")),
    };
    let session = session.unwrap_or_default();
    let call = ExecuteRequest {
        planned_request_json: json,
        session_id: session.id.clone(),
        release_at_unix_us,
    };
    let mut call = tonic::Request::new(call);
    openbench_proto::trace_context::inject(round, call.metadata_mut());
    let answer = tokio::time::timeout(wait, client.execute(call)).instrument(round.clone());
    let response = tokio::select! {
        answer = answer => answer,
        reason = went_down(&mut region) => {
            return (unreachable(request, model, started_at.clone(), name, &reason), false);
        }
    };
    let response = match response {
        Err(_) => {
            return fail(format!(
                "probe for {name} did not answer within {} ms",
                wait.as_millis()
            ));
        }
        // The link itself failed (refused, reset, closed by keepalive): not the probe's answer.
        Ok(Err(status)) if link_failure(status.code()) => {
            let reason = format!("{} {}", status.code(), status.message());
            return (
                unreachable(request, model, started_at.clone(), name, &reason),
                false,
            );
        }
        // A restarted probe: reachable, but without this run's session until it is re-opened.
        // Unreachable for this lane (so it is re-run), and the monitor re-opens the session.
        Ok(Err(status))
            if status.code() == tonic::Code::FailedPrecondition
                && status.message().contains(SESSION_NOT_OPEN) =>
        {
            if let Some(lost) = &session.lost {
                let _ = lost.send(session.id.clone());
            }
            let reason = format!(
                "the probe no longer has session {} (restarted?): {}",
                session.id,
                status.message()
            );
            return (
                unreachable(request, model, started_at.clone(), name, &reason),
                false,
            );
        }
        Ok(Err(status)) => {
            return fail(format!(
                "probe for {name} failed: {} {}",
                status.code(),
                status.message()
            ));
        }
        Ok(Ok(response)) => response,
    };
    let (_, answer, extensions) = response.into_parts();
    // A probe in this process hands the execution back as it is; one elsewhere as JSON.
    let execution = match extensions.get::<InMemoryExecution>().and_then(|e| e.take()) {
        Some(execution) => Ok(execution),
        None => serde_json::from_str::<Execution>(&answer.execution_json),
    };
    match execution {
        Ok(mut execution) => {
            execution.record.set_identity(&request.identity);
            (execution, true)
        }
        Err(e) => fail(format!("probe returned an unreadable execution: {e}")),
    }
}

/// True for the status codes tonic gives a call whose connection failed (refused, reset, closed
/// by a keepalive timeout); a probe's own refusals use other codes (invalid argument, not
/// found, failed precondition, internal, unauthenticated).
fn link_failure(code: tonic::Code) -> bool {
    matches!(
        code,
        tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
    )
}

/// Resolves when the region's monitor declares it down, with the reason; never while it is up
/// (nor when the monitor is gone).
async fn went_down(region: &mut watch::Receiver<RegionState>) -> String {
    loop {
        if region.changed().await.is_err() {
            return std::future::pending().await;
        }
        if let RegionState::Down { reason } = &*region.borrow_and_update() {
            return reason.clone();
        }
    }
}

/// A `region_unreachable` harness record: the link to the request's region (`region eu`) or
/// probe replica (`probe replica eu#1 (region eu)`) failed.
fn unreachable(
    request: &PlannedRequest,
    model: &str,
    started_at: String,
    name: &str,
    reason: &str,
) -> Execution {
    let mut execution = harness(
        request,
        model,
        started_at,
        format!("{name} unreachable: {reason}"),
    );
    execution.record.error_type = Some(ErrorType::RegionUnreachable);
    execution
}

/// How long the coordinator waits for a probe's answer before recording a harness failure:
/// deadline + grace, saturating (both are bounded by the spec, but a sum must never wrap).
pub fn harness_wait(deadline_ms: u64, grace_ms: u64) -> Duration {
    Duration::from_millis(deadline_ms.saturating_add(grace_ms))
}

/// A harness-failure record for a planned request.
pub fn harness(
    request: &PlannedRequest,
    model: &str,
    started_at: String,
    message: String,
) -> Execution {
    let mut record = TerminalRecord::new(started_at, Outcome::HarnessError);
    record.set_identity(&request.identity);
    record.requested_model = model.to_string();
    record.error_type = Some(ErrorType::Harness);
    record.error_message = Some(message);
    Execution {
        record,
        events: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harness_wait_is_deadline_plus_grace_and_never_wraps() {
        assert_eq!(harness_wait(600, 200), Duration::from_millis(800));
        assert_eq!(
            harness_wait(u64::MAX, 5_000),
            Duration::from_millis(u64::MAX)
        );
    }
}
