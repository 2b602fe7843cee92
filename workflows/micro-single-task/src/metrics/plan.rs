//! The parts of the coordinator's plan file (`artifacts/full-plan.json`,
//! `artifacts/smoke-plan-attempt-N.json`) the report needs: lanes and planned request ids.
//! Unknown fields are skipped while parsing, so prompts and hashes never sit in memory.

use serde::Deserialize;
use std::path::Path;

/// A lane of the plan, in base order.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PlanLane {
    /// Lane label.
    pub label: String,
    /// Provider key.
    pub provider: String,
    /// Region label.
    pub region: String,
}

/// One planned request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PlanRequest {
    /// Lane label.
    pub lane: String,
    /// Request id.
    pub request_id: String,
}

/// One planned round.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PlanRound {
    /// Round index.
    pub round_index: u64,
    /// Requests in launch order.
    pub requests: Vec<PlanRequest>,
}

/// The plan, reduced.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PlanView {
    /// Lanes in base order.
    pub lanes: Vec<PlanLane>,
    /// Rounds in order.
    pub rounds: Vec<PlanRound>,
}

/// Reads a plan file; the error names the file.
pub fn read_plan(path: &Path) -> Result<PlanView, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_reader(std::io::BufReader::new(file))
        .map_err(|e| format!("{}: not a plan: {e}", path.display()))
}
