//! The schedule (METHODOLOGY §7): for item index 0..N−1, for each family in spec order, one round;
//! every lane gets every round; launch order is the lane base order rotated left by
//! `round_index mod lanes`. Written as `artifacts/full-plan.json` or
//! `artifacts/smoke-plan-attempt-N.json`. With `plans.repeats: N` the round set is planned N
//! times over, each pass in its own seeded item order (docs/methodology.md, "Repeats of paired
//! rounds").

use super::selection::Selection;
use crate::scoring::Family;
use openbench_common::request::{ChatMessage, Role, round_id};
use openbench_common::rundir::{
    PLAN_VERSION, Plan, PlanKind, PlannedRound, RotationBasis, RoundRequests,
};
use openbench_common::schedule::{RoundPrompts, lanes};
use openbench_common::spec::Spec;
use openbench_common::tool::ToolOffer;
use openbench_common::workflow::{DatasetRelease, WorkItem};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Builds the plan of `items_per_family` items per family (a prefix of the selection), run
/// `repeats` times (absent: once). Pass 0 is the plan made once, round for round; pass r ≥ 1
/// asks the same items in its own seeded order (sorted, then shuffled under
/// [`super::selection::repeat_seed_bytes`]), its
/// rounds numbered on from the last pass's, so its ids and launch rotations are its own.
pub fn build_plan(
    spec: &Spec,
    families: &[String],
    selection: &Selection,
    dataset: &DatasetRelease,
    (items_per_family, repeats): (usize, Option<u32>),
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
    for repeat in 0..repeats.unwrap_or(1).max(1) {
        let orders: BTreeMap<&str, Vec<String>> = families
            .iter()
            .filter_map(|family| {
                let prefix = selection.families.get(family)?.selected_prefix.as_slice();
                let prefix = &prefix[..items_per_family.min(prefix.len())];
                let order = if repeat == 0 {
                    prefix.to_vec()
                } else {
                    let seed = super::selection::repeat_seed_bytes(
                        &spec.benchmark.slug,
                        &dataset.release_hash,
                        family,
                        version,
                        repeat,
                    );
                    super::selection::shuffled_order(&seed, prefix)
                };
                Some((family.as_str(), order))
            })
            .collect();
        for index in 0..items_per_family {
            for family in families {
                let Some(item_id) = orders.get(family.as_str()).and_then(|o| o.get(index)) else {
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
        families: families.to_vec(),
        lanes: base,
        items_per_family,
        repeats: repeats.filter(|n| *n > 1),
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

/// Each round's messages: its item's system and user prompt, looked up in the dataset (indexed
/// once per plan; the prompt is copied only when a round is prepared).
pub struct DatasetPrompts {
    dataset: Arc<DatasetRelease>,
    index: HashMap<(String, String), usize>,
    /// Every round offers its family's forced tool (`answer_via: tool_call`).
    tools: bool,
}

impl DatasetPrompts {
    /// Indexes `dataset`'s items by family and id.
    pub fn new(dataset: Arc<DatasetRelease>) -> DatasetPrompts {
        let index = dataset
            .items
            .iter()
            .flat_map(|(family, items)| {
                items
                    .iter()
                    .enumerate()
                    .map(move |(i, item)| ((family.clone(), item.item_id.clone()), i))
            })
            .collect();
        DatasetPrompts {
            dataset,
            index,
            tools: false,
        }
    }

    /// The same prompts, each round offering its family's forced tool when `tools`.
    pub fn with_tools(self, tools: bool) -> DatasetPrompts {
        DatasetPrompts { tools, ..self }
    }

    fn item(&self, round: &PlannedRound) -> Option<&WorkItem> {
        let key = (round.task_family.clone(), round.item_id.clone());
        let position = *self.index.get(&key)?;
        self.dataset.items.get(&round.task_family)?.get(position)
    }
}

impl RoundPrompts for DatasetPrompts {
    fn check(&self, round: &PlannedRound) -> Result<(), String> {
        match self.item(round) {
            Some(_) => Ok(()),
            None => Err(format!(
                "item {} of family {} is not in the dataset",
                round.item_id, round.task_family
            )),
        }
    }

    fn tool(&self, round: &PlannedRound) -> Option<ToolOffer> {
        if !self.tools {
            return None;
        }
        Family::parse(&round.task_family).map(crate::scoring::tool_call::tool_for)
    }

    fn messages(&self, round: &PlannedRound) -> Vec<ChatMessage> {
        let Some(item) = self.item(round) else {
            return Vec::new();
        };
        vec![
            ChatMessage::text(Role::System, item.system.clone()),
            ChatMessage::text(Role::User, item.user.clone()),
        ]
    }
}
