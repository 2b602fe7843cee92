//! An attempt's plan file, of either kind the coordinator writes ([`PlanFile`]): the paired
//! rounds of micro-single-task (`plan_version` 1, [`Plan`]) or a schedule's phases
//! (`plan_version` 2: open loops, closed loops, paired phases). Both are reduced to one
//! [`Outline`]: the lanes, the columns the lane table shows, and the units progress is counted
//! in, each with the ids of its requests. Paired rounds keep their task families as columns and
//! their rounds as units; a phases plan shows one column and one unit per phase, so a closed and
//! an open loop are told apart and "2/3" means two phases of three are done.

use openbench_common::rundir::{Lane, Plan, RunDirError, read_json};
#[cfg(doc)]
use openbench_common::schedule::PlanFile;
use openbench_common::schedule::{Pacing, load_request_id, positions};
use serde::Deserialize;
use std::path::Path;

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
}

/// One unit of progress: a paired round, or a whole phase.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    /// The column its requests count under.
    pub column: String,
    /// Its requests: (request id, lane).
    pub requests: Vec<(String, Lane)>,
}

/// A plan file of the phases kind, as the coordinator writes it.
#[derive(Debug, Deserialize)]
struct PhasesPlan {
    attempt: u32,
    schedule_version: String,
    phases: Vec<PhaseEntry>,
}

/// One phase of a phases plan.
#[derive(Debug, Deserialize)]
struct PhaseEntry {
    phase: u32,
    name: String,
    lanes: Vec<Lane>,
    #[serde(default)]
    pacing: Option<Pacing>,
    #[serde(default)]
    plan: Option<Plan>,
}

/// Just enough of a plan file to tell its kind.
#[derive(Debug, Deserialize)]
struct Version {
    plan_version: u32,
}

/// Reads the plan file at `path`, of either kind.
pub fn read(path: &Path) -> Result<Outline, RunDirError> {
    let Version { plan_version } = read_json(path)?;
    if plan_version == 2 {
        Ok(phases_outline(&read_json(path)?))
    } else {
        Ok(of_rounds(&read_json(path)?))
    }
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
            })
            .collect(),
        by_phase: false,
    }
}

/// A phases plan: one column and one unit per phase. A load phase's ids are rebuilt from its
/// lanes and pacing as the coordinator builds them; a paired phase's are in its rounds.
fn phases_outline(file: &PhasesPlan) -> Outline {
    let mut outline = Outline {
        by_phase: true,
        ..Outline::default()
    };
    for phase in &file.phases {
        for lane in &phase.lanes {
            if !outline.lanes.iter().any(|l| l.label == lane.label) {
                outline.lanes.push(lane.clone());
            }
        }
        let requests = match (&phase.pacing, &phase.plan) {
            (Some(pacing), _) => positions(&phase.lanes, pacing, phase.phase)
                .map(|p| {
                    let id = load_request_id(&file.schedule_version, &p, file.attempt);
                    (id, phase.lanes[p.lane_index].clone())
                })
                .collect(),
            (None, Some(plan)) => of_rounds(plan)
                .units
                .into_iter()
                .flat_map(|u| u.requests)
                .collect(),
            (None, None) => Vec::new(),
        };
        outline.columns.push(phase.name.clone());
        outline.units.push(Unit {
            column: phase.name.clone(),
            requests,
        });
    }
    outline
}

#[cfg(test)]
mod tests;
