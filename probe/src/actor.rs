//! One actor per provider: it owns that provider's [`Executor`] and admits up to the session's
//! `max_in_flight` requests at a time (one unless the coordinator asks for more).
//!
//! The actor never awaits a measurement inside `handle`: it spawns each timed request in its own
//! task and answers through the reply port, so its mailbox stays free and requests in flight
//! never wait on one another (each has its own clock, stream and read loop). A request nobody
//! will read is cancelled: its [`CancellationToken`] fires when its gRPC call is dropped (the
//! coordinator gave up on it, or its connection was lost) or when its session is replaced
//! (a resumed sitting after a killed one); the task then ends at once, dropping its upstream
//! connection, and frees its place in the lane (docs/faults.md, "Requests nobody waits for").

use crate::executor::Executor;
use openbench_common::record::Execution;
use openbench_common::request::PlannedRequest;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// The provider already has as many requests in flight as its session allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Busy {
    /// How many requests the lane may have in flight.
    pub(crate) max_in_flight: u32,
}

/// What a lane executes with: its provider's executor and how many requests it may have in
/// flight at once (at least 1).
#[derive(Debug, Clone)]
pub(crate) struct Lane {
    pub(crate) executor: Executor,
    pub(crate) max_in_flight: u32,
}

/// Messages a provider actor handles.
pub(crate) enum ProviderMsg {
    /// Execute one planned request inside `span`, released at the instant given (open loop;
    /// `None`: at once), until it ends or the token is cancelled; the reply carries the
    /// execution.
    Execute(
        Box<PlannedRequest>,
        Option<std::time::Instant>,
        tracing::Span,
        CancellationToken,
        RpcReplyPort<Result<Execution, Busy>>,
    ),
    /// One request in flight finished (sent by its task before it replies).
    Done,
    /// Execute the next requests as `Lane` says (a new session's adapter and bound). Requests in
    /// flight keep the executor they started with and still count against the new bound.
    Use(Lane),
}

/// Tells the actor its request is over when dropped: after the execution, or while unwinding
/// should the task ever panic, so a provider can never stay busy forever.
struct DoneOnDrop(ActorRef<ProviderMsg>);

impl Drop for DoneOnDrop {
    fn drop(&mut self) {
        let _ = self.0.cast(ProviderMsg::Done);
    }
}

/// The actor type (state lives in [`ProviderState`]).
pub(crate) struct ProviderActor;

/// What a provider actor owns.
pub(crate) struct ProviderState {
    lane: Lane,
    in_flight: u32,
}

impl Actor for ProviderActor {
    type Msg = ProviderMsg;
    type State = ProviderState;
    type Arguments = Lane;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        lane: Lane,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(ProviderState { lane, in_flight: 0 })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ProviderMsg::Execute(request, release, span, cancel, reply) => {
                let max_in_flight = state.lane.max_in_flight.max(1);
                if state.in_flight >= max_in_flight {
                    let _ = reply.send(Err(Busy { max_in_flight }));
                    return Ok(());
                }
                state.in_flight += 1;
                let executor = state.lane.executor.clone();
                tokio::spawn(async move {
                    let done = DoneOnDrop(myself);
                    let measured = executor
                        .execute_released(&request, release)
                        .instrument(span);
                    let execution = tokio::select! {
                        execution = measured => execution,
                        // Nobody will read it: end now (dropping the upstream connection).
                        _ = cancel.cancelled() => return,
                    };
                    // `Done` is queued before the reply leaves, so a caller that sends its next
                    // request as soon as it has this reply always finds a free place.
                    drop(done);
                    let _ = reply.send(Ok(execution));
                });
            }
            ProviderMsg::Done => state.in_flight = state.in_flight.saturating_sub(1),
            ProviderMsg::Use(lane) => state.lane = lane,
        }
        Ok(())
    }
}
