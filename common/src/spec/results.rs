//! The spec's `results:` section: whether a run is published to the results store, and what
//! `history` counts as a regression.

use serde::{Deserialize, Serialize};

/// The spec's `results:` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultsSettings {
    /// Publish the run to the results store when `run` ends (finished or failed part-way).
    #[serde(default)]
    pub publish: bool,
    /// What `history` counts as a regression.
    #[serde(default)]
    pub regression: RegressionRule,
}

/// A change is a regression when its 95% interval excludes zero on the worse side and its size
/// reaches these thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegressionRule {
    /// Smallest relative change of a latency or tokens/s figure, in percent of the earlier value.
    #[serde(default = "default_min_relative_change_pct")]
    pub min_relative_change_pct: f64,
    /// Smallest change of a rate (task success, failure rate), in percentage points.
    #[serde(default = "default_min_rate_change_points")]
    pub min_rate_change_points: f64,
}

fn default_min_relative_change_pct() -> f64 {
    10.0
}

fn default_min_rate_change_points() -> f64 {
    2.0
}

impl Default for RegressionRule {
    fn default() -> RegressionRule {
        RegressionRule {
            min_relative_change_pct: default_min_relative_change_pct(),
            min_rate_change_points: default_min_rate_change_points(),
        }
    }
}
