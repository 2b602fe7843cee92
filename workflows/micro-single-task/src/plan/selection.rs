//! Deterministic question selection (METHODOLOGY §7): per family, the sorted ids shuffled with
//! CPython's `random.Random(seed).shuffle`, seed = big-endian sha256(slug \0 release \0 family \0
//! schedule version); the first `n` are taken. Written as `artifacts/selection.json`.

use super::cpython_random::{Mt19937, be_bytes_to_decimal};
use openbench_common::workflow::{DatasetRelease, WorkItem};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Version tag of this selection algorithm, recorded in `selection.json`.
pub const ALGORITHM_VERSION: &str = "cpython-mt19937-shuffle-sha256-v1";

/// A selection problem: the family has fewer items than the plan needs, or none at all.
#[derive(Debug, thiserror::Error)]
pub enum SelectionError {
    /// The dataset lacks a family the spec lists.
    #[error("dataset has no items for family {family:?}")]
    MissingFamily {
        /// Family name.
        family: String,
    },
    /// The family has fewer items than requested.
    #[error("family {family:?} has {available} items; the plan needs {needed}")]
    TooFew {
        /// Family name.
        family: String,
        /// Items in the dataset.
        available: usize,
        /// Items per family the plan selects.
        needed: usize,
    },
    /// Two rows share an id.
    #[error("family {family:?} lists item id {item_id:?} twice")]
    DuplicateId {
        /// Family name.
        family: String,
        /// The repeated id.
        item_id: String,
    },
}

/// One family's selection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilySelection {
    /// The seed as a decimal string (a 256-bit integer).
    pub seed: String,
    /// Every id of the family in shuffled order.
    pub full_family_order: Vec<String>,
    /// The first `selected_items` ids of that order.
    pub selected_prefix: Vec<String>,
    /// Item hash of each selected id, in the same order.
    pub selected_item_hashes: Vec<String>,
}

/// The whole `artifacts/selection.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// [`ALGORITHM_VERSION`].
    pub algorithm_version: String,
    /// Benchmark slug the seeds derive from.
    pub benchmark_slug: String,
    /// Release hash the seeds derive from.
    pub dataset_release_hash: String,
    /// Items selected per family.
    pub selected_items: usize,
    /// Family → its selection (a map: JSON keys sorted; round order comes from the spec).
    pub families: BTreeMap<String, FamilySelection>,
}

/// The 32 seed bytes of one family: sha256 of `slug \0 release_hash \0 family \0 schedule_version`.
pub fn seed_bytes(
    slug: &str,
    release_hash: &str,
    family: &str,
    schedule_version: &str,
) -> [u8; 32] {
    let joined = [slug, release_hash, family, schedule_version].join("\0");
    Sha256::digest(joined.as_bytes()).into()
}

/// The family's ids sorted ascending, then shuffled exactly as CPython would with this seed.
pub fn shuffled_order(seed: &[u8], ids: &[String]) -> Vec<String> {
    let mut order: Vec<String> = ids.to_vec();
    order.sort();
    Mt19937::from_be_bytes(seed).shuffle(&mut order);
    order
}

/// The 32 seed bytes of repeat `repeat` (≥ 1) of one family: sha256 of `slug \0 release_hash
/// \0 family \0 schedule_version \0 repeat \0 <repeat>` (the selection's seed inputs, then the
/// pass), so each pass of a repeated run has its own order, fixed by the run's identity.
pub fn repeat_seed_bytes(
    slug: &str,
    release_hash: &str,
    family: &str,
    schedule_version: &str,
    repeat: u32,
) -> [u8; 32] {
    let repeat = repeat.to_string();
    let joined = [
        slug,
        release_hash,
        family,
        schedule_version,
        "repeat",
        &repeat,
    ]
    .join("\0");
    Sha256::digest(joined.as_bytes()).into()
}

impl Selection {
    /// Refuses when a family selected fewer than `needed` items (a dataset too small for the plan).
    pub fn require(&self, needed: usize) -> Result<(), SelectionError> {
        for (family, f) in &self.families {
            if f.selected_prefix.len() < needed {
                return Err(SelectionError::TooFew {
                    family: family.clone(),
                    available: f.full_family_order.len(),
                    needed,
                });
            }
        }
        Ok(())
    }
}

/// Selects up to `per_family` items of every family in `families` (spec order); a smaller family
/// selects all its items, and [`Selection::require`] refuses it for a plan that needs more.
pub fn select(
    dataset: &DatasetRelease,
    slug: &str,
    schedule_version: &str,
    families: &[String],
    per_family: usize,
) -> Result<Selection, SelectionError> {
    let mut out = BTreeMap::new();
    for family in families {
        let items = dataset
            .items
            .get(family)
            .filter(|items| !items.is_empty())
            .ok_or_else(|| SelectionError::MissingFamily {
                family: family.clone(),
            })?;
        let by_id = index_items(family, items)?;
        let seed = seed_bytes(slug, &dataset.release_hash, family, schedule_version);
        let ids: Vec<String> = by_id.keys().cloned().collect();
        let order = shuffled_order(&seed, &ids);
        let prefix: Vec<String> = order.iter().take(per_family).cloned().collect();
        let hashes = prefix
            .iter()
            .filter_map(|id| by_id.get(id).map(|item| item.item_hash.clone()))
            .collect();
        out.insert(
            family.clone(),
            FamilySelection {
                seed: be_bytes_to_decimal(&seed),
                full_family_order: order,
                selected_prefix: prefix,
                selected_item_hashes: hashes,
            },
        );
    }
    Ok(Selection {
        algorithm_version: ALGORITHM_VERSION.to_string(),
        benchmark_slug: slug.to_string(),
        dataset_release_hash: dataset.release_hash.clone(),
        selected_items: per_family,
        families: out,
    })
}

fn index_items<'a>(
    family: &str,
    items: &'a [WorkItem],
) -> Result<BTreeMap<String, &'a WorkItem>, SelectionError> {
    let mut by_id = BTreeMap::new();
    for item in items {
        if by_id.insert(item.item_id.clone(), item).is_some() {
            return Err(SelectionError::DuplicateId {
                family: family.to_string(),
                item_id: item.item_id.clone(),
            });
        }
    }
    Ok(by_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use openbench_common::hash::sha256_hex;

    #[test]
    fn family_seed_and_order_match_cpython() {
        // import random, hashlib
        // s = int.from_bytes(hashlib.sha256("\0".join(["inference-micro-single-task", "a"*64,
        //     "ticket-triage", "micro-single-task-paired-round-robin-sha256-v1"]).encode()).digest(), "big")
        // ids = sorted(f"tt-{i:04d}" for i in range(250)); random.Random(s).shuffle(ids)
        // print(s, ids[:10], hashlib.sha256("\n".join(ids).encode()).hexdigest())
        let seed = seed_bytes(
            "inference-micro-single-task",
            &"a".repeat(64),
            "ticket-triage",
            "micro-single-task-paired-round-robin-sha256-v1",
        );
        assert_eq!(
            be_bytes_to_decimal(&seed),
            "100715537292155707318400843837163619276357274681281472129867607525419726933746"
        );
        // Reverse order in: selection sorts the ids itself.
        let ids: Vec<String> = (0..250).rev().map(|i| format!("tt-{i:04}")).collect();
        let order = shuffled_order(&seed, &ids);
        let want_head = [23, 74, 36, 38, 78, 209, 55, 230, 82, 118].map(|i| format!("tt-{i:04}"));
        assert_eq!(&order[..10], &want_head);
        assert_eq!(
            sha256_hex(order.join("\n")),
            "28340c5556ebcc6b3e28281f4a877e7c716dc28b361c42abe9f3f1147beb6b9e"
        );
    }

    fn item(family: &str, id: &str) -> WorkItem {
        WorkItem {
            group: family.into(),
            item_id: id.into(),
            system: "s".into(),
            user: format!("u {id}"),
            item_hash: sha256_hex(id),
        }
    }

    #[test]
    fn select_takes_prefix_and_hashes() {
        let mut items = BTreeMap::new();
        items.insert(
            "ticket-triage".to_string(),
            (0..250)
                .map(|i| item("ticket-triage", &format!("tt-{i:04}")))
                .collect(),
        );
        let dataset = DatasetRelease {
            dir: "d".into(),
            release_hash: "a".repeat(64),
            file_hashes: BTreeMap::new(),
            items,
        };
        let families = vec!["ticket-triage".to_string()];
        let sel = select(
            &dataset,
            "inference-micro-single-task",
            "micro-single-task-paired-round-robin-sha256-v1",
            &families,
            3,
        )
        .unwrap();
        let fam = &sel.families["ticket-triage"];
        assert_eq!(fam.selected_prefix, vec!["tt-0023", "tt-0074", "tt-0036"]);
        assert_eq!(fam.selected_item_hashes[0], sha256_hex("tt-0023"));
        assert_eq!(fam.full_family_order.len(), 250);
        sel.require(3).unwrap();
        let small = select(&dataset, "x", "v", &families, 251).unwrap();
        assert_eq!(small.families["ticket-triage"].selected_prefix.len(), 250);
        let err = small.require(251).unwrap_err();
        assert!(err.to_string().contains("has 250 items"), "{err}");
        let err = select(&dataset, "x", "v", &["nope".to_string()], 1).unwrap_err();
        assert!(err.to_string().contains("\"nope\""), "{err}");
    }
}
