//! Open- and closed-loop phases: one task per lane, each holding its requests in flight in that
//! one task (as the round launcher does), results written through the same writer thread.
//!
//! - Closed loop: each of the lane's `concurrency` slots sends its next request as soon as its
//!   previous one is terminal, `per_slot` requests in all, or until a time, or until the phase's
//!   count of sends closes and its cool-down ends ([`CountGate`], shared by every lane).
//! - Open loop: each request is released at its planned offset from the phase's start **by its
//!   region's probe, on the probe's clock**: the lane hands it over [`RELEASE_LEAD`] early with
//!   the release time translated by the region's measured clock offset (probe − coordinator,
//!   from the health monitor's pings), and the probe sends it at that time and measures its
//!   `send_lag_ms` (`openbench_probe::release`). At most `max_in_flight` requests are handed over
//!   or in flight per lane (a release due while the lane is full is handed over late, and its
//!   lag says by how much). Each record carries its `scheduled_at` and `send_lag_ms`.
//!
//! Resume: request ids are a pure function of (schedule version, lane, phase, slot, sequence,
//! attempt), so a resumed phase skips every committed id and sends only the others, open-loop
//! ones at their planned offsets from the resumed phase's start (docs/architecture.md).

use crate::actor::{Progress, SittingReport, SittingStatus};
use crate::count_gate::CountGate;
use crate::error::CoordinatorError;
use crate::faults::FaultBook;
use crate::health::RegionState;
use crate::lane_call::{LaneCall, LaneSession, encode, execute, harness_wait};
use crate::lane_guard::{LaneGuard, Pass};
pub use crate::load_progress::{is_done, remaining, rounds_done, rounds_total};
use crate::probe_links::Infra;
use crate::run_dir::RunInputs;
use crate::runner::{RunOptions, StopRequest, next_stop, start_monitors};
use crate::session_open::ProbeSession;
use crate::writer_thread::DurableWriter;
use futures_util::FutureExt;
use futures_util::stream::{FuturesUnordered, StreamExt};
use openbench_common::record::Execution;
use openbench_common::request::{PlannedRequest, RequestIdentity};
use openbench_common::rundir::{Lane, RunFiles, RunWriter};
use openbench_common::schedule::{
    LoadPosition, Pacing, Phase, RequestSource, load_request_id, phase_id,
};
use openbench_proto::link::ProbeChannel;
use openbench_proto::v1::probe_client::ProbeClient;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

/// What a load phase needs of its sitting.
pub struct LoadContext<'a> {
    /// The run's inputs.
    pub inputs: &'a RunInputs,
    /// The attempt's raw files.
    pub files: &'a RunFiles,
    /// The sitting's probes.
    pub infra: &'a Infra,
    /// The run id.
    pub run_id: &'a str,
    /// The schedule's attempt.
    pub attempt: u32,
    /// Request ids already committed (skipped).
    pub committed: &'a BTreeSet<String>,
    /// The sitting's number (the manifest's session count), stamped on every record.
    pub sitting: u32,
}

/// How long before its release an open-loop request is handed to its probe: more than a
/// coordinator-to-probe dispatch takes across regions (one way, with gRPC), so the probe, not the
/// link, decides when it is sent. A request reaching its probe after its release is sent at
/// once, and its send lag says how late. Also the delay between a phase's start and its first
/// release (so the first releases get the full lead too).
pub const RELEASE_LEAD: Duration = Duration::from_millis(250);

/// What every lane task of a phase shares.
struct Shared {
    version: String,
    run_id: String,
    attempt: u32,
    index: u32,
    phase_id: String,
    /// The phase's load, carried by every request into its spans and metrics.
    load: String,
    deadline_ms: u64,
    wait: Duration,
    source: Arc<dyn RequestSource>,
    committed: BTreeSet<String>,
    /// Offset 0 of the phase (an open loop's first release; [`RELEASE_LEAD`] after the phase
    /// began, so that release too can be handed over early).
    start: Instant,
    /// `start` on the coordinator's wall clock.
    start_wall: SystemTime,
    /// How early an open-loop request is handed to its probe (zero for closed loops).
    lead: Duration,
    /// The sitting's number, stamped on every record.
    sitting: u32,
}

/// One lane of the phase: where its requests go.
#[derive(Clone)]
struct LaneTarget {
    lane: Lane,
    lane_index: usize,
    client: Option<ProbeClient<ProbeChannel>>,
    session: Option<watch::Receiver<ProbeSession>>,
    lost: Option<mpsc::UnboundedSender<String>>,
    region: Option<watch::Receiver<RegionState>>,
    model: String,
    /// The region's clock offset, probe − coordinator, µs (0 when not measured).
    clock_offset_us: i64,
    /// Backs the lane off, and stops it, when its requests fail at connection level.
    guard: Arc<LaneGuard>,
}

impl Shared {
    /// The request at `position`, or `None` when it is already committed.
    fn request(&self, lane: &Lane, position: &LoadPosition) -> Option<PlannedRequest> {
        let request_id = load_request_id(&self.version, position, self.attempt);
        if self.committed.contains(&request_id) {
            return None;
        }
        let content = self.source.request(position);
        Some(PlannedRequest {
            identity: RequestIdentity {
                run_id: self.run_id.clone(),
                round_id: self.phase_id.clone(),
                request_id,
                round_index: u64::from(self.index),
                attempt: self.attempt,
                task_family: content.group,
                item_id: content.item_key,
                provider: lane.provider.clone(),
                region: lane.region.clone(),
                lane: lane.label.clone(),
                phase: Some(self.index),
                slot: Some(position.slot),
                sequence: Some(position.sequence),
            },
            messages: content.messages,
            deadline_ms: self.deadline_ms,
            output: content.output,
            load: Some(self.load.clone()),
            tool: None,
        })
    }

    fn position(&self, target: &LaneTarget, slot: u32, sequence: u64) -> LoadPosition {
        LoadPosition {
            phase: self.index,
            lane: target.lane.label.clone(),
            lane_index: target.lane_index,
            slot,
            sequence,
        }
    }
}

/// When an open-loop request was due.
struct Due {
    instant: Instant,
    offset: Duration,
}

/// The probe-clock time (µs since the UNIX epoch) of a release `offset` after a phase that
/// starts at `start_wall` on the coordinator's clock, for a probe whose clock reads
/// `clock_offset_us` ahead of the coordinator's.
pub fn release_at_unix_us(start_wall: SystemTime, offset: Duration, clock_offset_us: i64) -> i64 {
    openbench_common::clock::unix_micros(start_wall + offset).saturating_add(clock_offset_us)
}

/// Runs load phase `index` to its end (or a stop), writing every record.
pub async fn drive(
    ctx: &LoadContext<'_>,
    index: u32,
    phase: &Phase,
    progress: Progress,
    options: &RunOptions,
) -> Result<SittingReport, CoordinatorError> {
    let load = match phase {
        Phase::OpenLoop(load) | Phase::ClosedLoop(load) => load,
        Phase::PairedRounds(_) => {
            return Err(CoordinatorError::Workflow(
                "paired rounds run through the coordinator actor".into(),
            ));
        }
    };
    let spec = &ctx.inputs.spec.spec;
    let mut monitors = start_monitors(ctx.infra, options).await;
    // The monitors queue each region's first pings before they start: their clock offsets.
    let mut faults = FaultBook::new(options.faults);
    let mut gone = None;
    while let Ok((region, event)) = monitors.events.try_recv() {
        gone = gone.or(faults.on_event(&region, event));
    }
    let mut writer = DurableWriter::spawn(RunWriter::open_grouped(ctx.files.clone())?)?;
    let version = spec.benchmark.schedule_version.clone();
    let lead = match phase {
        Phase::OpenLoop(_) => RELEASE_LEAD,
        _ => Duration::ZERO,
    };
    let shared = Arc::new(Shared {
        phase_id: phase_id(&version, index, &load.name, ctx.attempt),
        version,
        run_id: ctx.run_id.to_string(),
        attempt: ctx.attempt,
        index,
        load: load.load.clone(),
        deadline_ms: spec.request.timeout_ms,
        wait: harness_wait(spec.request.timeout_ms, spec.request.harness_grace_ms),
        source: load.source.clone(),
        committed: ctx.committed.clone(),
        start: Instant::now() + lead,
        start_wall: SystemTime::now() + lead,
        lead,
        sitting: ctx.sitting,
    });
    let phase_span =
        crate::spans::load_phase_span(index, matches!(phase, Phase::OpenLoop(_)), load);
    let (tx, mut rx) = mpsc::unbounded_channel::<Box<Execution>>();
    let (halt_tx, halted) = watch::channel(false);
    let gate = crate::count_gate::for_pacing(&load.pacing, shared.start);
    let mut tasks = Vec::new();
    let guards: Vec<Arc<LaneGuard>> = load
        .lanes
        .iter()
        .map(|lane| Arc::new(LaneGuard::new(&lane.label)))
        .collect();
    for (lane_index, lane) in load.lanes.iter().enumerate() {
        let target = LaneTarget {
            lane: lane.clone(),
            lane_index,
            client: ctx.infra.clients.get(&lane.region).cloned(),
            session: monitors.sessions.get(&lane.region).cloned(),
            lost: monitors.sessions_lost.get(&lane.region).cloned(),
            region: monitors.states.get(&lane.region).cloned(),
            model: spec
                .providers
                .iter()
                .find(|p| p.key == lane.provider)
                .map(|p| p.model.clone())
                .unwrap_or_default(),
            clock_offset_us: faults.offset_us(&lane.region).round() as i64,
            guard: guards[lane_index].clone(),
        };
        let (shared, tx, halted) = (shared.clone(), tx.clone(), halted.clone());
        let task: std::pin::Pin<Box<dyn Future<Output = ()> + Send>> = match &load.pacing {
            Pacing::Slots {
                concurrency,
                per_slot,
            } => {
                let users = Users {
                    concurrency: *concurrency,
                    per_slot: *per_slot,
                    until: None,
                    gate: None,
                };
                Box::pin(closed_lane(target, shared, users, halted, tx))
            }
            Pacing::Users { users, until_ms } => {
                let until = Duration::try_from_secs_f64(until_ms.max(0.0) / 1000.0)
                    .ok()
                    .and_then(|d| shared.start.checked_add(d));
                let users = Users {
                    concurrency: users.get(lane_index).copied().unwrap_or(0),
                    per_slot: u64::MAX,
                    until: Some(until.unwrap_or(shared.start)),
                    gate: None,
                };
                Box::pin(closed_lane(target, shared, users, halted, tx))
            }
            Pacing::UsersToCount { users, .. } => {
                let users = Users {
                    concurrency: users.get(lane_index).copied().unwrap_or(0),
                    per_slot: u64::MAX,
                    until: None,
                    gate: gate.clone(),
                };
                Box::pin(closed_lane(target, shared, users, halted, tx))
            }
            Pacing::Releases {
                offsets_ms,
                max_in_flight,
            } => {
                let offsets = offsets_ms.get(lane_index).cloned().unwrap_or_default();
                let limit = (*max_in_flight).max(1) as usize;
                Box::pin(open_lane(
                    target,
                    shared,
                    offsets.into_iter(),
                    limit,
                    halted,
                    tx,
                ))
            }
        };
        tasks.push(tokio::spawn(task.instrument(phase_span.clone())));
    }
    drop(tx);
    // Halting also closes every lane's guard, so no slot waits out a back-off.
    let halt = |tx: &watch::Sender<bool>| {
        let _ = tx.send(true);
        guards.iter().for_each(|g| g.close());
    };
    let mut report = SittingReport::empty(progress);
    let mut status = SittingStatus::Complete;
    if let Some(gone) = gone {
        status = SittingStatus::RegionDown(gone);
        halt(&halt_tx);
    }
    let mut stop = options.stop.clone();
    if let Some(rx) = stop.as_mut()
        && *rx.borrow_and_update() != StopRequest::None
    {
        status = SittingStatus::Interrupted;
        halt(&halt_tx);
    }
    loop {
        tokio::select! {
            got = rx.recv() => {
                let Some(execution) = got else { break };
                report.records_written += 1;
                if execution.record.outcome.is_committed() {
                    report.progress.requests_done += 1;
                } else {
                    report.harness_errors += 1;
                    report.progress.harness_errors += 1;
                }
                writer.execution(*execution);
                writer.commit();
                if let Some(e) = writer.failed() {
                    status = SittingStatus::Failed(e);
                    tasks.iter().for_each(|t| t.abort());
                }
                if let Some(f) = &options.progress {
                    f(&report.progress);
                }
            }
            Some((region, event)) = monitors.events.recv() => {
                if let Some(gone) = faults.on_event(&region, event) {
                    tracing::error!(region = %gone.region, "region stayed down: stopping");
                    status = SittingStatus::RegionDown(gone);
                    halt(&halt_tx);
                }
            }
            request = next_stop(&mut stop) => {
                if status == SittingStatus::Complete {
                    status = SittingStatus::Interrupted;
                }
                halt(&halt_tx);
                if request == StopRequest::Abandon {
                    tasks.iter().for_each(|t| t.abort());
                }
            }
        }
    }
    drop(monitors);
    if let Err(e) = writer.close()
        && matches!(status, SittingStatus::Complete | SittingStatus::Interrupted)
    {
        status = SittingStatus::Failed(e);
    }
    let stopped: Vec<_> = guards.iter().filter_map(|g| g.stopped()).collect();
    if !stopped.is_empty() && status == SittingStatus::Complete {
        for lane in &stopped {
            tracing::error!(lane = %lane.lane, failures = lane.failures, "lane unreachable: stopped");
        }
        status = SittingStatus::LanesStopped {
            lanes: stopped,
            of: guards.len(),
        };
    }
    report.rounds_executed = 1;
    if status == SittingStatus::Complete && report.harness_errors == 0 {
        report.progress.rounds_done += 1;
    }
    report.status = status;
    (report.links, report.outages) = faults.report();
    Ok(report)
}

/// A closed loop's slots on one lane: how many, how many requests each, until when, and the
/// phase's count gate when it runs to a count.
struct Users {
    concurrency: u32,
    per_slot: u64,
    until: Option<Instant>,
    gate: Option<Arc<CountGate>>,
}

/// A closed-loop lane: its slots, each sending its next request when its last one ended, until
/// its count is sent or its time is up.
async fn closed_lane(
    target: LaneTarget,
    shared: Arc<Shared>,
    users: Users,
    halted: watch::Receiver<bool>,
    tx: mpsc::UnboundedSender<Box<Execution>>,
) {
    let Users {
        concurrency,
        per_slot,
        until,
        gate,
    } = users;
    let slot = |slot: u32| {
        let (target, shared, halted, tx, gate) = (&target, &shared, &halted, &tx, &gate);
        async move {
            for sequence in 0..per_slot {
                if *halted.borrow() || until.is_some_and(|end| Instant::now() >= end) {
                    return;
                }
                let position = shared.position(target, slot, sequence);
                let Some(request) = shared.request(&target.lane, &position) else {
                    continue;
                };
                // A lane whose requests fail at once backs off (or is stopped) before it sends.
                let Some(pass) = target.guard.admit().await else {
                    return;
                };
                if *halted.borrow() || until.is_some_and(|end| Instant::now() >= end) {
                    target.guard.unused(pass);
                    return;
                }
                // A count gate says when the phase is over, and its instant is the send's.
                let at = match gate.as_ref().map(|g| g.admit()) {
                    Some(None) => {
                        target.guard.unused(pass);
                        return;
                    }
                    Some(at) => at,
                    None => None,
                };
                let sent = Sent {
                    at,
                    due: None,
                    pass,
                };
                let execution = call(target, shared, request, sent).await;
                if tx.send(execution).is_err() {
                    return;
                }
            }
        }
    };
    let mut slots: FuturesUnordered<_> = (0..concurrency).map(slot).collect();
    while slots.next().await.is_some() {}
}

/// An open-loop lane: each request released at its planned offset, at most `limit` in flight.
async fn open_lane(
    target: LaneTarget,
    shared: Arc<Shared>,
    offsets: impl Iterator<Item = f64>,
    limit: usize,
    halted: watch::Receiver<bool>,
    tx: mpsc::UnboundedSender<Box<Execution>>,
) {
    let mut running = FuturesUnordered::new();
    for (sequence, offset_ms) in (0u64..).zip(offsets) {
        let position = shared.position(&target, 0, sequence);
        let Some(request) = shared.request(&target.lane, &position) else {
            continue;
        };
        // An offset no clock can reach (a rate of 0 gives infinite gaps) ends the lane's phase.
        let Ok(offset) = Duration::try_from_secs_f64(offset_ms.max(0.0) / 1000.0) else {
            break;
        };
        let Some(instant) = shared.start.checked_add(offset) else {
            break;
        };
        let due = Due { instant, offset };
        // Hand it over one lead before its release (the probe times the release itself).
        let hand_over = instant.checked_sub(shared.lead).unwrap_or(instant);
        // Drive the calls in flight while waiting for the hand-over time and for room.
        loop {
            let full = running.len() >= limit;
            if !full && Instant::now() >= hand_over {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(hand_over.into()), if !full => {}
                Some(execution) = running.next(), if !running.is_empty() => {
                    if tx.send(execution).is_err() {
                        return;
                    }
                }
            }
        }
        // A lane whose requests fail at once holds its releases while it backs off (they go
        // late, and their lag says so) and sends none once it is stopped.
        let pass = loop {
            tokio::select! {
                pass = target.guard.admit() => break pass,
                Some(execution) = running.next(), if !running.is_empty() => {
                    if tx.send(execution).is_err() {
                        return;
                    }
                }
            }
        };
        let Some(pass) = pass else { break };
        if *halted.borrow() {
            break;
        }
        let sent = Sent {
            at: None,
            due: Some(due),
            pass,
        };
        running.push(call(&target, &shared, request, sent));
        // Poll it once now, so it is handed over now even when the next one is due too.
        if let Some(Some(execution)) = running.next().now_or_never()
            && tx.send(execution).is_err()
        {
            return;
        }
    }
    while let Some(execution) = running.next().await {
        if tx.send(execution).is_err() {
            return;
        }
    }
}

/// When a request goes out: the instant a count gate admitted it (else the call's start), an
/// open-loop one's due time, and how it passed the lane's guard.
struct Sent {
    at: Option<Instant>,
    due: Option<Due>,
    pass: Pass,
}

/// One request's call to its probe; an open-loop one gets its scheduled time and send lag.
async fn call(
    target: &LaneTarget,
    shared: &Shared,
    request: PlannedRequest,
    sent: Sent,
) -> Box<Execution> {
    let Sent { at, due, pass } = sent;
    let session = target.session.as_ref().map(|s| s.borrow().clone());
    let lane_session = session.as_ref().map(|s| LaneSession {
        id: s.session_id.clone(),
        lost: target.lost.clone(),
    });
    let release_at_unix_us = due.as_ref().map_or(0, |due| {
        release_at_unix_us(shared.start_wall, due.offset, target.clock_offset_us)
    });
    let call = LaneCall {
        body: encode(&request),
        session: lane_session,
        release_at_unix_us,
    };
    let dispatched = at.unwrap_or_else(Instant::now);
    let span = tracing::Span::current();
    let (mut execution, _from_probe) = execute(
        target.client.clone(),
        target.region.clone(),
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
