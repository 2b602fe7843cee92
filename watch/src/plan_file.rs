//! An attempt's plan file, of either kind the coordinator writes ([`PlanFile`]): the paired
//! rounds of micro-single-task (`plan_version` 1, [`Plan`]) or a schedule's phases
//! (`plan_version` 2: open loops, closed loops, paired phases). Both are reduced to one
//! [`Outline`]: the lanes, the columns the lane table shows, and the units progress is counted
//! in, each with the ids of its requests. Paired rounds keep their task families as columns and
//! their rounds as units; a phases plan shows one column and one unit per phase, so a closed and
//! an open loop are told apart and "2/3" means two phases of three are done. A load phase also
//! says what it asks of each lane ([`PhaseLoad`]), for the live load row.
//!
//! A schedule chosen as it runs (the load workflow's saturation search) writes each phase it adds
//! as its own file beside the plan (`full-plan-phase-N.json`, [`phase_file_path`]); [`read`]
//! takes those too, so progress counts every phase written so far.

use openbench_common::rundir::{Lane, Plan, RunDirError, read_json};
#[cfg(doc)]
use openbench_common::schedule::PlanFile;
use openbench_common::schedule::{Pacing, load_request_id, positions};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// What `watch` takes from a plan file; see the module docs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outline {
    /// Lanes in base order (of the first phase that names each).
    pub lanes: Vec<Lane>,
    /// Column heads: task families (paired rounds) or phase names (phases).
    pub columns: Vec<String>,
    /// Units of progress in order: rounds or phases.
    pub units: Vec<Unit>,
    /// The columns are phases: a record counts under its phase, not its task family.
    pub by_phase: bool,
    /// A phases plan's schedule version and attempt (the request ids' inputs); `None` for
    /// paired rounds.
    pub schedule: Option<(String, u32)>,
}

/// One unit of progress: a paired round, or a whole phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    /// The column its requests count under.
    pub column: String,
    /// Its requests: (request id, lane).
    pub requests: Vec<(String, Lane)>,
    /// What a load phase asks of each lane (`None` for paired rounds).
    pub load: Option<PhaseLoad>,
    /// Lanes whose requests in this unit are an outcome, not a plan (a timed closed loop sends
    /// as many as its users finish in the window, so its plan lists none; a phase whose source
    /// reads history, conversations, may stop its slots before their planned turns, so its plan
    /// lists a ceiling): their progress has no total.
    pub open_ended: Vec<Lane>,
}

/// What one load phase asks of each of its lanes.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseLoad {
    /// The phase name (the load workflow's `step-N <load>`, e.g. `step-2 poisson 8/s`).
    pub name: String,
    /// Each lane (label) with its target, in base order.
    pub lanes: Vec<(String, Target)>,
}

/// A lane's target in one load phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// Open loop: the rate its releases ask for, (n − 1) ÷ (last − first release offset) per
    /// second (exactly the nominal rate of a constant process); `None` under two releases.
    RatePerS(Option<f64>),
    /// Closed loop: the users (slots) it keeps busy.
    Users(u32),
}

impl PhaseLoad {
    /// The targets `pacing` sets for `lanes`.
    pub fn of(name: &str, lanes: &[Lane], pacing: &Pacing) -> PhaseLoad {
        let target = |i: usize| match pacing {
            Pacing::Releases { offsets_ms, .. } => {
                Target::RatePerS(offsets_ms.get(i).and_then(|o| rate_per_s(o)))
            }
            Pacing::Slots { concurrency, .. } => Target::Users(*concurrency),
            Pacing::Users { users, .. } | Pacing::UsersToCount { users, .. } => {
                Target::Users(users.get(i).copied().unwrap_or(0))
            }
        };
        PhaseLoad {
            name: name.to_string(),
            lanes: lanes
                .iter()
                .enumerate()
                .map(|(i, lane)| (lane.label.clone(), target(i)))
                .collect(),
        }
    }
}

/// Events per second of ascending `offsets_ms`: (n − 1) ÷ (last − first) in seconds; `None`
/// under two offsets or when they do not spread. The target of a lane's releases and, over the
/// sends recorded so far, its achieved rate are both this, so they compare like for like.
pub fn rate_per_s(offsets_ms: &[f64]) -> Option<f64> {
    let (first, last) = (offsets_ms.first()?, offsets_ms.last()?);
    let span_s = (last - first) / 1000.0;
    (offsets_ms.len() >= 2 && span_s > 0.0).then(|| (offsets_ms.len() - 1) as f64 / span_s)
}

/// A plan file of the phases kind, as the coordinator writes it.
#[derive(Debug, Deserialize)]
struct PhasesPlan {
    attempt: u32,
    schedule_version: String,
    phases: Vec<PhaseEntry>,
}

/// One phase of a phases plan, or a phase file written beside it.
#[derive(Debug, Deserialize)]
struct PhaseEntry {
    phase: u32,
    name: String,
    lanes: Vec<Lane>,
    #[serde(default)]
    pacing: Option<Pacing>,
    #[serde(default)]
    plan: Option<Plan>,
    /// The phase's source reads its slots' history (conversations): its slots may stop early,
    /// so its planned requests are a ceiling. Absent in older plan files: false.
    #[serde(default)]
    reads_history: bool,
}

/// Just enough of a plan file to tell its kind.
#[derive(Debug, Deserialize)]
struct Version {
    plan_version: u32,
}

/// Reads the plan file at `path`, of either kind, with the phase files written beside a phases
/// plan so far (in order, up to the first index that has none).
pub fn read(path: &Path) -> Result<Outline, RunDirError> {
    let Version { plan_version } = read_json(path)?;
    if plan_version != 2 {
        return Ok(of_rounds(&read_json(path)?));
    }
    let mut outline = phases_outline(&read_json(path)?);
    loop {
        let next = phase_file_path(path, outline.units.len());
        if !next.exists() {
            return Ok(outline);
        }
        let entry: PhaseEntry = read_json(&next)?;
        push_phase(&mut outline, &entry);
    }
}

/// Where the coordinator writes phase `index` of a schedule that grows as it runs: beside the
/// plan at `plan`, named after it (`full-plan.json` → `full-plan-phase-3.json`).
pub fn phase_file_path(plan: &Path, index: usize) -> PathBuf {
    let stem = plan
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    plan.with_file_name(format!("{stem}-phase-{index}.json"))
}

/// A paired-rounds plan: its families as columns, its rounds as units.
pub fn of_rounds(plan: &Plan) -> Outline {
    Outline {
        lanes: plan.lanes.clone(),
        columns: plan.families.clone(),
        units: plan
            .rounds
            .iter()
            .map(|round| Unit {
                column: round.task_family.clone(),
                requests: round
                    .requests
                    .iter()
                    .map(|r| {
                        let lane = Lane {
                            label: r.lane.clone(),
                            provider: r.provider.clone(),
                            region: r.region.clone(),
                        };
                        (r.request_id.clone(), lane)
                    })
                    .collect(),
                load: None,
                open_ended: Vec::new(),
            })
            .collect(),
        by_phase: false,
        schedule: None,
    }
}

/// A phases plan: one column and one unit per phase. A load phase's ids are rebuilt from its
/// lanes and pacing as the coordinator builds them; a paired phase's are in its rounds.
fn phases_outline(file: &PhasesPlan) -> Outline {
    let mut outline = Outline {
        by_phase: true,
        schedule: Some((file.schedule_version.clone(), file.attempt)),
        ..Outline::default()
    };
    for phase in &file.phases {
        push_phase(&mut outline, phase);
    }
    outline
}

/// Adds one phase to a phases outline: its new lanes, its column and its unit.
fn push_phase(outline: &mut Outline, phase: &PhaseEntry) {
    let (version, attempt) = outline.schedule.clone().unwrap_or_default();
    for lane in &phase.lanes {
        if !outline.lanes.iter().any(|l| l.label == lane.label) {
            outline.lanes.push(lane.clone());
        }
    }
    let requests = match (&phase.pacing, &phase.plan) {
        (Some(pacing), _) => positions(&phase.lanes, pacing, phase.phase)
            .filter_map(|p| {
                let lane = phase.lanes.get(p.lane_index)?.clone();
                Some((load_request_id(&version, &p, attempt), lane))
            })
            .collect(),
        (None, Some(plan)) => of_rounds(plan)
            .units
            .into_iter()
            .flat_map(|u| u.requests)
            .collect(),
        (None, None) => Vec::new(),
    };
    let open_ended = match &phase.pacing {
        Some(Pacing::Users { .. }) => phase.lanes.clone(),
        Some(_) if phase.reads_history => phase.lanes.clone(),
        _ => Vec::new(),
    };
    outline.columns.push(phase.name.clone());
    outline.units.push(Unit {
        column: phase.name.clone(),
        requests,
        open_ended,
        load: phase
            .pacing
            .as_ref()
            .map(|pacing| PhaseLoad::of(&phase.name, &phase.lanes, pacing)),
    });
}

#[cfg(test)]
mod tests;
