//! What a sitting is given and how it hears a stop: its options (progress, stop requests, what
//! serves its probes, the fault policy), and the health monitors of its regions. Both phase
//! executors (the coordinator actor's paired rounds, [`crate::load`]'s open and closed loops)
//! take them from here, so neither depends on the other or on the runner that sequences them.

use crate::health::{FaultPolicy, Monitors, RegionSession};
use crate::probe_links::{Infra, TargetHost};
use crate::sitting_report::ProgressFn;
use std::sync::Arc;
use tokio::sync::watch;

/// A request to stop, sent by a signal handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopRequest {
    /// Keep going.
    #[default]
    None,
    /// Release no new round; let the current one finish.
    Finish,
    /// Abandon the current round too (its lanes re-run on resume).
    Abandon,
}

/// Session options.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Progress callback.
    pub progress: Option<ProgressFn>,
    /// Stop requests (from Ctrl-C / SIGTERM handlers).
    pub stop: Option<watch::Receiver<StopRequest>>,
    /// What serves the probes and `sim://` endpoints (the binary's host); without one, every
    /// region must name a remote probe URL.
    pub targets: Option<Arc<dyn TargetHost>>,
    /// Link watching and what a region that stays down does to the sitting (docs/faults.md).
    pub faults: FaultPolicy,
}

/// Starts the health monitor of every region of the sitting.
pub(crate) async fn start_monitors(infra: &Infra, options: &RunOptions) -> Monitors {
    let sessions = infra
        .sessions
        .iter()
        .filter_map(|(region, opened)| {
            let opener = infra.openers.get(region)?.clone();
            let opened = opened.clone();
            Some((region.clone(), RegionSession { opened, opener }))
        })
        .collect();
    Monitors::start(
        &infra.links,
        sessions,
        options.faults.link,
        &infra.link_runtime,
    )
    .await
}

/// Waits for the next stop request; never resolves without a stop channel.
pub(crate) async fn next_stop(stop: &mut Option<watch::Receiver<StopRequest>>) -> StopRequest {
    if let Some(rx) = stop {
        loop {
            if rx.changed().await.is_err() {
                break;
            }
            let request = *rx.borrow_and_update();
            if request != StopRequest::None {
                return request;
            }
        }
    }
    std::future::pending().await
}
