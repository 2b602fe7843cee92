//! The schedule (METHODOLOGY §7): for item index 0..N−1, for each family in spec order, one round;
//! every lane gets every round; launch order is the lane base order rotated left by
//! `round_index mod lanes`. Written as `artifacts/full-plan.json` or
//! `artifacts/smoke-plan-attempt-N.json`.

use crate::selection::Selection;
use openbench_common::request::{ChatMessage, PlannedRequest, RequestIdentity, Role, round_id};
use openbench_common::rundir::{
    Lane, PLAN_VERSION, Plan, PlanKind, PlannedLane, PlannedRound, RotationBasis, RoundRequests,
};
use openbench_common::spec::Spec;
use openbench_common::workflow::{DatasetRelease, WorkItem};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The spec's lanes in base order: providers in spec order, each in every region.
pub fn lanes(spec: &Spec) -> Vec<Lane> {
    let regions = spec.region_names();
    let several = regions.len() > 1;
    let mut out = Vec::new();
    for p in &spec.providers {
        for region in &regions {
            let label = if several {
                format!("{}@{region}", p.key)
            } else {
                p.key.clone()
            };
            out.push(Lane {
                label,
                provider: p.key.clone(),
                region: region.clone(),
            });
        }
    }
    out
}

/// Builds the plan of `items_per_family` items per family (a prefix of the selection).
pub fn build_plan(
    spec: &Spec,
    selection: &Selection,
    dataset: &DatasetRelease,
    items_per_family: usize,
    attempt: u32,
) -> Plan {
    let version = &spec.benchmark.schedule_version;
    let base = lanes(spec);
    // Every round's lanes and request ids are derived from this when asked for, so the plan's
    // memory does not grow with lanes × rounds.
    let basis = Arc::new(RotationBasis {
        lanes: base.clone(),
        schedule_version: version.clone(),
        attempt,
    });
    let hashes = item_hashes(dataset);
    let mut rounds = Vec::new();
    for index in 0..items_per_family {
        for family in &spec.benchmark.families {
            let Some(item_id) = selection
                .families
                .get(family)
                .and_then(|f| f.selected_prefix.get(index))
            else {
                continue;
            };
            let round_index = rounds.len() as u64;
            rounds.push(PlannedRound {
                round_index,
                round_id: round_id(version, round_index, family, item_id, attempt),
                task_family: family.clone(),
                item_id: item_id.clone(),
                item_hash: hashes
                    .get(&(family.as_str(), item_id.as_str()))
                    .cloned()
                    .unwrap_or_default(),
                requests: RoundRequests::rotated(basis.clone(), round_index, family, item_id),
            });
        }
    }
    Plan {
        plan_version: PLAN_VERSION,
        kind: if attempt == 0 {
            PlanKind::Full
        } else {
            PlanKind::Smoke
        },
        attempt,
        benchmark_slug: spec.benchmark.slug.clone(),
        schedule_version: version.clone(),
        dataset_release_hash: dataset.release_hash.clone(),
        families: spec.benchmark.families.clone(),
        lanes: base,
        items_per_family,
        rounds,
    }
}

fn item_hashes(dataset: &DatasetRelease) -> BTreeMap<(&str, &str), String> {
    dataset
        .items
        .iter()
        .flat_map(|(family, items)| {
            items
                .iter()
                .map(move |i| ((family.as_str(), i.item_id.as_str()), i.item_hash.clone()))
        })
        .collect()
}

/// Looks up a dataset item by family and id.
pub fn find_item<'a>(
    dataset: &'a DatasetRelease,
    family: &str,
    item_id: &str,
) -> Option<&'a WorkItem> {
    dataset
        .items
        .get(family)
        .and_then(|items| items.iter().find(|i| i.item_id == item_id))
}

/// The request a probe executes for one lane of a round.
pub fn planned_request(
    run_id: &str,
    plan: &Plan,
    round: &PlannedRound,
    lane: &PlannedLane,
    item: &WorkItem,
    deadline_ms: u64,
) -> PlannedRequest {
    PlannedRequest {
        identity: RequestIdentity {
            run_id: run_id.to_string(),
            round_id: round.round_id.clone(),
            request_id: lane.request_id.clone(),
            round_index: round.round_index,
            attempt: plan.attempt,
            task_family: round.task_family.clone(),
            item_id: round.item_id.clone(),
            provider: lane.provider.clone(),
            region: lane.region.clone(),
            lane: lane.lane.clone(),
        },
        messages: vec![
            ChatMessage {
                role: Role::System,
                content: item.system.clone(),
            },
            ChatMessage {
                role: Role::User,
                content: item.user.clone(),
            },
        ],
        deadline_ms,
    }
}
