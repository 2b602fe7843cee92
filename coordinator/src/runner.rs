//! Running a workflow's schedule in a locked run directory: the full run and the smoke
//! (METHODOLOGY §1, §8).
//!
//! A sitting repairs the raw files after any crash, skips requests that already have a committed
//! terminal record (harness failures are re-executed), starts the simulator and probes, then
//! executes the schedule's phases in order: paired rounds through the coordinator actor, open and
//! closed loops through [`crate::load`]; it updates the manifest when it ends.

use crate::actor::{CoordArgs, CoordMsg, Coordinator};
use crate::error::CoordinatorError;
use crate::load::progress as load_progress;
use crate::probe_links::{Infra, RemoteProbes, TargetHost};
use crate::round_jobs::{RoundJob, jobs};
use crate::run_dir::{RunDir, RunInputs};
use crate::schedule_files::{
    finished_phases, grow, plan_attempt, refuse_unwritten, write_appended,
};
use crate::sitting::{RunOptions, StopRequest, next_stop, start_monitors};
use crate::sitting_report::{Progress, SittingReport, SittingStatus};
use crate::writer_thread::DurableWriter;
use openbench_common::record::TerminalRecord;
use openbench_common::rundir::chain::{self, ChainHead};
use openbench_common::rundir::{
    PlanFileNames, RunFiles, RunManifest, RunMode, RunStatus, RunWriter, SessionProbes,
    SmokeAttempt, counting_records, repair, repair_jsonl,
};
use openbench_common::schedule::{Phase, Schedule};
use ractor::Actor;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use tokio::sync::oneshot;

/// What a full-run sitting ended with.
#[derive(Debug, Clone)]
pub struct FullOutcome {
    /// The run directory.
    pub run_dir: PathBuf,
    /// The run's status after this sitting.
    pub status: RunStatus,
    /// This sitting's figures.
    pub sitting: SittingReport,
}

/// What a smoke ended with.
#[derive(Debug, Clone)]
pub struct SmokeOutcome {
    /// The run directory.
    pub run_dir: PathBuf,
    /// True when an attempt passed.
    pub passed: bool,
    /// False when a stop request cut it short (resumable).
    pub finished: bool,
    /// Every attempt's verdict.
    pub attempts: Vec<SmokeAttempt>,
}

/// Executes (or resumes) the full plan. Refuses an approval id that differs from the one the run
/// was started with.
pub async fn run_full(
    inputs: &RunInputs,
    run: &RunDir,
    approval_id: &str,
    options: &RunOptions,
) -> Result<FullOutcome, CoordinatorError> {
    let mut manifest = RunManifest::load(&run.dir)
        .unwrap_or_else(|_| RunManifest::new(run.run_id(), &run.lock.workflow));
    for recorded in [
        manifest.approval_id.as_deref(),
        run.lock.approval_id.as_deref(),
    ]
    .into_iter()
    .flatten()
    {
        if recorded != approval_id {
            return Err(CoordinatorError::Resume {
                dir: run.dir.clone(),
                message: format!(
                    "the full run was approved as {recorded:?}; resume it with --approval-id {recorded}"
                ),
            });
        }
    }
    let files = RunFiles::new(&run.dir, 0);
    if manifest.mode != RunMode::Full {
        manifest.mode = RunMode::Full;
        manifest.period_start = None;
        manifest.period_end = None;
        manifest.sessions = 0;
        manifest.finished_phases.remove(&0);
    }
    let mut plan = plan_attempt(inputs, run, 0, &manifest)?;
    manifest.approval_id = Some(approval_id.to_string());
    let (sitting, records) =
        execute_plan(inputs, run, &mut plan, &files, options, &mut manifest).await?;
    let status = final_status(&sitting, &plan, &records, &manifest);
    manifest.status = status;
    if status == RunStatus::Complete && manifest.period_end.is_none() {
        manifest.period_end = Some(openbench_common::clock::now_rfc3339());
    }
    manifest.save(&run.dir)?;
    Ok(FullOutcome {
        run_dir: run.dir.clone(),
        status,
        sitting,
    })
}

/// Runs (or resumes) the smoke: attempt 1, and attempt 2 only when attempt 1 failed.
pub async fn run_smoke(
    inputs: &RunInputs,
    run: &RunDir,
    options: &RunOptions,
) -> Result<SmokeOutcome, CoordinatorError> {
    let mut manifest = RunManifest::load(&run.dir)
        .unwrap_or_else(|_| RunManifest::new(run.run_id(), &run.lock.workflow));
    if manifest.mode != RunMode::Smoke {
        manifest.mode = RunMode::Smoke;
        manifest.period_start = None;
        manifest.period_end = None;
        manifest.sessions = 0;
    }
    let mut attempts = Vec::new();
    for attempt in 1..=inputs.workflow.smoke_attempts(&inputs.spec.spec) {
        let mut plan = plan_attempt(inputs, run, attempt, &manifest)?;
        let files = RunFiles::new(&run.dir, attempt);
        let (sitting, records) =
            execute_plan(inputs, run, &mut plan, &files, options, &mut manifest).await?;
        let status = final_status(&sitting, &plan, &records, &manifest);
        if sitting.status != SittingStatus::Complete || status != RunStatus::Complete {
            manifest.status = status;
            manifest.smoke = attempts.clone();
            manifest.save(&run.dir)?;
            return Ok(SmokeOutcome {
                run_dir: run.dir.clone(),
                passed: false,
                finished: false,
                attempts,
            });
        }
        let failures = inputs.workflow.smoke_failures(&plan, &records);
        let verdict = SmokeAttempt {
            attempt,
            passed: failures.is_empty(),
            failures,
        };
        let passed = verdict.passed;
        attempts.push(verdict);
        if passed {
            break;
        }
    }
    let passed = attempts.last().is_some_and(|a| a.passed);
    manifest.status = RunStatus::Complete;
    manifest.period_end = Some(openbench_common::clock::now_rfc3339());
    manifest.smoke = attempts.clone();
    manifest.save(&run.dir)?;
    Ok(SmokeOutcome {
        run_dir: run.dir.clone(),
        passed,
        finished: true,
        attempts,
    })
}

fn final_status(
    sitting: &SittingReport,
    plan: &Schedule,
    records: &BTreeMap<String, TerminalRecord>,
    manifest: &RunManifest,
) -> RunStatus {
    match &sitting.status {
        SittingStatus::Interrupted | SittingStatus::RegionDown(_) => RunStatus::Interrupted,
        SittingStatus::Failed(_) => RunStatus::Failed,
        SittingStatus::LanesStopped { .. } => RunStatus::Incomplete,
        SittingStatus::Complete => {
            let finished = finished_phases(manifest, plan.attempt);
            if load_progress::is_done(plan, records, &finished) {
                RunStatus::Complete
            } else {
                RunStatus::Incomplete
            }
        }
    }
}

/// Runs whatever part of `plan` lacks committed records, phase by phase; returns the sitting's
/// report and the effective records of the plan afterwards.
async fn execute_plan(
    inputs: &RunInputs,
    run: &RunDir,
    plan: &mut Schedule,
    files: &RunFiles,
    options: &RunOptions,
    manifest: &mut RunManifest,
) -> Result<(SittingReport, BTreeMap<String, TerminalRecord>), CoordinatorError> {
    crate::replicas::refuse_paired(&inputs.spec.spec, plan)?;
    repair_jsonl(&files.results)?;
    refuse_unwritten(files, plan, run.run_id())?;
    let records = counting_records(&files.results)?;
    let committed: BTreeSet<String> = records
        .values()
        .filter(|r| r.outcome.is_committed())
        .map(|r| r.request_id.clone())
        .collect();
    repair(files, &committed)?;
    let deadline_ms = inputs.spec.spec.request.timeout_ms;
    let version = plan.version.clone();
    let version = &version;
    let finished = finished_phases(manifest, plan.attempt);
    let mut work = Vec::new();
    for (index, phase) in plan.phases.iter().enumerate() {
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        match phase {
            Phase::PairedRounds(paired) => {
                let jobs = jobs(
                    paired.plan.clone(),
                    paired.prompts.clone(),
                    run.run_id(),
                    deadline_ms,
                    &committed,
                )?;
                if !jobs.is_empty() {
                    work.push(Work::Rounds(jobs));
                }
            }
            Phase::OpenLoop(load) | Phase::ClosedLoop(load) => {
                let remaining = load_progress::remaining(
                    load,
                    index,
                    version,
                    plan.attempt,
                    &committed,
                    finished.contains(&index),
                );
                if remaining > 0 {
                    work.push(Work::Load(index, phase.clone()));
                }
            }
        }
    }
    let rounds_done =
        load_progress::rounds_done(plan, version, |id| committed.contains(id), &finished);
    let progress = Progress {
        rounds_done,
        rounds_total: load_progress::rounds_total(plan),
        requests_done: committed.len(),
        requests_total: plan.request_count(),
        harness_errors: 0,
    };
    manifest.planned_requests = plan.request_count();
    manifest.rounds_total = progress.rounds_total;
    if let Some(f) = &options.progress {
        f(&progress);
    }
    if work.is_empty() {
        let report = SittingReport::empty(progress);
        manifest.rounds_done = rounds_done;
        manifest.count(records.values());
        manifest.records_chain = chain_head(files, plan.attempt)?;
        return Ok((report, records));
    }
    // Probes are checked and sessions opened before the manifest says `running`: a probe that
    // refuses leaves the run as it was, with no record written.
    let host: &dyn TargetHost = match &options.targets {
        Some(host) => host.as_ref(),
        None => &RemoteProbes,
    };
    let infra = Infra::start(inputs, run, plan.attempt, plan.lane_in_flight(), host).await?;
    manifest.status = RunStatus::Running;
    // Recorded again when the sitting ends: a manifest killed mid-sitting carries none.
    manifest.records_chain = None;
    manifest.sessions += 1;
    if manifest.period_start.is_none() {
        manifest.period_start = Some(openbench_common::clock::now_rfc3339());
    }
    manifest.rounds_done = rounds_done;
    manifest.count(records.values());
    manifest.session_probes.push(SessionProbes {
        session: manifest.sessions,
        attempt: plan.attempt,
        probes: infra
            .sessions
            .iter()
            .map(|(region, s)| (region.clone(), s.probe.clone()))
            .collect(),
    });
    if let Err(e) = manifest.save(&run.dir) {
        infra.shutdown().await;
        return Err(e.into());
    }
    let canaries = crate::runtime_health::SittingCanaries::start(&infra);
    let mut sitting = SittingReport::empty(progress);
    let mut work: VecDeque<Work> = work.into();
    while let Some(phase) = work.pop_front() {
        let progress = sitting.progress.clone();
        let timed = match &phase {
            Work::Load(index, Phase::OpenLoop(l) | Phase::ClosedLoop(l)) if l.is_timed() => {
                Some(*index)
            }
            _ => None,
        };
        let report = match phase {
            Work::Rounds(jobs) => drive(inputs, files, jobs, &infra, progress, options).await,
            Work::Load(index, phase) => {
                let ctx = crate::load::LoadContext {
                    inputs,
                    files,
                    infra: &infra,
                    run_id: run.run_id(),
                    attempt: plan.attempt,
                    committed: &committed,
                    records: &records,
                    sitting: manifest.sessions,
                };
                crate::load::drive(&ctx, index, &phase, progress, options).await
            }
        };
        let report = match report {
            Ok(report) => report,
            Err(e) => {
                infra.shutdown().await;
                return Err(e);
            }
        };
        let stop = report.status != SittingStatus::Complete;
        sitting.absorb(report);
        if stop {
            break;
        }
        if let Some(index) = timed {
            manifest
                .finished_phases
                .entry(plan.attempt)
                .or_default()
                .insert(index);
            if let Err(e) = manifest.save(&run.dir) {
                infra.shutdown().await;
                return Err(e.into());
            }
        }
        if work.is_empty() {
            // A schedule chosen as it runs: the workflow picks the next phases from the records.
            let before = plan.phases.len();
            let grown = counting_records(&files.results)
                .map_err(CoordinatorError::from)
                .and_then(|records| grow(inputs, run, plan, &records))
                .and_then(|grew| {
                    if grew {
                        write_appended(files, plan, before)?;
                    }
                    Ok(grew)
                });
            match grown {
                Ok(true) => {
                    sitting.progress.rounds_total = load_progress::rounds_total(plan);
                    sitting.progress.requests_total = plan.request_count();
                    for (index, phase) in plan.phases.iter().enumerate().skip(before) {
                        let index = u32::try_from(index).unwrap_or(u32::MAX);
                        work.push_back(Work::Load(index, phase.clone()));
                    }
                }
                Ok(false) => {}
                Err(e) => {
                    infra.shutdown().await;
                    return Err(e);
                }
            }
        }
    }
    let health = canaries
        .finish(&infra, manifest.sessions, plan.attempt)
        .await;
    manifest.runtime_health.push(health);
    infra.shutdown().await;
    manifest.links.extend(sitting.links.clone());
    manifest.outages.extend(sitting.outages.iter().cloned());

    let records = counting_records(&files.results)?;
    manifest.rounds_done = load_progress::rounds_done(
        plan,
        version,
        |id| records.get(id).is_some_and(|r| r.outcome.is_committed()),
        &finished_phases(manifest, plan.attempt),
    );
    manifest.planned_requests = plan.request_count();
    manifest.rounds_total = load_progress::rounds_total(plan);
    manifest.count(records.values());
    manifest.records_chain = chain_head(files, plan.attempt)?;
    Ok((sitting, records))
}

/// The head of the plan's records chain as the sitting left it (every writer closed).
fn chain_head(files: &RunFiles, attempt: u32) -> Result<Option<ChainHead>, CoordinatorError> {
    let name = PlanFileNames::of_attempt(attempt).results;
    Ok(chain::head(&files.results, &name)?)
}

/// What a sitting still has to execute of one phase.
enum Work {
    /// The remaining rounds of a paired phase.
    Rounds(VecDeque<RoundJob>),
    /// A load phase (its index) with requests still uncommitted.
    Load(u32, Phase),
}

async fn drive(
    inputs: &RunInputs,
    files: &RunFiles,
    jobs: VecDeque<RoundJob>,
    infra: &Infra,
    progress: Progress,
    options: &RunOptions,
) -> Result<SittingReport, CoordinatorError> {
    let (done_tx, mut done_rx) = oneshot::channel();
    let mut monitors = start_monitors(infra, options).await;
    let args = CoordArgs {
        jobs,
        clients: infra.clients.clone(),
        sessions: monitors.sessions.clone(),
        sessions_lost: monitors.sessions_lost.clone(),
        regions: monitors.states.clone(),
        faults: options.faults,
        models: inputs
            .spec
            .spec
            .providers
            .iter()
            .map(|p| (p.key.clone(), p.model.clone()))
            .collect(),
        writer: DurableWriter::spawn(RunWriter::open_grouped(files.clone())?)?,
        grace_ms: inputs.spec.spec.request.harness_grace_ms,
        progress: progress.clone(),
        on_progress: options.progress.clone(),
        done: done_tx,
    };
    let (actor, handle) = Actor::spawn(None, Coordinator, args)
        .await
        .map_err(|e| CoordinatorError::Actor(e.to_string()))?;
    let mut stop = options.stop.clone();
    if let Some(rx) = stop.as_mut() {
        let pending = *rx.borrow_and_update();
        if pending != StopRequest::None {
            let abandon = pending == StopRequest::Abandon;
            let _ = actor.cast(CoordMsg::Stop { abandon });
        }
    }
    let report = loop {
        tokio::select! {
            report = &mut done_rx => break report,
            Some((region, event)) = monitors.events.recv() => {
                let _ = actor.cast(CoordMsg::Link(region, event));
            }
            request = next_stop(&mut stop) => {
                let abandon = request == StopRequest::Abandon;
                let _ = actor.cast(CoordMsg::Stop { abandon });
            }
        }
    };
    drop(monitors);
    let _ = handle.await;
    report.map_err(|_| CoordinatorError::Actor("stopped without a report".into()))
}
