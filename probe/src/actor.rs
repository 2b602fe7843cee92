//! One actor per provider: it owns that provider's [`Executor`] and admits up to the session's
//! `max_in_flight` requests at a time (one unless the coordinator asks for more).
//!
//! The actor never awaits a measurement inside `handle`: it spawns each timed request in its own
//! task and answers through the reply port, so its mailbox stays free, requests in flight never
//! wait on one another (each has its own clock, stream and read loop) and a cancelled gRPC call
//! can never cut a measurement short (the task runs to its end regardless).

use crate::executor::Executor;
use openbench_common::record::Execution;
use openbench_common::request::PlannedRequest;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
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
    /// `None`: at once); the reply carries the execution.
    Execute(
        Box<PlannedRequest>,
        Option<std::time::Instant>,
        tracing::Span,
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
            ProviderMsg::Execute(request, release, span, reply) => {
                let max_in_flight = state.lane.max_in_flight.max(1);
                if state.in_flight >= max_in_flight {
                    let _ = reply.send(Err(Busy { max_in_flight }));
                    return Ok(());
                }
                state.in_flight += 1;
                let executor = state.lane.executor.clone();
                tokio::spawn(async move {
                    let done = DoneOnDrop(myself);
                    let execution = executor
                        .execute_released(&request, release)
                        .instrument(span)
                        .await;
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
