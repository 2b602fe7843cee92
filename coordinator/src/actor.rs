//! The coordinator actor: owns the remaining rounds, the round barrier and the run writer.
//!
//! Per round it spawns one launcher task (prepared while the previous round runs), waits until it
//! is parked at the gate, then opens the gate: the launcher starts every lane's call in the
//! rotated launch order, back to back, and drives them all. Each lane calls its region's probe over
//! gRPC and casts the execution back; the actor hands it to the writer thread
//! ([`crate::writer_thread`], group commit per round) and starts the next round only when every lane is
//! terminal. A probe that does not answer within deadline + grace yields a
//! harness record, never a provider failure; a region whose health monitor ([`crate::health`])
//! declares it down fails its lanes at once (`region_unreachable`), the other regions' lanes go
//! on, and at the end of the plan the failed lanes are re-run out of their rounds
//! ([`crate::faults`]).

use crate::faults::FaultBook;
use crate::health::{FaultPolicy, LinkEvent, RegionState};
use crate::lane_call::{LaneCall, LaneSession, encode, execute, harness_wait};
use crate::round_jobs::{RoundJob, RoundRef};
use crate::session_open::ProbeSession;
use crate::sitting_report::{Progress, ProgressFn, SittingReport, SittingStatus};
use crate::writer_thread::DurableWriter;
use futures_util::stream::{FuturesUnordered, StreamExt};
use openbench_common::record::{ErrorType, Execution};
use openbench_common::request::PlannedRequest;
use openbench_common::rundir::{Checkpoint, RoundLine};
use openbench_proto::link::ProbeChannel;
use openbench_proto::v1::probe_client::ProbeClient;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Barrier, mpsc, oneshot, watch};
use tokio::task::JoinHandle;

/// Messages the coordinator actor handles.
pub enum CoordMsg {
    /// Release the next round (or finish).
    Next,
    /// A lane of the current round is terminal.
    LaneDone(Box<LaneResult>),
    /// A region monitor's sample or state change.
    Link(String, LinkEvent),
    /// Stop after the current round, or abandon it at once.
    Stop {
        /// Abandon the in-flight round (its lanes are re-run on resume).
        abandon: bool,
    },
}

/// A lane's terminal execution and when it was dispatched.
pub struct LaneResult {
    round_index: u64,
    dispatched_at: Instant,
    execution: Execution,
    /// True when the record came from the probe (its `started_at` is the probe's clock).
    from_probe: bool,
}

/// Everything the actor needs.
pub struct CoordArgs {
    /// Rounds to execute, in plan order.
    pub jobs: VecDeque<RoundJob>,
    /// Region → probe client.
    pub clients: BTreeMap<String, ProbeClient<ProbeChannel>>,
    /// Region → the session open on its probe now, as its health monitor (re-)opened it (every
    /// `Execute` names it; records name its probe). Read when a lane is dispatched, not when its
    /// round is prepared: a region that came back in between has a new session.
    pub sessions: BTreeMap<String, watch::Receiver<ProbeSession>>,
    /// Region → its health monitor's inbox for a session the probe no longer has (restarted).
    pub sessions_lost: BTreeMap<String, mpsc::UnboundedSender<String>>,
    /// Region → its state as its health monitor sees it.
    pub regions: BTreeMap<String, watch::Receiver<RegionState>>,
    /// What to do about regions that go down.
    pub faults: FaultPolicy,
    /// Provider key → requested model id (for harness records).
    pub models: BTreeMap<String, String>,
    /// The writer thread of this plan's raw files (group commit per round).
    pub writer: DurableWriter,
    /// Harness deadline = request deadline + this grace, ms.
    pub grace_ms: u64,
    /// Progress so far (counts from earlier sessions).
    pub progress: Progress,
    /// Progress callback.
    pub on_progress: Option<ProgressFn>,
    /// Where the final report goes.
    pub done: oneshot::Sender<SittingReport>,
}

struct Current {
    round: RoundRef,
    launch_order: Vec<String>,
    released: Instant,
    released_wall: String,
    overhead_ms: Option<f64>,
    dispatches: Vec<Instant>,
    /// Probe-side start instants (coordinator clock, µs) of records that came from a probe.
    probe_starts: Vec<f64>,
    /// The round's job, for the end-of-sitting re-run of lanes that fail.
    job: RoundJob,
    outstanding: usize,
    /// The round's span, closed when the round is summarized.
    span: tracing::Span,
    harness: usize,
    /// The round's launcher task (every lane's call).
    launcher: JoinHandle<()>,
}

/// The actor's state.
pub struct CoordState {
    args: CoordArgs,
    done: Option<oneshot::Sender<SittingReport>>,
    current: Option<Current>,
    next: Option<Prepared>,
    started: Instant,
    last_terminal: Option<Instant>,
    stopping: bool,
    /// How the sitting ends once stopping, when not [`SittingStatus::Interrupted`].
    stop_status: Option<SittingStatus>,
    faults: FaultBook,
    report: SittingReport,
    /// The sitting's run span, the parent of every round span.
    run_span: tracing::Span,
}

/// The coordinator actor.
pub struct Coordinator;

impl Actor for Coordinator {
    type Msg = CoordMsg;
    type State = CoordState;
    type Arguments = CoordArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<CoordMsg>,
        mut args: CoordArgs,
    ) -> Result<CoordState, ActorProcessingErr> {
        let (placeholder, _) = oneshot::channel();
        let done = std::mem::replace(&mut args.done, placeholder);
        let progress = args.progress.clone();
        let run_span = crate::spans::run_span(&args.jobs);
        myself.cast(CoordMsg::Next)?;
        let faults = FaultBook::new(args.faults);
        Ok(CoordState {
            faults,
            stop_status: None,
            run_span,
            args,
            done: Some(done),
            current: None,
            next: None,
            started: Instant::now(),
            last_terminal: None,
            stopping: false,
            report: SittingReport::empty(progress),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<CoordMsg>,
        msg: CoordMsg,
        state: &mut CoordState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            CoordMsg::Next => next_round(&myself, state).await,
            CoordMsg::LaneDone(result) => lane_done(&myself, state, *result).await,
            CoordMsg::Link(region, event) => {
                if let Some(gone) = state.faults.on_event(&region, event)
                    && !state.stopping
                {
                    tracing::error!(region = %gone.region, "region stayed down: stopping");
                    state.stopping = true;
                    state.stop_status = Some(SittingStatus::RegionDown(gone));
                    if state.current.is_none() {
                        finish(&myself, state, SittingStatus::Interrupted);
                    }
                }
            }
            CoordMsg::Stop { abandon } => {
                state.stopping = true;
                if abandon && let Some(current) = state.current.take() {
                    current.launcher.abort();
                }
                if state.current.is_none() {
                    finish(&myself, state, SittingStatus::Interrupted);
                }
            }
        }
        Ok(())
    }
}

fn finish(myself: &ActorRef<CoordMsg>, state: &mut CoordState, status: SittingStatus) {
    if let Some(next) = state.next.take() {
        next.launcher.abort();
    }
    let status = match status {
        SittingStatus::Interrupted => state.stop_status.take().unwrap_or(status),
        other => other,
    };
    // Commit what the writer thread still holds before reporting: the caller reads the files.
    state.report.status = match (state.args.writer.close(), status) {
        (Err(e), SittingStatus::Complete | SittingStatus::Interrupted) => SittingStatus::Failed(e),
        (_, status) => status,
    };
    state.report.progress = state.args.progress.clone();
    (state.report.links, state.report.outages) = state.faults.report();
    if let Some(done) = state.done.take() {
        let _ = done.send(state.report.clone());
    }
    myself.stop(None);
}

/// A round whose launcher task is spawned and parked at the gate, ready to be released.
struct Prepared {
    job: RoundJob,
    launch_order: Vec<String>,
    /// Met by the launcher once it is parked, so the gate never opens before it is.
    launcher_parked: Arc<Barrier>,
    gate: oneshot::Sender<tracing::Span>,
    launcher: JoinHandle<()>,
}

/// One lane of a prepared round: its request, already encoded, and where it goes.
struct PreparedLane {
    request: PlannedRequest,
    body: Result<String, String>,
    client: Option<ProbeClient<ProbeChannel>>,
    session: Option<watch::Receiver<ProbeSession>>,
    lost: Option<mpsc::UnboundedSender<String>>,
    region: Option<watch::Receiver<RegionState>>,
    model: String,
    wait: Duration,
}

/// Spawns the round's launcher: one task that signals it is parked, waits for the gate,
/// then starts every lane's call in launch order and drives them all to their records.
///
/// One task rather than one per lane: released lane tasks would be spread over the runtime's
/// workers, and a lane taken by a worker that is not running at that moment (the other core
/// busy with an upstream or the writer) was dispatched late, which set the round's launch skew.
/// In one task the lanes are dispatched back to back, each up to its first wait for the probe.
/// The actor opens the gate only once the launcher has signalled it is parked, so a release never
/// waits for a task that has not started yet.
fn prepare(myself: &ActorRef<CoordMsg>, args: &CoordArgs, job: RoundJob) -> Prepared {
    let requests = job.requests();
    let mut launch_order = Vec::with_capacity(requests.len());
    let lanes: Vec<PreparedLane> = requests
        .into_iter()
        .map(|(lane, request)| {
            launch_order.push(lane.lane.clone());
            PreparedLane {
                body: encode(&request),
                client: args.clients.get(&lane.region).cloned(),
                session: args.sessions.get(&lane.region).cloned(),
                lost: args.sessions_lost.get(&lane.region).cloned(),
                region: args.regions.get(&lane.region).cloned(),
                model: args.models.get(&lane.provider).cloned().unwrap_or_default(),
                wait: harness_wait(request.deadline_ms, args.grace_ms),
                request,
            }
        })
        .collect();
    let launcher_parked = Arc::new(Barrier::new(2));
    let (gate, gate_rx) = oneshot::channel::<tracing::Span>();
    let parked = launcher_parked.clone();
    let me = myself.clone();
    let round_index = job.round.round_index;
    let out_of_round = job.out_of_round;
    let launcher = tokio::spawn(async move {
        parked.wait().await;
        let Ok(round_span) = gate_rx.await else {
            return;
        };
        let mut running: FuturesUnordered<_> = lanes
            .into_iter()
            .map(|lane| {
                run_lane(
                    lane,
                    round_span.clone(),
                    me.clone(),
                    round_index,
                    out_of_round,
                )
            })
            .collect();
        while running.next().await.is_some() {}
    });
    Prepared {
        job,
        launch_order,
        launcher_parked,
        gate,
        launcher,
    }
}

/// One lane's call, from its dispatch (the first poll, right after the gate opens) to the
/// execution cast back to the actor.
async fn run_lane(
    lane: PreparedLane,
    round_span: tracing::Span,
    me: ActorRef<CoordMsg>,
    round_index: u64,
    out_of_round: bool,
) {
    let dispatched_at = Instant::now();
    let PreparedLane {
        request,
        body,
        client,
        session,
        lost,
        region,
        model,
        wait,
    } = lane;
    let session = session.map(|s| s.borrow().clone());
    let lane_session = session.as_ref().map(|s| LaneSession {
        id: s.session_id.clone(),
        lost,
    });
    let call = LaneCall {
        body,
        session: lane_session,
        release_at_unix_us: 0,
        replica: None,
    };
    let (mut execution, from_probe) =
        execute(client, region, call, &request, &model, wait, &round_span).await;
    execution.record.out_of_round = out_of_round;
    // The record names the probe this session checked, harness records included.
    execution.record.probe_id = session.map(|s| s.probe.probe_id);
    let _ = me.cast(CoordMsg::LaneDone(Box::new(LaneResult {
        round_index,
        dispatched_at,
        execution,
        from_probe,
    })));
}

/// Releases the next round (prepared ahead when possible), then prepares the one after it so its
/// launcher is already parked when this round ends.
async fn next_round(myself: &ActorRef<CoordMsg>, state: &mut CoordState) {
    if state.current.is_some() || state.done.is_none() {
        return;
    }
    if state.stopping {
        finish(myself, state, SittingStatus::Interrupted);
        return;
    }
    let prepared = match state.next.take() {
        Some(p) => p,
        None => {
            if state.args.jobs.is_empty() {
                // The end of the plan: re-run, once, the lanes that failed while their region
                // is up again (out of their rounds).
                let rerun = state.faults.take_rerun(&state.args.regions);
                state.args.jobs.extend(rerun);
            }
            match state.args.jobs.pop_front() {
                Some(job) => prepare(myself, &state.args, job),
                None => {
                    finish(myself, state, SittingStatus::Complete);
                    return;
                }
            }
        }
    };
    let n = prepared.launch_order.len();
    prepared.launcher_parked.wait().await;
    let released = Instant::now();
    let released_wall = openbench_common::clock::now_rfc3339();
    let round_span = crate::spans::round_span(&state.run_span, &prepared.job.round);
    let _ = prepared.gate.send(round_span.clone());
    let overhead_ms = state
        .last_terminal
        .map(|last| ms(released.saturating_duration_since(last)));
    state.report.overheads_ms.extend(overhead_ms);
    state.current = Some(Current {
        round: prepared.job.round.clone(),
        job: prepared.job,
        probe_starts: Vec::with_capacity(n),
        launch_order: prepared.launch_order,
        released,
        released_wall,
        overhead_ms,
        dispatches: Vec::with_capacity(n),
        outstanding: n,
        span: round_span,
        harness: 0,
        launcher: prepared.launcher,
    });
    if let Some(job) = state.args.jobs.pop_front() {
        state.next = Some(prepare(myself, &state.args, job));
    }
}

async fn lane_done(myself: &ActorRef<CoordMsg>, state: &mut CoordState, result: LaneResult) {
    let now = Instant::now();
    let Some(current) = state.current.as_mut() else {
        return;
    };
    if current.round.round_index != result.round_index {
        return;
    }
    let harness = !result.execution.record.outcome.is_committed();
    if let Some(e) = state.args.writer.failed() {
        fail(myself, state, e);
        return;
    }
    current.dispatches.push(result.dispatched_at);
    current.outstanding = current.outstanding.saturating_sub(1);
    state.report.records_written += 1;
    let record = &result.execution.record;
    if result.from_probe
        && let Some(start) = openbench_common::clock::rfc3339_unix_micros(&record.started_at)
    {
        let start = state.faults.on_coordinator_clock(&record.region, start);
        current.probe_starts.push(start);
    }
    // Lanes lost to an unreachable region are re-run at the end of the sitting once it is
    // back; other harness failures (a stalled or failing probe) would likely recur, and wait
    // for a resume.
    let unreachable = record.error_type == Some(ErrorType::RegionUnreachable);
    if harness {
        if unreachable {
            state.faults.note_failed(&current.job, &record.request_id);
        }
        current.harness += 1;
        state.report.harness_errors += 1;
        state.args.progress.harness_errors += 1;
    } else {
        state.args.progress.requests_done += 1;
    }
    state.args.writer.execution(result.execution);
    state.last_terminal = Some(now);
    if current.outstanding > 0 {
        report_progress(state);
        return;
    }
    let Some(current) = state.current.take() else {
        return;
    };
    let (line, checkpoint) = summarize(state, current, now);
    // Release the next round first: the bookkeeping below is off the barrier's critical path.
    // (At the plan's end, `Next` queues the end-of-sitting re-run, if any.)
    let last_round = state.stopping || (state.next.is_none() && state.args.jobs.is_empty());
    if !last_round {
        next_round(myself, state).await;
    }
    // The writer thread commits the round's records, then writes its line and checkpoint.
    state.args.writer.round(line, checkpoint);
    if let Some(e) = state.args.writer.failed() {
        fail(myself, state, e);
        return;
    }
    report_progress(state);
    if state.stopping && state.current.is_none() {
        finish(myself, state, SittingStatus::Interrupted);
    } else if last_round {
        let _ = myself.cast(CoordMsg::Next);
    }
}

/// Abandons the in-flight round and ends the sitting as failed (the run stays resumable).
fn fail(myself: &ActorRef<CoordMsg>, state: &mut CoordState, message: String) {
    if let Some(current) = state.current.take() {
        current.launcher.abort();
    }
    finish(myself, state, SittingStatus::Failed(message));
}

/// The finished round's barrier line and the checkpoint after it (no I/O).
fn summarize(state: &mut CoordState, current: Current, now: Instant) -> (RoundLine, Checkpoint) {
    let first = current.dispatches.iter().min().copied();
    let last = current.dispatches.iter().max().copied();
    let skew = match (first, last) {
        (Some(a), Some(b)) => ms(b.saturating_duration_since(a)),
        _ => 0.0,
    };
    state.report.skews_ms.push(skew);
    let probe_skew = match (
        current.probe_starts.iter().copied().reduce(f64::min),
        current.probe_starts.iter().copied().reduce(f64::max),
    ) {
        (Some(a), Some(b)) if current.probe_starts.len() >= 2 => Some((b - a) / 1000.0),
        _ => None,
    };
    state.report.probe_skews_ms.extend(probe_skew);
    crate::spans::close_round(&current.span, skew, current.harness);
    state.report.rounds_executed += 1;
    if current.harness == 0 {
        state.args.progress.rounds_done += 1;
    }
    let line = RoundLine {
        round_index: current.round.round_index,
        round_id: current.round.round_id.clone(),
        released_at: current.released_wall,
        released_offset_ms: ms(current.released.saturating_duration_since(state.started)),
        launch_skew_ms: skew,
        coordinator_overhead_ms: current.overhead_ms,
        round_ms: ms(now.saturating_duration_since(current.released)),
        lanes_dispatched: current.launch_order.len(),
        harness_errors: current.harness,
        launch_order: current.launch_order,
        probe_launch_skew_ms: probe_skew,
        link_rtt_ms: state.faults.latest_rtts(),
        out_of_round: current.job.out_of_round,
    };
    let p = &state.args.progress;
    let checkpoint = Checkpoint {
        rounds_done: p.rounds_done,
        rounds_total: p.rounds_total,
        last_round_index: Some(line.round_index),
        requests_done: p.requests_done,
        updated_at: openbench_common::clock::now_rfc3339(),
    };
    (line, checkpoint)
}

fn report_progress(state: &CoordState) {
    if let Some(f) = &state.args.on_progress {
        f(&state.args.progress);
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
