//! The lanes of one planned round, in launch order, with their request ids (a plan's
//! memory flat in the number of rounds).
//!
//! A plan file lists every lane of every round; a plan the coordinator builds holds none of
//! them: each round's lanes are the base lanes rotated by the round index (METHODOLOGY §7) and
//! each request id is a hash of the lane and the round ([`crate::request::request_id`]), so they
//! are derived when asked for. Both forms serialise to the same JSON array, and a plan read back
//! from its file holds the listed form.

use super::schema::{Lane, PlannedLane};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::sync::Arc;

/// What every round of one plan shares: the base lanes and the inputs of the request ids.
#[derive(Debug, PartialEq, Eq)]
pub struct RotationBasis {
    /// Lanes in base order.
    pub lanes: Vec<Lane>,
    /// Schedule version feeding the ids.
    pub schedule_version: String,
    /// 0 for a full run; N for smoke attempt N.
    pub attempt: u32,
}

/// One round's lanes in launch order (a plan file's `requests` array).
#[derive(Debug, Clone)]
pub struct RoundRequests(Form);

#[derive(Debug, Clone)]
enum Form {
    /// As read from a plan file (or built by hand).
    Listed(Vec<PlannedLane>),
    /// Derived: `basis.lanes` rotated left by `round_index mod lanes`.
    Rotated {
        basis: Arc<RotationBasis>,
        round_index: u64,
        family: Arc<str>,
        item_id: Arc<str>,
    },
}

impl RoundRequests {
    /// The lanes of round `round_index` (for `family`'s item `item_id`) derived from `basis`.
    pub fn rotated(
        basis: Arc<RotationBasis>,
        round_index: u64,
        family: &str,
        item_id: &str,
    ) -> RoundRequests {
        RoundRequests(Form::Rotated {
            basis,
            round_index,
            family: Arc::from(family),
            item_id: Arc::from(item_id),
        })
    }

    /// Number of lanes in the round.
    pub fn len(&self) -> usize {
        match &self.0 {
            Form::Listed(lanes) => lanes.len(),
            Form::Rotated { basis, .. } => basis.lanes.len(),
        }
    }

    /// True when the round has no lane.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The lane at launch position `position`.
    pub fn get(&self, position: usize) -> Option<Cow<'_, PlannedLane>> {
        match &self.0 {
            Form::Listed(lanes) => lanes.get(position).map(Cow::Borrowed),
            Form::Rotated {
                basis,
                round_index,
                family,
                item_id,
            } => {
                let n = basis.lanes.len();
                if position >= n {
                    return None;
                }
                let shift = (*round_index % n as u64) as usize;
                let lane = &basis.lanes[(position + shift) % n];
                Some(Cow::Owned(PlannedLane {
                    // The lane label is the provider key with one region (the reference
                    // runner's ids) and `provider@region` with several, so every lane's request
                    // has its own id.
                    request_id: crate::request::request_id(
                        &basis.schedule_version,
                        &lane.label,
                        *round_index,
                        family,
                        item_id,
                        basis.attempt,
                    ),
                    lane: lane.label.clone(),
                    provider: lane.provider.clone(),
                    region: lane.region.clone(),
                }))
            }
        }
    }

    /// The lanes in launch order.
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, PlannedLane>> {
        (0..self.len()).filter_map(|position| self.get(position))
    }
}

impl From<Vec<PlannedLane>> for RoundRequests {
    fn from(lanes: Vec<PlannedLane>) -> RoundRequests {
        RoundRequests(Form::Listed(lanes))
    }
}

impl FromIterator<PlannedLane> for RoundRequests {
    fn from_iter<I: IntoIterator<Item = PlannedLane>>(lanes: I) -> RoundRequests {
        RoundRequests(Form::Listed(lanes.into_iter().collect()))
    }
}

impl PartialEq for RoundRequests {
    fn eq(&self, other: &RoundRequests) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl Eq for RoundRequests {}

impl Serialize for RoundRequests {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for RoundRequests {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RoundRequests, D::Error> {
        Vec::<PlannedLane>::deserialize(deserializer).map(RoundRequests::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(label: &str) -> Lane {
        Lane {
            label: label.into(),
            provider: label.into(),
            region: "local".into(),
        }
    }

    fn basis() -> Arc<RotationBasis> {
        Arc::new(RotationBasis {
            lanes: vec![lane("a"), lane("b"), lane("c")],
            schedule_version: "v1".into(),
            attempt: 0,
        })
    }

    fn order(basis: &Arc<RotationBasis>, round_index: u64) -> Vec<String> {
        RoundRequests::rotated(basis.clone(), round_index, "ticket-triage", "t-1")
            .iter()
            .map(|l| l.lane.clone())
            .collect()
    }

    #[test]
    fn a_rotated_round_is_the_base_order_shifted_left_by_its_index() {
        let four = Arc::new(RotationBasis {
            lanes: vec![lane("a"), lane("b"), lane("c"), lane("d")],
            schedule_version: "v1".into(),
            attempt: 0,
        });
        assert_eq!(order(&four, 0), ["a", "b", "c", "d"]);
        assert_eq!(order(&four, 1), ["b", "c", "d", "a"]);
        assert_eq!(order(&four, 3), ["d", "a", "b", "c"]);
        assert_eq!(order(&four, 4), ["a", "b", "c", "d"]);
        assert_eq!(order(&four, 6), ["c", "d", "a", "b"]);
        let round = RoundRequests::rotated(four, 6, "ticket-triage", "t-1");
        assert_eq!(round.len(), 4);
        assert!(round.get(4).is_none());
        let none = Arc::new(RotationBasis {
            lanes: Vec::new(),
            schedule_version: "v1".into(),
            attempt: 0,
        });
        assert!(order(&none, 3).is_empty());
        assert!(RoundRequests::rotated(none, 3, "f", "i").is_empty());
    }

    #[test]
    fn derived_request_ids_are_the_schedule_ids_of_each_lane() {
        let round = RoundRequests::rotated(basis(), 1, "ticket-triage", "t-1");
        let ids: Vec<String> = round.iter().map(|l| l.request_id.clone()).collect();
        // Python: "req-" + hashlib.sha256("\0".join(["v1", lane, "1", "ticket-triage", "t-1",
        //         "0"]).encode()).hexdigest()[:24] for lanes b and c (round 1 starts at b).
        assert_eq!(ids[0], "req-0bc7de7e23626dbe9a2ca9e2");
        assert_eq!(ids[1], "req-889d5615e7dc5d2776e47c5b");
    }

    #[test]
    fn both_forms_write_the_same_json_and_read_back_equal() {
        let rotated = RoundRequests::rotated(basis(), 2, "ticket-triage", "t-1");
        let json = serde_json::to_string(&rotated).unwrap();
        let listed: RoundRequests = serde_json::from_str(&json).unwrap();
        assert!(matches!(listed.0, Form::Listed(_)));
        assert_eq!(listed, rotated);
        assert_eq!(serde_json::to_string(&listed).unwrap(), json);
        // The array lists c, a, b with the four fields of a plan file's request.
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value[0]["lane"], "c");
        assert_eq!(value[2]["lane"], "b");
        assert_eq!(value[1]["region"], "local");
    }
}
