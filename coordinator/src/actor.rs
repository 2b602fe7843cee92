//! The coordinator actor: owns the remaining rounds, the round barrier and the run writer.
//!
//! Per round it spawns one task per lane (prepared while the previous round runs), waits until
//! every task is parked at the gate, then opens the gate lane by lane in the rotated launch order. Each task calls its region's probe over
//! gRPC and casts the execution back; the actor hands it to the writer thread
//! ([`crate::durable`], group commit per round) and starts the next round only when every lane is
//! terminal. A probe that does not answer within deadline + grace yields a
//! harness record, never a provider failure.

use crate::durable::DurableWriter;
use crate::lazy::RoundRef;
use openbench_common::record::{ErrorType, Execution, Outcome, TerminalRecord};
use openbench_common::request::PlannedRequest;
use openbench_common::rundir::{Checkpoint, RoundLine};
use openbench_proto::link::ProbeChannel;
use openbench_proto::v1::ExecuteRequest;
use openbench_proto::v1::probe_client::ProbeClient;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Barrier, oneshot};
use tokio::task::JoinHandle;
use tracing::Instrument;

/// Live progress, reported after every terminal record and every round.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Rounds whose every lane is committed.
    pub rounds_done: usize,
    /// Rounds in the plan.
    pub rounds_total: usize,
    /// Requests with a committed terminal record.
    pub requests_done: usize,
    /// Requests in the plan.
    pub requests_total: usize,
    /// Harness failures in this session.
    pub harness_errors: usize,
}

/// A progress callback (a progress bar, a log line).
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

pub use crate::lazy::RoundJob;

/// How a session ended.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionStatus {
    /// Every round ran.
    Complete,
    /// Stopped by a signal; resumable.
    Interrupted,
    /// The writer failed; resumable once fixed.
    Failed(String),
}

/// What one session (one process's share of a run) did.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionReport {
    /// How it ended.
    pub status: SessionStatus,
    /// Rounds executed in this session.
    pub rounds_executed: usize,
    /// Records written in this session.
    pub records_written: usize,
    /// Harness failures in this session.
    pub harness_errors: usize,
    /// Coordinator overhead per round (previous round's last record → release), ms.
    pub overheads_ms: Vec<f64>,
    /// Launch skew per round, ms.
    pub skews_ms: Vec<f64>,
    /// Progress at the end.
    pub progress: Progress,
}

impl SessionReport {
    /// A complete session that has executed nothing yet.
    pub fn empty(progress: Progress) -> SessionReport {
        SessionReport {
            status: SessionStatus::Complete,
            rounds_executed: 0,
            records_written: 0,
            harness_errors: 0,
            overheads_ms: Vec::new(),
            skews_ms: Vec::new(),
            progress,
        }
    }
}

/// Messages the coordinator actor handles.
pub enum CoordMsg {
    /// Release the next round (or finish).
    Next,
    /// A lane of the current round is terminal.
    LaneDone(Box<LaneResult>),
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
}

/// Everything the actor needs.
pub struct CoordArgs {
    /// Rounds to execute, in plan order.
    pub jobs: VecDeque<RoundJob>,
    /// Region → probe client.
    pub clients: BTreeMap<String, ProbeClient<ProbeChannel>>,
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
    pub done: oneshot::Sender<SessionReport>,
}

struct Current {
    round: RoundRef,
    launch_order: Vec<String>,
    released: Instant,
    released_wall: String,
    overhead_ms: Option<f64>,
    dispatches: Vec<Instant>,
    outstanding: usize,
    /// The round's span, closed when the round is summarized.
    span: tracing::Span,
    harness: usize,
    tasks: Vec<JoinHandle<()>>,
}

/// The actor's state.
pub struct CoordState {
    args: CoordArgs,
    done: Option<oneshot::Sender<SessionReport>>,
    current: Option<Current>,
    next: Option<Prepared>,
    started: Instant,
    last_terminal: Option<Instant>,
    stopping: bool,
    report: SessionReport,
    /// The session's run span, the parent of every round span.
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
        Ok(CoordState {
            run_span,
            args,
            done: Some(done),
            current: None,
            next: None,
            started: Instant::now(),
            last_terminal: None,
            stopping: false,
            report: SessionReport::empty(progress),
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
            CoordMsg::Stop { abandon } => {
                state.stopping = true;
                if abandon && let Some(current) = state.current.take() {
                    for task in current.tasks {
                        task.abort();
                    }
                }
                if state.current.is_none() {
                    finish(&myself, state, SessionStatus::Interrupted);
                }
            }
        }
        Ok(())
    }
}

fn finish(myself: &ActorRef<CoordMsg>, state: &mut CoordState, status: SessionStatus) {
    if let Some(next) = state.next.take() {
        for task in next.tasks {
            task.abort();
        }
    }
    // Commit what the writer thread still holds before reporting: the caller reads the files.
    let status = match (state.args.writer.close(), status) {
        (Err(e), SessionStatus::Complete | SessionStatus::Interrupted) => SessionStatus::Failed(e),
        (_, status) => status,
    };
    state.report.status = status;
    state.report.progress = state.args.progress.clone();
    if let Some(done) = state.done.take() {
        let _ = done.send(state.report.clone());
    }
    myself.stop(None);
}

/// A round whose lane tasks are spawned and parked at the gate, ready to be released.
struct Prepared {
    round: RoundRef,
    launch_order: Vec<String>,
    ready: Arc<Barrier>,
    gates: Vec<oneshot::Sender<tracing::Span>>,
    tasks: Vec<JoinHandle<()>>,
}

/// Builds `job`'s requests and encodes their bodies (here, one round ahead, never inside the
/// launch-skew window), then spawns one task per lane; each parks at the ready barrier, then
/// waits for its gate.
fn prepare(myself: &ActorRef<CoordMsg>, args: &CoordArgs, job: RoundJob) -> Prepared {
    let requests = job.requests();
    let n = requests.len();
    let ready = Arc::new(Barrier::new(n + 1));
    let mut gates = Vec::with_capacity(n);
    let mut tasks = Vec::with_capacity(n);
    let mut launch_order = Vec::with_capacity(n);
    for (lane, request) in requests {
        let body = serde_json::to_string(&request).map_err(|e| e.to_string());
        let (gate_tx, gate_rx) = oneshot::channel::<tracing::Span>();
        gates.push(gate_tx);
        launch_order.push(lane.lane.clone());
        let client = args.clients.get(&lane.region).cloned();
        let model = args.models.get(&lane.provider).cloned().unwrap_or_default();
        let wait = harness_wait(request.deadline_ms, args.grace_ms);
        let ready = ready.clone();
        let me = myself.clone();
        let round_index = job.round.round_index;
        tasks.push(tokio::spawn(async move {
            ready.wait().await;
            let Ok(round_span) = gate_rx.await else {
                return;
            };
            let dispatched_at = Instant::now();
            let execution = execute(client, &request, body, &model, wait, &round_span).await;
            let _ = me.cast(CoordMsg::LaneDone(Box::new(LaneResult {
                round_index,
                dispatched_at,
                execution,
            })));
        }));
    }
    Prepared {
        round: job.round,
        launch_order,
        ready,
        gates,
        tasks,
    }
}

/// Releases the next round (prepared ahead when possible), then prepares the one after it so its
/// tasks are already parked when this round ends.
async fn next_round(myself: &ActorRef<CoordMsg>, state: &mut CoordState) {
    if state.current.is_some() || state.done.is_none() {
        return;
    }
    if state.stopping {
        finish(myself, state, SessionStatus::Interrupted);
        return;
    }
    let prepared = match state.next.take() {
        Some(p) => p,
        None => match state.args.jobs.pop_front() {
            Some(job) => prepare(myself, &state.args, job),
            None => {
                finish(myself, state, SessionStatus::Complete);
                return;
            }
        },
    };
    let n = prepared.gates.len();
    prepared.ready.wait().await;
    let released = Instant::now();
    let released_wall = openbench_common::clock::now_rfc3339();
    let round_span = crate::spans::round_span(&state.run_span, &prepared.round);
    for gate in prepared.gates {
        let _ = gate.send(round_span.clone());
    }
    let overhead_ms = state
        .last_terminal
        .map(|last| ms(released.saturating_duration_since(last)));
    state.report.overheads_ms.extend(overhead_ms);
    state.current = Some(Current {
        round: prepared.round,
        launch_order: prepared.launch_order,
        released,
        released_wall,
        overhead_ms,
        dispatches: Vec::with_capacity(n),
        outstanding: n,
        span: round_span,
        harness: 0,
        tasks: prepared.tasks,
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
    state.args.writer.execution(result.execution);
    current.dispatches.push(result.dispatched_at);
    current.outstanding = current.outstanding.saturating_sub(1);
    state.report.records_written += 1;
    if harness {
        current.harness += 1;
        state.report.harness_errors += 1;
        state.args.progress.harness_errors += 1;
    } else {
        state.args.progress.requests_done += 1;
    }
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
        finish(myself, state, SessionStatus::Interrupted);
    } else if last_round {
        let _ = myself.cast(CoordMsg::Next);
    }
}

/// Abandons the in-flight round and ends the session as failed (the run stays resumable).
fn fail(myself: &ActorRef<CoordMsg>, state: &mut CoordState, message: String) {
    if let Some(current) = state.current.take() {
        for task in current.tasks {
            task.abort();
        }
    }
    finish(myself, state, SessionStatus::Failed(message));
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

/// Calls the probe with the request's pre-encoded `body`; any failure of our own machinery
/// becomes a harness record.
async fn execute(
    client: Option<ProbeClient<ProbeChannel>>,
    request: &PlannedRequest,
    body: Result<String, String>,
    model: &str,
    wait: Duration,
    round: &tracing::Span,
) -> Execution {
    let started_at = openbench_common::clock::now_rfc3339();
    let Some(mut client) = client else {
        return harness(
            request,
            model,
            started_at,
            format!("no probe for region {}", request.identity.region),
        );
    };
    let json = match body {
        Ok(j) => j,
        Err(e) => {
            return harness(
                request,
                model,
                started_at,
                format!("cannot encode request: {e}"),
            );
        }
    };
    let call = ExecuteRequest {
        planned_request_json: json,
    };
    let mut call = tonic::Request::new(call);
    openbench_proto::trace_context::inject(round, call.metadata_mut());
    let response = match tokio::time::timeout(wait, client.execute(call))
        .instrument(round.clone())
        .await
    {
        Err(_) => {
            return harness(
                request,
                model,
                started_at,
                format!(
                    "probe for region {} did not answer within {} ms",
                    request.identity.region,
                    wait.as_millis()
                ),
            );
        }
        Ok(Err(status)) => {
            return harness(
                request,
                model,
                started_at,
                format!(
                    "probe for region {} failed: {} {}",
                    request.identity.region,
                    status.code(),
                    status.message()
                ),
            );
        }
        Ok(Ok(response)) => response.into_inner(),
    };
    match serde_json::from_str::<Execution>(&response.execution_json) {
        Ok(mut execution) => {
            execution.record.set_identity(&request.identity);
            execution
        }
        Err(e) => harness(
            request,
            model,
            started_at,
            format!("probe returned an unreadable execution: {e}"),
        ),
    }
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
