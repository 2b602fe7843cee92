//! Running a plan in a locked run directory: the full run and the smoke (METHODOLOGY §1, §8).
//!
//! A session repairs the raw files after any crash, skips requests that already have a committed
//! terminal record (harness failures are re-executed), starts the simulator and probes, hands the
//! remaining rounds to the coordinator actor and updates the manifest when it ends.

use crate::actor::{
    CoordArgs, CoordMsg, Coordinator, Progress, ProgressFn, RoundJob, SessionReport, SessionStatus,
};
use crate::durable::DurableWriter;
use crate::error::CoordinatorError;
use crate::health::{FaultPolicy, Monitors, RegionSession};
use crate::infra::{Infra, RemoteProbes, TargetHost};
use crate::lazy::jobs;
use crate::schedule::build_plan;
use crate::session::{RunDir, RunInputs};
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir::{
    Plan, RunFiles, RunManifest, RunMode, RunStatus, RunWriter, SessionProbes, SmokeAttempt,
    counting_records, refuse_strays, repair, repair_jsonl, write_json_once,
};
use ractor::Actor;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{oneshot, watch};

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
    /// Link watching and what a region that stays down does to the session (docs/faults.md).
    pub faults: FaultPolicy,
}

/// What a full-run session ended with.
#[derive(Debug, Clone)]
pub struct FullOutcome {
    /// The run directory.
    pub run_dir: PathBuf,
    /// The run's status after this session.
    pub status: RunStatus,
    /// This session's figures.
    pub session: SessionReport,
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
    let s = &inputs.spec.spec;
    run.selection.require(s.plans.full_items_per_family)?;
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
    let plan = Arc::new(build_plan(
        s,
        &run.selection,
        &inputs.dataset,
        s.plans.full_items_per_family,
        0,
    ));
    let files = RunFiles::new(&run.dir, 0);
    write_json_once(&files.plan, &*plan)?;
    if manifest.mode != RunMode::Full {
        manifest.mode = RunMode::Full;
        manifest.period_start = None;
        manifest.period_end = None;
        manifest.sessions = 0;
    }
    manifest.approval_id = Some(approval_id.to_string());
    let (session, records) =
        execute_plan(inputs, run, &plan, &files, options, &mut manifest).await?;
    let status = final_status(&session, &plan, &records);
    manifest.status = status;
    if status == RunStatus::Complete && manifest.period_end.is_none() {
        manifest.period_end = Some(openbench_common::clock::now_rfc3339());
    }
    manifest.save(&run.dir)?;
    Ok(FullOutcome {
        run_dir: run.dir.clone(),
        status,
        session,
    })
}

/// Runs (or resumes) the smoke: attempt 1, and attempt 2 only when attempt 1 failed.
pub async fn run_smoke(
    inputs: &RunInputs,
    run: &RunDir,
    options: &RunOptions,
) -> Result<SmokeOutcome, CoordinatorError> {
    let s = &inputs.spec.spec;
    let items = s.plans.smoke_items_per_family;
    run.selection.require(items)?;
    let mut manifest = RunManifest::load(&run.dir)
        .unwrap_or_else(|_| RunManifest::new(run.run_id(), &run.lock.workflow));
    if manifest.mode != RunMode::Smoke {
        manifest.mode = RunMode::Smoke;
        manifest.period_start = None;
        manifest.period_end = None;
        manifest.sessions = 0;
    }
    let mut attempts = Vec::new();
    for attempt in 1..=s.plans.smoke_max_attempts {
        let plan = Arc::new(build_plan(
            s,
            &run.selection,
            &inputs.dataset,
            items,
            attempt,
        ));
        let files = RunFiles::new(&run.dir, attempt);
        write_json_once(&files.plan, &*plan)?;
        let (session, records) =
            execute_plan(inputs, run, &plan, &files, options, &mut manifest).await?;
        if session.status != SessionStatus::Complete
            || final_status(&session, &plan, &records) != RunStatus::Complete
        {
            manifest.status = final_status(&session, &plan, &records);
            manifest.smoke = attempts.clone();
            manifest.save(&run.dir)?;
            return Ok(SmokeOutcome {
                run_dir: run.dir.clone(),
                passed: false,
                finished: false,
                attempts,
            });
        }
        let verdict = judge_smoke(inputs, &plan, &records, attempt);
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
    session: &SessionReport,
    plan: &Plan,
    records: &BTreeMap<String, TerminalRecord>,
) -> RunStatus {
    match &session.status {
        SessionStatus::Interrupted | SessionStatus::RegionDown(_) => RunStatus::Interrupted,
        SessionStatus::Failed(_) => RunStatus::Failed,
        SessionStatus::Complete => {
            let committed = records
                .values()
                .filter(|r| r.outcome.is_committed())
                .count();
            if committed == plan.request_count() {
                RunStatus::Complete
            } else {
                RunStatus::Incomplete
            }
        }
    }
}

/// The smoke criterion: every lane × family returned a 2xx, non-empty, schema-valid answer.
fn judge_smoke(
    inputs: &RunInputs,
    plan: &Plan,
    records: &BTreeMap<String, TerminalRecord>,
    attempt: u32,
) -> SmokeAttempt {
    let mut failures = Vec::new();
    for round in &plan.rounds {
        for lane in round.requests.iter() {
            let why = match records.get(&lane.request_id) {
                None => Some("no terminal record".to_string()),
                Some(r) if r.outcome != Outcome::Completed => Some(format!(
                    "{:?}{}",
                    r.outcome,
                    r.error_message
                        .as_deref()
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                )),
                Some(r) if !r.http_status.is_some_and(|s| (200..300).contains(&s)) => {
                    Some(format!("HTTP status {:?}", r.http_status))
                }
                Some(r) if r.answer_text.trim().is_empty() => Some("empty answer".into()),
                Some(r) if !inputs.workflow.answer_is_schema_valid(r) => {
                    Some("answer is not schema-valid".into())
                }
                Some(_) => None,
            };
            if let Some(why) = why {
                failures.push(format!("{} × {}: {why}", lane.lane, round.task_family));
            }
        }
    }
    SmokeAttempt {
        attempt,
        passed: failures.is_empty(),
        failures,
    }
}

/// Runs whatever part of `plan` lacks committed records; returns the session report and the
/// effective records of the plan afterwards.
async fn execute_plan(
    inputs: &RunInputs,
    run: &RunDir,
    plan: &Arc<Plan>,
    files: &RunFiles,
    options: &RunOptions,
    manifest: &mut RunManifest,
) -> Result<(SessionReport, BTreeMap<String, TerminalRecord>), CoordinatorError> {
    repair_jsonl(&files.results)?;
    refuse_unwritten(files, plan, run.run_id())?;
    let records = counting_records(&files.results)?;
    let committed: BTreeSet<String> = records
        .values()
        .filter(|r| r.outcome.is_committed())
        .map(|r| r.request_id.clone())
        .collect();
    repair(files, &committed)?;
    let jobs = jobs(
        plan.clone(),
        Arc::new(inputs.dataset.clone()),
        run.run_id(),
        inputs.spec.spec.request.timeout_ms,
        &committed,
    )?;
    let rounds_done = plan.rounds_done(|id| committed.contains(id));
    let progress = Progress {
        rounds_done,
        rounds_total: plan.rounds.len(),
        requests_done: committed.len(),
        requests_total: plan.request_count(),
        harness_errors: 0,
    };
    manifest.planned_requests = plan.request_count();
    manifest.rounds_total = plan.rounds.len();
    if let Some(f) = &options.progress {
        f(&progress);
    }
    if jobs.is_empty() {
        let report = SessionReport::empty(progress);
        manifest.rounds_done = rounds_done;
        manifest.count(records.values());
        return Ok((report, records));
    }
    // Probes are checked and sessions opened before the manifest says `running`: a probe that
    // refuses leaves the run as it was, with no record written.
    let host: &dyn TargetHost = match &options.targets {
        Some(host) => host.as_ref(),
        None => &RemoteProbes,
    };
    let infra = Infra::start(inputs, run, plan.attempt, host).await?;
    manifest.status = RunStatus::Running;
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
    let session = drive(inputs, files, jobs, &infra, progress, options).await;
    infra.shutdown().await;
    let session = session?;
    manifest.links.extend(session.links.clone());
    manifest.outages.extend(session.outages.iter().cloned());

    let records = counting_records(&files.results)?;
    manifest.rounds_done =
        plan.rounds_done(|id| records.get(id).is_some_and(|r| r.outcome.is_committed()));
    manifest.count(records.values());
    Ok((session, records))
}

/// Refuses a results file holding a record this run did not write — another run's `run_id`, a
/// request outside the plan, or a planned request on another lane — naming its line and request,
/// before anything is repaired, counted or executed (counting it would make a complete run look
/// incomplete forever, or pass another run's figures off as this one's).
fn refuse_unwritten(files: &RunFiles, plan: &Plan, run_id: &str) -> Result<(), CoordinatorError> {
    let planned: HashMap<String, String> = plan
        .rounds
        .iter()
        .flat_map(|round| round.requests.iter())
        .map(|lane| (lane.request_id.clone(), lane.lane.clone()))
        .collect();
    refuse_strays(&files.results, |record| {
        if record.run_id != run_id {
            return Some(format!(
                "run_id {:?}, this run is {run_id:?}",
                record.run_id
            ));
        }
        match planned.get(&record.request_id) {
            None => Some(format!(
                "not a request of {}",
                files
                    .plan
                    .file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default()
            )),
            Some(lane) if *lane != record.lane => {
                Some(format!("lane {:?}, planned as {lane:?}", record.lane))
            }
            Some(_) => None,
        }
    })?;
    Ok(())
}

async fn drive(
    inputs: &RunInputs,
    files: &RunFiles,
    jobs: VecDeque<RoundJob>,
    infra: &Infra,
    progress: Progress,
    options: &RunOptions,
) -> Result<SessionReport, CoordinatorError> {
    let (done_tx, mut done_rx) = oneshot::channel();
    let sessions = infra
        .sessions
        .iter()
        .filter_map(|(region, opened)| {
            let opener = infra.openers.get(region)?.clone();
            let opened = opened.clone();
            Some((region.clone(), RegionSession { opened, opener }))
        })
        .collect();
    let mut monitors = Monitors::start(&infra.links, sessions, options.faults.link).await;
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

/// Waits for the next stop request; never resolves without a stop channel.
async fn next_stop(stop: &mut Option<watch::Receiver<StopRequest>>) -> StopRequest {
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
