//! Provider profiles as data: the seed figures each profile is fitted to, and the latency,
//! answer-quality and failure model derived from them.
//!
//! The table lives in `profiles.yaml` (embedded at build time); this module parses it, checks
//! it, and turns seed figures into distribution parameters. Nothing here sleeps or does I/O.

use crate::prefix_cache::PrefixCacheSpec;
use crate::quirk::{self, Quirk};
use crate::{SimError, TableError};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// The embedded profile table.
const PROFILES_YAML: &str = include_str!("../profiles.yaml");

/// z for the 99th percentile of a standard normal.
const Z_P99: f64 = 2.326_347_874;
/// z for the 95th percentile of a standard normal.
const Z_P95: f64 = 1.644_853_627;

/// Published figures of one provider in the seed snapshot.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedFigures {
    /// E2E p50, ms.
    pub e2e_p50_ms: f64,
    /// E2E p99, ms.
    pub e2e_p99_ms: f64,
    /// TTFA p50, ms.
    pub ttfa_p50_ms: f64,
    /// Visible-answer tokens/s p50.
    pub tokens_per_s_p50: f64,
    /// Tokens/s p95 floor (the 5th percentile).
    pub tokens_per_s_p95_floor: f64,
    /// Task success, 0..1 (correct / submitted).
    pub task_success: f64,
    /// Operational failure rate, 0..1.
    pub failure_rate: f64,
}

/// One profile exactly as written in `profiles.yaml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSpec {
    /// Stable name used in URLs (`/profiles/<name>/…`).
    pub name: String,
    /// Provider name for tables.
    pub display_name: String,
    /// The published figures this profile is fitted to.
    pub seed: SeedFigures,
    /// Time to response headers (capped at half the TTFA), ms.
    pub headers_ms: f64,
    /// Median reasoning tokens before the answer (0: no reasoning unless a quirk forces it).
    pub reasoning_tokens_p50: f64,
    /// Characters per streamed chunk, inclusive range.
    pub chunk_chars: [usize; 2],
    /// Each inter-chunk gap is multiplied by a uniform factor in 1 ± this.
    pub gap_jitter: f64,
    /// Of the answers that are not correct, the share that is malformed (the rest are wrong).
    pub malformed_share: f64,
    /// Sends a usage-only final chunk when the request sets `stream_options.include_usage`.
    pub usage_chunk_when_requested: bool,
    /// Quirk names this provider always shows.
    pub quirks: Vec<String>,
    /// Failure kind (a fault quirk name) → relative weight.
    pub failures: BTreeMap<String, f64>,
    /// The prefix-cache model, used only on a route that asks for it (`?prefix_cache=on`).
    pub prefix_cache: PrefixCacheSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    profiles: Vec<ProfileSpec>,
}

/// A profile with its fitted model, ready to draw from.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The profile as written.
    pub spec: ProfileSpec,
    /// Quirks this profile always shows.
    pub quirks: Vec<Quirk>,
    /// Failure kinds with weights normalised to sum to 1.
    pub failures: Vec<(Quirk, f64)>,
    /// TTFA lognormal: ln of the median.
    pub ttfa_mu: f64,
    /// TTFA lognormal: sigma, fitted so TTFA p99 + median answer time ≈ E2E p99.
    pub ttfa_sigma: f64,
    /// Tokens/s lognormal: ln of the median.
    pub tps_mu: f64,
    /// Tokens/s lognormal: sigma, fitted so the 5th percentile equals the p95 floor.
    pub tps_sigma: f64,
    /// Probability an answer is correct given the request did not fail.
    pub p_correct: f64,
}

impl Profile {
    /// Fits the model of one profile spec, checking every field.
    fn fit(spec: ProfileSpec) -> Result<Profile, SimError> {
        let bad = |field: &str, why: String| SimError::Profile {
            profile: spec.name.clone(),
            field: field.to_string(),
            message: why,
        };
        let s = &spec.seed;
        for (field, value) in [
            ("seed.ttfa_p50_ms", s.ttfa_p50_ms),
            ("seed.tokens_per_s_p50", s.tokens_per_s_p50),
            ("seed.tokens_per_s_p95_floor", s.tokens_per_s_p95_floor),
        ] {
            if !(value > 0.0 && value.is_finite()) {
                return Err(bad(field, format!("{value} must be positive")));
            }
        }
        if s.tokens_per_s_p95_floor > s.tokens_per_s_p50 || s.e2e_p99_ms < s.e2e_p50_ms {
            return Err(bad(
                "seed",
                "a floor above its median or p99 below p50".into(),
            ));
        }
        if !(0.0..1.0).contains(&s.failure_rate) || !(0.0..=1.0).contains(&s.task_success) {
            return Err(bad("seed", "rates must lie in [0, 1)".into()));
        }
        let [lo, hi] = spec.chunk_chars;
        if lo == 0 || hi < lo {
            return Err(bad(
                "chunk_chars",
                format!("[{lo}, {hi}] is not a range ≥ 1"),
            ));
        }
        let cache = spec.prefix_cache;
        if cache.block_tokens == 0 || cache.capacity_tokens < u64::from(cache.block_tokens) {
            return Err(bad(
                "prefix_cache",
                format!(
                    "block_tokens {} must be at least 1 and capacity_tokens {} at least one block",
                    cache.block_tokens, cache.capacity_tokens
                ),
            ));
        }
        for (field, value) in [
            ("prefix_cache.ttl_s", cache.ttl_s),
            (
                "prefix_cache.prefill_ms_per_token",
                cache.prefill_ms_per_token,
            ),
        ] {
            if !(value >= 0.0 && value.is_finite()) {
                return Err(bad(field, format!("{value} must be a finite number ≥ 0")));
            }
        }
        let quirks = spec
            .quirks
            .iter()
            .map(|name| {
                Quirk::from_name(name)
                    .ok_or_else(|| bad("quirks", format!("unknown quirk {name:?}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let total: f64 = spec.failures.values().sum();
        let mut failures = Vec::new();
        for (name, weight) in &spec.failures {
            let quirk = quirk::Quirk::from_name(name)
                .filter(|q| q.is_fault())
                .ok_or_else(|| bad("failures", format!("{name:?} is not a fault quirk")))?;
            failures.push((quirk, weight / total));
        }
        if s.failure_rate > 0.0 && failures.is_empty() {
            return Err(bad("failures", "a failure rate needs failure kinds".into()));
        }
        let answer_ms = (s.e2e_p50_ms - s.ttfa_p50_ms).max(0.0);
        let ttfa_p99 = (s.e2e_p99_ms - answer_ms).max(s.ttfa_p50_ms);
        let p_correct = (s.task_success / (1.0 - s.failure_rate)).min(1.0);
        Ok(Profile {
            ttfa_mu: s.ttfa_p50_ms.ln(),
            ttfa_sigma: (ttfa_p99 / s.ttfa_p50_ms).ln() / Z_P99,
            tps_mu: s.tokens_per_s_p50.ln(),
            tps_sigma: (s.tokens_per_s_p50 / s.tokens_per_s_p95_floor).ln() / Z_P95,
            p_correct,
            quirks,
            failures,
            spec,
        })
    }

    /// The profile's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// Every profile in table order, parsed and fitted once.
pub fn profiles() -> Result<&'static [Profile], SimError> {
    static TABLE: OnceLock<Result<Vec<Profile>, Arc<TableError>>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let file: ProfileFile =
            serde_saphyr::from_str(PROFILES_YAML).map_err(|e| Arc::new(TableError::Yaml(e)))?;
        file.profiles
            .into_iter()
            .map(|spec| Profile::fit(spec).map_err(|e| Arc::new(TableError::Profile(Box::new(e)))))
            .collect()
    });
    table
        .as_ref()
        .map(Vec::as_slice)
        .map_err(|error| SimError::Table(Arc::clone(error)))
}

/// The profile with this name, or an error listing the known names.
pub fn find(name: &str) -> Result<&'static Profile, SimError> {
    let all = profiles()?;
    all.iter()
        .find(|p| p.name() == name)
        .ok_or_else(|| SimError::UnknownProfile {
            name: name.to_string(),
            known: all
                .iter()
                .map(|p| p.name().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_parses_with_ten_seed_providers_and_plain() {
        let names: Vec<&str> = profiles().unwrap().iter().map(Profile::name).collect();
        assert_eq!(
            names,
            [
                "baseten",
                "deepinfra",
                "fireworks",
                "modal",
                "nebius",
                "novita",
                "parasail",
                "telnyx",
                "together",
                "zai",
                "plain"
            ]
        );
    }

    #[test]
    fn fit_matches_hand_computation_for_nebius() {
        let p = find("nebius").unwrap();
        // answer ≈ 1450.7 − 1144.3 = 306.4; TTFA p99 ≈ 14970.4 − 306.4 = 14664.0;
        // sigma = ln(14664.0 / 1144.3) / 2.3263 = ln(12.8148) / 2.3263 = 2.55062 / 2.3263 = 1.09643.
        assert!((p.ttfa_sigma - 1.09643).abs() < 1e-4, "{}", p.ttfa_sigma);
        // tps sigma = ln(269.3 / 78.8) / 1.6449 = 1.22891 / 1.6449 = 0.74712.
        assert!((p.tps_sigma - 0.74712).abs() < 1e-4, "{}", p.tps_sigma);
        // p_correct = 0.8483 / 0.8517 = 0.996008.
        assert!((p.p_correct - 0.996008).abs() < 1e-5, "{}", p.p_correct);
        let weights: f64 = p.failures.iter().map(|(_, w)| w).sum();
        assert!((weights - 1.0).abs() < 1e-12);
    }

    #[test]
    fn unknown_profile_names_the_known_ones() {
        let err = find("acme").unwrap_err().to_string();
        assert!(
            err.contains("\"acme\"") && err.contains("zai, plain"),
            "{err}"
        );
    }
}
