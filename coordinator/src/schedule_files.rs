//! A run's schedule on disk: planned (and, for a schedule chosen as it runs, replayed from the
//! records), its plan files written once, and a results file checked against it before a session
//! executes anything.

use crate::error::CoordinatorError;
use crate::run_dir::{RunDir, RunInputs};
use openbench_common::record::TerminalRecord;
use openbench_common::rundir::{
    RunFiles, RunManifest, counting_records, refuse_strays, repair_jsonl, write_json_once,
};
use openbench_common::schedule::{LoadPhase, LoadPosition, Phase, Schedule, load_request_id};
use openbench_common::workflow::PlanInputs;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The workflow's schedule of `attempt`, its plan file written (or checked, on a resume). A
/// schedule chosen as it runs ([`Workflow::next_phases`]) is then replayed from the records:
/// every phase it appended before is appended again, the same way, from the same records, and
/// checked against the plan file written for it.
///
/// [`Workflow::next_phases`]: openbench_common::workflow::Workflow::next_phases
pub(crate) fn plan_attempt(
    inputs: &RunInputs,
    run: &RunDir,
    attempt: u32,
    manifest: &RunManifest,
) -> Result<Schedule, CoordinatorError> {
    let plan_inputs = PlanInputs {
        spec: &inputs.spec.spec,
        dataset: &inputs.dataset,
        run_dir: &run.dir,
    };
    let mut schedule = inputs
        .workflow
        .plan(&plan_inputs, attempt)
        .map_err(|source| CoordinatorError::Plan {
            workflow: inputs.workflow.name().to_string(),
            source,
        })?;
    let files = RunFiles::new(&run.dir, attempt);
    write_json_once(&files.plan, &schedule.plan_file())?;
    if files.results.exists() {
        repair_jsonl(&files.results)?;
        let records = counting_records(&files.results)?;
        let finished = finished_phases(manifest, attempt);
        while crate::load::progress::is_done(&schedule, &records, &finished) {
            let before = schedule.phases.len();
            if !grow(inputs, run, &mut schedule, &records)? {
                break;
            }
            write_appended(&files, &schedule, before)?;
        }
    }
    Ok(schedule)
}

/// Writes each phase of `schedule` from `from` on as its own immutable plan file
/// (`full-plan-phase-N.json` beside `full-plan.json`, which keeps the first phases): a resume
/// that replays the choices must write the same bytes, or it is refused.
pub(crate) fn write_appended(
    files: &RunFiles,
    schedule: &Schedule,
    from: usize,
) -> Result<(), CoordinatorError> {
    for index in from..schedule.phases.len() {
        let stem = files
            .plan
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let path = files
            .plan
            .with_file_name(format!("{stem}-phase-{index}.json"));
        write_json_once(&path, &schedule.phase_file(index))?;
    }
    Ok(())
}

/// Appends the workflow's next phases to `schedule`; false when it has none (the run is planned
/// to its end).
pub(crate) fn grow(
    inputs: &RunInputs,
    run: &RunDir,
    schedule: &mut Schedule,
    records: &BTreeMap<String, TerminalRecord>,
) -> Result<bool, CoordinatorError> {
    let plan_inputs = PlanInputs {
        spec: &inputs.spec.spec,
        dataset: &inputs.dataset,
        run_dir: &run.dir,
    };
    let next = inputs
        .workflow
        .next_phases(&plan_inputs, schedule, records)
        .map_err(|source| CoordinatorError::Plan {
            workflow: inputs.workflow.name().to_string(),
            source,
        })?;
    let grew = !next.is_empty();
    schedule.phases.extend(next);
    Ok(grew)
}

/// The timed phases of `attempt` that ran to their end.
pub(crate) fn finished_phases(manifest: &RunManifest, attempt: u32) -> BTreeSet<u32> {
    manifest
        .finished_phases
        .get(&attempt)
        .cloned()
        .unwrap_or_default()
}

/// Refuses a results file holding a record this run did not write — another run's `run_id`, a
/// request outside the plan, or a planned request on another lane — naming its line and request,
/// before anything is repaired, counted or executed (counting it would make a complete run look
/// incomplete forever, or pass another run's figures off as this one's).
pub(crate) fn refuse_unwritten(
    files: &RunFiles,
    plan: &Schedule,
    run_id: &str,
) -> Result<(), CoordinatorError> {
    let mut planned: HashMap<String, String> = HashMap::new();
    // Timed phases plan no list: a record of one is checked against the id its own position gives.
    let mut timed: HashMap<u32, &LoadPhase> = HashMap::new();
    for (index, phase) in plan.phases.iter().enumerate() {
        match phase {
            Phase::PairedRounds(paired) => planned.extend(
                paired
                    .plan
                    .rounds
                    .iter()
                    .flat_map(|round| round.requests.iter())
                    .map(|lane| (lane.request_id.clone(), lane.lane.clone())),
            ),
            Phase::OpenLoop(load) | Phase::ClosedLoop(load) if load.is_timed() => {
                timed.insert(u32::try_from(index).unwrap_or(u32::MAX), load);
            }
            Phase::OpenLoop(load) | Phase::ClosedLoop(load) => {
                let phase = u32::try_from(index).unwrap_or(u32::MAX);
                planned.extend(load.positions(phase).map(|position| {
                    let id = load_request_id(&plan.version, &position, plan.attempt);
                    (id, position.lane)
                }));
            }
        }
    }
    refuse_strays(&files.results, |record| {
        if record.run_id != run_id {
            return Some(format!(
                "run_id {:?}, this run is {run_id:?}",
                record.run_id
            ));
        }
        if let Some(id) = timed_id(&timed, &plan.version, plan.attempt, record) {
            return (id != record.request_id).then(|| format!("not the id of its position ({id})"));
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

/// The id a record of a timed phase must carry, from its phase, lane, slot and sequence; `None`
/// when it does not claim a position in one of `timed`.
fn timed_id(
    timed: &HashMap<u32, &LoadPhase>,
    version: &str,
    attempt: u32,
    record: &TerminalRecord,
) -> Option<String> {
    let load = timed.get(&record.phase?)?;
    let lane_index = load.lanes.iter().position(|l| l.label == record.lane)?;
    let position = LoadPosition {
        phase: record.phase?,
        lane: record.lane.clone(),
        lane_index,
        slot: record.slot?,
        sequence: record.sequence?,
    };
    Some(load_request_id(version, &position, attempt))
}
