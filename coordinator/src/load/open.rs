//! An open loop's lane: each request released at its planned offset from the phase's start **by
//! its region's probe, on the probe's clock**: the lane hands it over [`RELEASE_LEAD`] early with
//! the release time translated by the region's measured clock offset, and the probe sends it at
//! that time and measures its `send_lag_ms` (`openbench_probe::release`). At most `limit`
//! releases are handed over or in flight per lane (a release due while the lane is full is
//! handed over late, and its lag says by how much).
//!
//! When the phase's source reads history, release k starts a conversation instead: slot k, whose
//! first turn is sent at the release and each later turn after its previous one and its think
//! time ([`super::slots::run_slot`]); a conversation holds one place of the `limit` until it ends.

use super::call::{Due, Sent, call};
use super::phase::{LaneTarget, Shared, SlotCursor};
use super::slots::{SlotLimits, run_slot};
use futures_util::FutureExt;
use futures_util::stream::{FuturesUnordered, StreamExt};
use openbench_common::record::Execution;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// How long before its release an open-loop request is handed to its probe: more than a
/// coordinator-to-probe dispatch takes across regions (one way, with gRPC), so the probe, not the
/// link, decides when it is sent. A request reaching its probe after its release is sent at
/// once, and its send lag says how late. Also the delay between a phase's start and its first
/// release (so the first releases get the full lead too).
pub const RELEASE_LEAD: Duration = Duration::from_millis(250);

/// A release in flight: one request (its execution), or a conversation (which writes its own).
type InFlight<'a> = Pin<Box<dyn Future<Output = Option<Box<Execution>>> + Send + 'a>>;

/// An open-loop lane: each release at its planned offset, at most `limit` in flight.
pub(super) async fn open_lane(
    target: LaneTarget,
    shared: Arc<Shared>,
    offsets: impl Iterator<Item = f64>,
    limit: usize,
    halted: watch::Receiver<bool>,
    tx: mpsc::UnboundedSender<Box<Execution>>,
) {
    let conversations = shared.source.reads_history();
    let limits = SlotLimits::default();
    let (target, shared, tx) = (&target, &*shared, &tx);
    let mut running: FuturesUnordered<InFlight<'_>> = FuturesUnordered::new();
    let forward = |execution: Option<Box<Execution>>| match execution {
        Some(execution) => tx.send(execution).is_ok(),
        None => true,
    };
    for (release, offset_ms) in (0u64..).zip(offsets) {
        // Release k is request k of slot 0, or the first turn of conversation (slot) k.
        let mut cursor = match (conversations, u32::try_from(release)) {
            (false, _) => SlotCursor::new(0, release, release + 1),
            (true, Ok(slot)) => SlotCursor::new(slot, 0, u64::MAX),
            (true, Err(_)) => break,
        };
        let Some(out) = shared.next_request(target, &mut cursor) else {
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
                    if !forward(execution) {
                        return;
                    }
                }
            }
        }
        if conversations {
            // Its first turn goes at the release; a resumed conversation past its first turn
            // asks for its pending turn again and sends it after its think time.
            let released = (out.request.identity.sequence == Some(0)).then_some((out, due));
            let slot = run_slot(
                target,
                shared,
                cursor,
                released,
                &limits,
                halted.clone(),
                tx,
            );
            running.push(Box::pin(slot.map(|()| None)));
            continue;
        }
        // A lane whose requests fail at once holds its releases while it backs off (they go
        // late, and their lag says so) and sends none once it is stopped.
        let pass = loop {
            tokio::select! {
                pass = target.guard.admit() => break pass,
                Some(execution) = running.next(), if !running.is_empty() => {
                    if !forward(execution) {
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
            think_ms: None,
            share: release,
        };
        running.push(Box::pin(call(target, shared, out.request, sent).map(Some)));
        // Poll it once now, so it is handed over now even when the next one is due too.
        if let Some(Some(execution)) = running.next().now_or_never()
            && !forward(execution)
        {
            return;
        }
    }
    while let Some(execution) = running.next().await {
        if !forward(execution) {
            return;
        }
    }
}
