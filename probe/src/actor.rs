//! One actor per provider: it owns that provider's [`Executor`] and admits one request at a time.
//!
//! The actor never awaits a measurement inside `handle`: it spawns the timed request in its own
//! task and answers through the reply port, so its mailbox stays free and a cancelled gRPC call
//! can never cut a measurement short (the task runs to its end regardless).

use crate::executor::Executor;
use openbench_common::record::Execution;
use openbench_common::request::PlannedRequest;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tracing::Instrument;

/// The provider is already executing a request (concurrency is one per provider).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Busy;

/// Messages a provider actor handles.
pub(crate) enum ProviderMsg {
    /// Execute one planned request inside `span`; the reply carries the execution.
    Execute(
        Box<PlannedRequest>,
        tracing::Span,
        RpcReplyPort<Result<Execution, Busy>>,
    ),
    /// The in-flight request finished (sent by its task before it replies).
    Done,
    /// Execute the next requests with this executor (a new session's adapter). A request in
    /// flight keeps the executor it started with; the lane stays busy until it ends.
    Use(Executor),
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
    executor: Executor,
    busy: bool,
}

impl Actor for ProviderActor {
    type Msg = ProviderMsg;
    type State = ProviderState;
    type Arguments = Executor;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        executor: Executor,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(ProviderState {
            executor,
            busy: false,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ProviderMsg::Execute(request, span, reply) => {
                if state.busy {
                    let _ = reply.send(Err(Busy));
                    return Ok(());
                }
                state.busy = true;
                let executor = state.executor.clone();
                tokio::spawn(async move {
                    let done = DoneOnDrop(myself);
                    let execution = executor.execute(&request).instrument(span).await;
                    // `Done` is queued before the reply leaves, so a caller that sends its next
                    // request as soon as it has this reply always finds the actor free.
                    drop(done);
                    let _ = reply.send(Ok(execution));
                });
            }
            ProviderMsg::Done => state.busy = false,
            ProviderMsg::Use(executor) => state.executor = executor,
        }
        Ok(())
    }
}
