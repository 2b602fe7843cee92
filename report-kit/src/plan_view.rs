//! The part of a plan the report reads: its lanes and each planned request's lane and id. The
//! typed `Plan` also holds per request the provider and region (already in `lanes`) and per
//! round its ids and item hash; at a million planned requests that is ≈ 100 MB more to parse and
//! hold for nothing, so `report` reads `artifacts/*-plan.json` through this view (serde skips the
//! other fields).

use openbench_common::rundir::{Lane, Plan};
use serde::Deserialize;

/// A plan as the report reads it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PlanView {
    /// Lanes in base order.
    pub lanes: Vec<Lane>,
    /// Passes over the round set (`Plan::repeats`); absent for a plan made once.
    #[serde(default)]
    pub repeats: Option<u32>,
    /// Every round in order.
    pub rounds: Vec<RoundView>,
}

/// A round's planned requests.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RoundView {
    /// Round index (its position in a well-formed plan).
    pub round_index: u64,
    /// One per lane, in launch order.
    pub requests: Vec<RequestView>,
}

/// One planned request: its lane label and id.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RequestView {
    /// Lane label.
    pub lane: Box<str>,
    /// `req-…` id.
    pub request_id: Box<str>,
}

impl From<&Plan> for PlanView {
    fn from(plan: &Plan) -> PlanView {
        PlanView {
            lanes: plan.lanes.clone(),
            repeats: plan.repeats,
            rounds: plan
                .rounds
                .iter()
                .map(|r| RoundView {
                    round_index: r.round_index,
                    requests: r
                        .requests
                        .iter()
                        .map(|l| RequestView {
                            lane: l.lane.as_str().into(),
                            request_id: l.request_id.as_str().into(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}
