//! What a sitting reports: its progress as it goes and its figures when it ends (one sitting
//! may execute several phases of a schedule; their reports add up).

use crate::faults::RegionGone;
pub use crate::lane_guard::LaneStopped;
use openbench_common::rundir::{RegionLink, RegionOutage};
use std::collections::BTreeMap;
use std::sync::Arc;

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
    /// Harness failures in this sitting.
    pub harness_errors: usize,
}

/// A progress callback (a progress bar, a log line).
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// How a sitting ended.
#[derive(Debug, Clone, PartialEq)]
pub enum SittingStatus {
    /// Every round ran.
    Complete,
    /// Stopped by a signal; resumable.
    Interrupted,
    /// The writer failed; resumable once fixed.
    Failed(String),
    /// A region stayed down longer than the policy allows; resumable once it is back.
    RegionDown(RegionGone),
    /// Load lanes whose requests kept failing at connection level were stopped as unreachable
    /// (`crate::lane_guard`); the sitting ends after that phase, the run incomplete and
    /// resumable.
    LanesStopped {
        /// The lanes stopped, each with why.
        lanes: Vec<LaneStopped>,
        /// Lanes the phase had: all of them stopped means nothing more could be measured.
        of: usize,
    },
}

/// What one sitting (one process's share of a run) did.
#[derive(Debug, Clone, PartialEq)]
pub struct SittingReport {
    /// How it ended.
    pub status: SittingStatus,
    /// Rounds executed in this sitting.
    pub rounds_executed: usize,
    /// Records written in this sitting.
    pub records_written: usize,
    /// Harness failures in this sitting.
    pub harness_errors: usize,
    /// Coordinator overhead per round (previous round's last record → release), ms.
    pub overheads_ms: Vec<f64>,
    /// Launch skew per round, ms.
    pub skews_ms: Vec<f64>,
    /// Launch skew per round measured where the requests started (on their probes), ms.
    pub probe_skews_ms: Vec<f64>,
    /// Region → its link figures in this sitting (RTT, clock offset).
    pub links: BTreeMap<String, RegionLink>,
    /// Periods a region was unreachable in this sitting.
    pub outages: Vec<RegionOutage>,
    /// Progress at the end.
    pub progress: Progress,
}

impl SittingReport {
    /// A complete sitting that has executed nothing yet.
    pub fn empty(progress: Progress) -> SittingReport {
        SittingReport {
            status: SittingStatus::Complete,
            rounds_executed: 0,
            records_written: 0,
            harness_errors: 0,
            overheads_ms: Vec::new(),
            skews_ms: Vec::new(),
            probe_skews_ms: Vec::new(),
            links: BTreeMap::new(),
            outages: Vec::new(),
            progress,
        }
    }

    /// Adds the figures of the sitting's next phase (its status and progress replace these).
    pub fn absorb(&mut self, next: SittingReport) {
        self.status = next.status;
        self.rounds_executed += next.rounds_executed;
        self.records_written += next.records_written;
        self.harness_errors += next.harness_errors;
        self.overheads_ms.extend(next.overheads_ms);
        self.skews_ms.extend(next.skews_ms);
        self.probe_skews_ms.extend(next.probe_skews_ms);
        self.links.extend(next.links);
        self.outages.extend(next.outages);
        self.progress = next.progress;
    }
}
