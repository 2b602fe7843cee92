//! Slots: a closed loop's users, and an open loop's conversations after their release. A slot
//! sends its requests one after another: each once the previous one is terminal and the think
//! time its source planned has passed, until its source stops it, its count is sent, its time is
//! up or the phase's count gate closes ([`super::count_gate`], shared by every lane).

use super::call::{Due, Sent, call};
use super::count_gate::CountGate;
use super::phase::{LaneTarget, Outgoing, Shared, SlotCursor};
use futures_util::stream::{FuturesUnordered, StreamExt};
use openbench_common::record::Execution;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{mpsc, watch};

/// When a slot's sending ends, besides its source and its count.
#[derive(Clone, Default)]
pub(super) struct SlotLimits {
    /// No request is sent at or after this instant.
    pub until: Option<Instant>,
    /// The phase's count gate when it runs to a count.
    pub gate: Option<Arc<CountGate>>,
}

/// A closed loop's slots on one lane: how many, how many requests each, and their limits.
pub(super) struct Users {
    pub concurrency: u32,
    pub per_slot: u64,
    pub limits: SlotLimits,
}

/// A closed-loop lane: its slots, each sending its next request when its last one ended, until
/// its count is sent, its time is up or its source stops it.
pub(super) async fn closed_lane(
    target: LaneTarget,
    shared: Arc<Shared>,
    users: Users,
    halted: watch::Receiver<bool>,
    tx: mpsc::UnboundedSender<Box<Execution>>,
) {
    let mut slots: FuturesUnordered<_> = (0..users.concurrency)
        .map(|slot| {
            let cursor = SlotCursor::new(slot, 0, users.per_slot);
            run_slot(
                &target,
                &shared,
                cursor,
                None,
                &users.limits,
                halted.clone(),
                &tx,
            )
        })
        .collect();
    while slots.next().await.is_some() {}
}

/// Runs one slot to its end. `released`: an open-loop conversation's first request, already
/// asked of the source, and its release (sent then, on the probe's clock, with no think time).
pub(super) async fn run_slot(
    target: &LaneTarget,
    shared: &Shared,
    mut cursor: SlotCursor,
    mut released: Option<(Outgoing, Due)>,
    limits: &SlotLimits,
    mut halted: watch::Receiver<bool>,
    tx: &mpsc::UnboundedSender<Box<Execution>>,
) {
    let over = |halted: &watch::Receiver<bool>| {
        *halted.borrow() || limits.until.is_some_and(|end| Instant::now() >= end)
    };
    loop {
        let (out, due) = match released.take() {
            Some((out, due)) => (out, Some(due)),
            None => {
                if over(&halted) {
                    return;
                }
                let Some(out) = shared.next_request(target, &mut cursor) else {
                    return;
                };
                (out, None)
            }
        };
        if !out.think.is_zero() && due.is_none() {
            // Thinking after the previous turn: never past the slot's end, and a halt ends it.
            let wake = Instant::now() + out.think;
            if limits.until.is_some_and(|end| wake >= end) {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(wake.into()) => {}
                _ = halted.wait_for(|halt| *halt) => return,
            }
        }
        // A lane whose requests fail at once backs off (or is stopped) before it sends.
        let Some(pass) = target.guard.admit().await else {
            return;
        };
        if over(&halted) {
            target.guard.unused(pass);
            return;
        }
        // A count gate says when the phase is over, and its instant is the send's.
        let at = match limits.gate.as_ref().map(|g| g.admit()) {
            Some(None) => {
                target.guard.unused(pass);
                return;
            }
            Some(at) => at,
            None => None,
        };
        let sent = Sent {
            at,
            due,
            pass,
            think_ms: out.think_ms,
            share: u64::from(cursor.slot),
        };
        let execution = call(target, shared, out.request, sent).await;
        let go_on = shared.settle(&mut cursor, out.content, &execution);
        if tx.send(execution).is_err() || !go_on {
            return;
        }
    }
}
