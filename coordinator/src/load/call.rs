//! One load request's call to its probe, and what its record says about when it was sent: the
//! dispatch (or the instant a count gate admitted it), an open-loop request's scheduled time and
//! send lag, and the think time its source planned before it.

use super::phase::{LaneTarget, Shared};
use crate::lane_call::{LaneCall, LaneSession, encode, execute};
use crate::lane_guard::Pass;
use crate::replicas::{ReplicaLink, share_of};
use openbench_common::record::Execution;
use openbench_common::request::PlannedRequest;
use std::time::{Duration, Instant, SystemTime};

/// When an open-loop request was due.
pub(super) struct Due {
    pub instant: Instant,
    pub offset: Duration,
}

/// When a request goes out: the instant a count gate admitted it (else the call's start), an
/// open-loop one's due time, how it passed the lane's guard, the think time planned before it,
/// and which share of the lane it is (an open loop's release number, else its slot: a closed
/// loop's user or an open loop's conversation), which picks the probe replica sending it.
pub(super) struct Sent {
    pub at: Option<Instant>,
    pub due: Option<Due>,
    pub pass: Pass,
    pub think_ms: Option<f64>,
    pub share: u64,
}

/// The probe-clock time (µs since the UNIX epoch) of a release `offset` after a phase that
/// starts at `start_wall` on the coordinator's clock, for a probe whose clock reads
/// `clock_offset_us` ahead of the coordinator's.
pub fn release_at_unix_us(start_wall: SystemTime, offset: Duration, clock_offset_us: i64) -> i64 {
    openbench_common::clock::unix_micros(start_wall + offset).saturating_add(clock_offset_us)
}

/// One request's call to its probe; an open-loop one gets its scheduled time and send lag.
pub(super) async fn call(
    target: &LaneTarget,
    shared: &Shared,
    request: PlannedRequest,
    sent: Sent,
) -> Box<Execution> {
    let Sent {
        at,
        due,
        pass,
        think_ms,
        share,
    } = sent;
    let fallback = ReplicaLink::default();
    let probe = target
        .probes
        .get(share_of(share, target.probes.len()))
        .unwrap_or(&fallback);
    let session = probe.session.as_ref().map(|s| s.borrow().clone());
    let lane_session = session.as_ref().map(|s| LaneSession {
        id: s.session_id.clone(),
        lost: probe.lost.clone(),
    });
    let release_at_unix_us = due.as_ref().map_or(0, |due| {
        release_at_unix_us(shared.start_wall, due.offset, probe.clock_offset_us)
    });
    let replica = probe.replica.map(|k| {
        format!(
            "{}{}{k}",
            request.identity.region,
            openbench_common::spec::REPLICA_SEPARATOR
        )
    });
    let call = LaneCall {
        body: encode(&request),
        session: lane_session,
        release_at_unix_us,
        replica,
    };
    let dispatched = at.unwrap_or_else(Instant::now);
    let span = tracing::Span::current();
    let (mut execution, _from_probe) = execute(
        probe.client.clone(),
        probe.state.clone(),
        call,
        &request,
        &target.model,
        shared.wait + shared.lead,
        &span,
    )
    .await;
    target.guard.settle(pass, &execution.record);
    execution.record.probe_id = session.map(|s| s.probe.probe_id);
    let record = &mut execution.record;
    record.sitting = Some(shared.sitting);
    record.think_ms = think_ms;
    record.replica = probe.replica;
    let sent = dispatched.saturating_duration_since(shared.start);
    record.sent_offset_ms = Some(sent.as_secs_f64() * 1000.0);
    if let Some(due) = due {
        let scheduled_ms = due.offset.as_secs_f64() * 1000.0;
        record.scheduled_offset_ms = Some(scheduled_ms);
        let scheduled = shared.start_wall + due.offset;
        record.scheduled_at = Some(openbench_common::clock::rfc3339_utc(scheduled));
        // The probe measured when it sent; a record that never reached it (a harness record)
        // was never sent, and its lag is the hand-over's own lateness.
        let lag_ms = *record.send_lag_ms.get_or_insert_with(|| {
            let lag = dispatched.saturating_duration_since(due.instant);
            lag.as_secs_f64() * 1000.0
        });
        record.sent_offset_ms = Some(scheduled_ms + lag_ms);
    }
    Box::new(execution)
}
