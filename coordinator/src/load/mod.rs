//! Open- and closed-loop phases: one task per lane, each holding its requests in flight in that
//! one task (as the round launcher does), results written through the same writer thread.
//!
//! Read top-down: [`drive`] starts one task per lane and writes what they return; a lane's task
//! is [`slots`] (a closed loop's users; each slot sends its next request when its last one
//! ended and its think time passed) or [`open`] (each request released at its planned offset by
//! its region's probe; with a source that reads history, each release starts a conversation).
//! A lane in a region with probe replicas shares its releases (or slots) out over them, each
//! replica timing its share on its own clock ([`crate::replicas`]).
//! What every lane task shares, and how a slot asks its source for its next request and replays
//! its committed turns on a resume, is [`phase`]; one request's call to its probe is [`call`];
//! the count gate of a closed loop run to a count is [`count_gate`]; what is left of a phase and
//! of a schedule is [`progress`].
//!
//! Resume: request ids are a pure function of (schedule version, lane, phase, slot, sequence,
//! attempt), so a resumed phase skips every committed id and sends only the others, open-loop
//! ones at their planned offsets from the resumed phase's start (docs/architecture.md); a slot
//! whose source reads history first rebuilds its turns from the committed records.

mod call;
mod count_gate;
mod open;
mod phase;
pub mod progress;
mod slots;

pub use call::release_at_unix_us;
pub use open::RELEASE_LEAD;

use crate::error::CoordinatorError;
use crate::faults::FaultBook;
use crate::lane_call::harness_wait;
use crate::lane_guard::LaneGuard;
use crate::probe_links::Infra;
use crate::run_dir::RunInputs;
use crate::sitting::{RunOptions, StopRequest, next_stop, start_monitors};
use crate::sitting_report::{Progress, SittingReport, SittingStatus};
use crate::writer_thread::DurableWriter;
use openbench_common::record::{Execution, TerminalRecord};
use openbench_common::rundir::{RunFiles, RunWriter};
use openbench_common::schedule::{Pacing, Phase};
use phase::{LaneTarget, Shared};
use slots::{SlotLimits, Users};
use std::collections::{BTreeMap, BTreeSet};
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
    /// The records that count, by request id: a phase whose source reads history rebuilds its
    /// slots' turns from its committed ones.
    pub records: &'a BTreeMap<String, TerminalRecord>,
    /// The sitting's number (the manifest's session count), stamped on every record.
    pub sitting: u32,
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
    let records = if load.source.reads_history() {
        ctx.records
            .iter()
            .filter(|(_, r)| r.phase == Some(index) && r.outcome.is_committed())
            .map(|(id, r)| (id.clone(), r.clone()))
            .collect()
    } else {
        BTreeMap::new()
    };
    let shared = Arc::new(Shared {
        version,
        run_id: ctx.run_id.to_string(),
        attempt: ctx.attempt,
        index,
        load: load.load.clone(),
        deadline_ms: spec.request.timeout_ms,
        wait: harness_wait(spec.request.timeout_ms, spec.request.harness_grace_ms),
        source: load.source.clone(),
        committed: ctx.committed.clone(),
        records,
        start: Instant::now() + lead,
        start_wall: SystemTime::now() + lead,
        lead,
        sitting: ctx.sitting,
    });
    let phase_span =
        crate::spans::load_phase_span(index, matches!(phase, Phase::OpenLoop(_)), load);
    let (tx, mut rx) = mpsc::unbounded_channel::<Box<Execution>>();
    let (halt_tx, halted) = watch::channel(false);
    let gate = count_gate::for_pacing(&load.pacing, shared.start);
    let mut tasks = Vec::new();
    // A closed loop's sends follow its answers, so refusals hold it; an open loop's do not.
    let closed_loop = !matches!(load.pacing, Pacing::Releases { .. });
    let guards: Vec<Arc<LaneGuard>> = load
        .lanes
        .iter()
        .map(|lane| {
            Arc::new(if closed_loop {
                LaneGuard::closed_loop(&lane.label)
            } else {
                LaneGuard::new(&lane.label)
            })
        })
        .collect();
    for (lane_index, lane) in load.lanes.iter().enumerate() {
        let target = LaneTarget {
            lane: lane.clone(),
            lane_index,
            probes: crate::replicas::links(spec, &lane.region, ctx.infra, &monitors, &faults)
                .into(),
            model: spec
                .providers
                .iter()
                .find(|p| p.key == lane.provider)
                .map(|p| p.model.clone())
                .unwrap_or_default(),
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
                    limits: SlotLimits::default(),
                };
                Box::pin(slots::closed_lane(target, shared, users, halted, tx))
            }
            Pacing::Users { users, until_ms } => {
                let until = Duration::try_from_secs_f64(until_ms.max(0.0) / 1000.0)
                    .ok()
                    .and_then(|d| shared.start.checked_add(d));
                let users = Users {
                    concurrency: users.get(lane_index).copied().unwrap_or(0),
                    per_slot: u64::MAX,
                    limits: SlotLimits {
                        until: Some(until.unwrap_or(shared.start)),
                        gate: None,
                    },
                };
                Box::pin(slots::closed_lane(target, shared, users, halted, tx))
            }
            Pacing::UsersToCount { users, .. } => {
                let users = Users {
                    concurrency: users.get(lane_index).copied().unwrap_or(0),
                    per_slot: u64::MAX,
                    limits: SlotLimits {
                        until: None,
                        gate: gate.clone(),
                    },
                };
                Box::pin(slots::closed_lane(target, shared, users, halted, tx))
            }
            Pacing::Releases {
                offsets_ms,
                max_in_flight,
            } => {
                let offsets = offsets_ms.get(lane_index).cloned().unwrap_or_default();
                let limit = (*max_in_flight).max(1) as usize;
                Box::pin(open::open_lane(
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
