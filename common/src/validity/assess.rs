//! The thresholds every run's validity section is judged by, and the section itself. Each
//! threshold's reason is in docs/validity.md; a run that breaks one says so at the top of both
//! reports and in the results store, and `compare`/`history` treat differences smaller than a
//! run's own measured error as no difference.

use super::ks::KsFit;
use super::{RuntimeHealth, SittingHealth};
use crate::rundir::RegionLink;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Send lag p99 above this (ms) fails: the planned arrival process was not what was delivered.
pub const SEND_LAG_P99_MS: f64 = 10.0;
/// Launch skew p99 of paired rounds above this (ms) fails: lanes of one round did not start
/// together, so the pairing no longer cancels the moment.
pub const LAUNCH_SKEW_P99_MS: f64 = 10.0;
/// Canary lateness p99 above this (ms) fails: the runtime was often late to its own timers.
pub const STALL_P99_MS: f64 = 5.0;
/// One canary stall above this (ms) fails: the class of the 154 ms incident of issue 41.
pub const STALL_MAX_MS: f64 = 100.0;
/// Process CPU over its worst minute above this share of the cores fails (AIPerf warns at 85 %).
pub const CPU_WORST_MINUTE_SHARE: f64 = 0.85;
/// The machine's 1-minute load average above this many runnable threads per core is noted (never
/// a failure: the machine's load says our threads may have waited; the canaries say whether they
/// did).
pub const LOAD_PER_CORE: f64 = 1.0;
/// A Poisson step whose inter-arrival KS p-value is below this fails.
pub const KS_P_MIN: f64 = 0.001;
/// A region whose clock-offset bound exceeds this (ms) fails: cross-host times lose precision.
pub const CLOCK_OFFSET_ERROR_MS: f64 = 5.0;
/// A lane whose usage-vs-o200k output disagreement exceeds this share is noted (never a failure:
/// a provider's own tokenizer and hidden reasoning tokens differ from o200k by design, and token
/// rates are reported in o200k whatever usage says).
pub const TOKEN_DISAGREEMENT_MAX: f64 = 0.10;
/// Harness failures (our machinery's, never the provider's) above this count fail.
pub const HARNESS_FAILURES_MAX: usize = 0;

/// Which part of a latency distribution a comparison is about: its median or its tail (p95,
/// p99), each held to the measured error at the same quantile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantile {
    /// A median (p50) figure.
    Median,
    /// A tail figure (p95, p99).
    Tail,
}

/// One item of the section: what was measured, where, against which threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// What is checked (`send lag p99`, `canary max`…).
    pub item: String,
    /// Where (`coordinator`, `probe west`, `step 2 · lane a`, `run`).
    pub scope: String,
    /// The measured value.
    pub value: f64,
    /// The threshold it is held to.
    pub threshold: f64,
    /// The value's unit (`ms`, `CPU/s`, `p`, `count`, `share`).
    pub unit: String,
    /// Whether the value is on the right side of the threshold (always true for an
    /// informational check).
    pub passed: bool,
    /// Shown beside the checks but never failing the run: a figure about the machine or the
    /// provider, not about our timing (docs/validity.md, "Shown, never failing").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub informational: bool,
}

impl Check {
    /// A check that passes when `value ≤ threshold`.
    pub fn at_most(item: &str, scope: &str, value: f64, threshold: f64, unit: &str) -> Check {
        Check {
            item: item.into(),
            scope: scope.into(),
            value,
            threshold,
            unit: unit.into(),
            passed: value <= threshold,
            informational: false,
        }
    }

    /// An informational figure with its reference value: shown, never failing the run.
    pub fn noted(item: &str, scope: &str, value: f64, reference: f64, unit: &str) -> Check {
        Check {
            passed: true,
            informational: true,
            ..Check::at_most(item, scope, value, reference, unit)
        }
    }

    /// The verdict a report prints: `pass`, `FAIL`, or `noted` for an informational figure
    /// past its reference value.
    pub fn verdict(&self) -> &'static str {
        match (self.informational, self.passed) {
            (true, _) if self.value > self.threshold => "noted",
            (_, true) => "pass",
            (_, false) => "FAIL",
        }
    }

    /// A check that passes when `value ≥ threshold`.
    pub fn at_least(item: &str, scope: &str, value: f64, threshold: f64, unit: &str) -> Check {
        Check {
            passed: value >= threshold,
            ..Check::at_most(item, scope, value, threshold, unit)
        }
    }

    /// A yes/no check (value 1 = met).
    pub fn met(item: &str, scope: &str, met: bool) -> Check {
        Check::at_least(item, scope, if met { 1.0 } else { 0.0 }, 1.0, "met")
    }
}

/// p50/p99/max of a population (nearest rank), ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Values.
    pub n: usize,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; `None` when empty.
    pub fn of(values: &[f64]) -> Option<Spread> {
        use crate::stats::nearest_rank;
        Some(Spread {
            n: values.len(),
            p50: nearest_rank(values, 0.5)?,
            p99: nearest_rank(values, 0.99)?,
            max: nearest_rank(values, 1.0)?,
        })
    }
}

/// One runtime's canary, named by where it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopedRuntime {
    /// `coordinator` or `probe REGION`, with the sitting.
    pub scope: String,
    /// What its canary measured.
    pub health: RuntimeHealth,
}

/// A run's validity section: the figures and every check, in the metrics JSON and both reports.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ValiditySection {
    /// Send lag (actual − scheduled) of every timed release, ms.
    pub send_lag_ms: Option<Spread>,
    /// Launch skew of paired rounds (spread of a round's sends), ms.
    pub launch_skew_ms: Option<Spread>,
    /// Probe replica (`eu#1`) → the send lag of the releases it sent, ms: each replica times
    /// its share on its own clock, so each is held to the threshold on its own (docs/load.md,
    /// "Probe replicas"). Empty without replicas.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replica_send_lag_ms: BTreeMap<String, Spread>,
    /// Every runtime canary of every sitting.
    pub runtimes: Vec<ScopedRuntime>,
    /// Region → measured clock offset and its bound.
    pub clock: BTreeMap<String, RegionLink>,
    /// Poisson fits, by scope.
    pub arrivals: BTreeMap<String, KsFit>,
    /// Harness failures of the run.
    pub harness_failures: usize,
    /// Probe replica (`eu#1`) → the harness failures of the requests it was to send (a replica
    /// that died mid-run: docs/faults.md); empty when none failed or without replicas.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replica_harness_failures: BTreeMap<String, usize>,
    /// Every check, in the order above.
    pub checks: Vec<Check>,
}

impl ValiditySection {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    /// The checks that failed.
    pub fn failures(&self) -> Vec<&Check> {
        self.checks.iter().filter(|c| !c.passed).collect()
    }

    /// The run's own timing error, ms: the larger of its send-lag p99, its launch-skew p99 and
    /// every canary's p99. A difference between two runs smaller than the larger of their
    /// errors is not a difference `compare` may call.
    pub fn measured_error_ms(&self) -> f64 {
        self.measured_error_ms_at(Quantile::Tail)
    }

    /// The run's measured timing error at `quantile`: the largest median (for a median's
    /// comparison) or p99 (for a tail's) of the send lag, the launch skew and every canary's
    /// lateness. A median latency is moved by the typical error, not by the rare stall that
    /// sets the p99, so each is held to its own.
    pub fn measured_error_ms_at(&self, quantile: Quantile) -> f64 {
        let pick = |p50: f64, p99: f64| match quantile {
            Quantile::Median => p50,
            Quantile::Tail => p99,
        };
        let canaries = self
            .runtimes
            .iter()
            .map(|r| pick(r.health.lateness_ms_p50, r.health.lateness_ms_p99));
        let spreads = [self.send_lag_ms, self.launch_skew_ms]
            .into_iter()
            .flatten()
            .map(|s| pick(s.p50, s.p99));
        canaries.chain(spreads).fold(0.0, f64::max)
    }

    /// Adds the send-lag figure and check.
    pub fn with_send_lag(mut self, lags_ms: &[f64]) -> Self {
        self.send_lag_ms = Spread::of(lags_ms);
        if let Some(s) = self.send_lag_ms {
            self.checks.push(Check::at_most(
                "send lag p99",
                "run",
                s.p99,
                SEND_LAG_P99_MS,
                "ms",
            ));
        }
        self
    }

    /// Adds one probe replica's send-lag figure and check (scope `replica eu#1`).
    pub fn with_replica_send_lag(mut self, replica: &str, lags_ms: &[f64]) -> Self {
        if let Some(s) = Spread::of(lags_ms) {
            let scope = format!("replica {replica}");
            let check = Check::at_most("send lag p99", &scope, s.p99, SEND_LAG_P99_MS, "ms");
            self.checks.push(check);
            self.replica_send_lag_ms.insert(replica.to_string(), s);
        }
        self
    }

    /// Adds the launch-skew figure and check.
    pub fn with_launch_skew(mut self, skews_ms: &[f64]) -> Self {
        self.launch_skew_ms = Spread::of(skews_ms);
        if let Some(s) = self.launch_skew_ms {
            let check = Check::at_most("launch skew p99", "run", s.p99, LAUNCH_SKEW_P99_MS, "ms");
            self.checks.push(check);
        }
        self
    }

    /// Adds every sitting's canaries and their stall, CPU and load checks.
    pub fn with_runtimes(mut self, sittings: &[SittingHealth]) -> Self {
        for sitting in sittings {
            let probes = sitting.probes.iter().flat_map(|(region, runtimes)| {
                runtimes
                    .iter()
                    .map(move |h| (format!("{} {region}", h.runtime), h))
            });
            let coordinator = sitting.coordinator.iter().map(|h| (h.runtime.clone(), h));
            for (scope, health) in coordinator.chain(probes) {
                let scope = format!("{scope} · sitting {}", sitting.session);
                self.checks.extend(runtime_checks(&scope, health));
                self.runtimes.push(ScopedRuntime {
                    scope,
                    health: health.clone(),
                });
            }
        }
        self
    }

    /// Adds each region's (and each probe replica's, `replica eu#1`) clock offset and its bound
    /// check (in-process probes share the clock and are still shown, with their near-zero
    /// bound).
    pub fn with_clock(mut self, links: &BTreeMap<String, RegionLink>) -> Self {
        for (key, link) in links {
            let scope = if key.contains(crate::spec::REPLICA_SEPARATOR) {
                format!("replica {key}")
            } else {
                format!("region {key}")
            };
            self.checks.push(Check::at_most(
                "clock offset bound",
                &scope,
                link.clock_offset_error_ms,
                CLOCK_OFFSET_ERROR_MS,
                "ms",
            ));
        }
        self.clock = links.clone();
        self
    }

    /// Adds a Poisson fit of one step or lane's inter-arrival times.
    pub fn with_arrivals(mut self, scope: &str, fit: KsFit) -> Self {
        let check = Check::at_least("Poisson fit (KS p)", scope, fit.p_value, KS_P_MIN, "p");
        self.checks.push(check);
        self.arrivals.insert(scope.to_string(), fit);
        self
    }

    /// Adds the run's harness failure count and its check.
    pub fn with_harness_failures(mut self, count: usize) -> Self {
        self.harness_failures = count;
        let limit = HARNESS_FAILURES_MAX as f64;
        let check = Check::at_most("harness failures", "run", count as f64, limit, "count");
        self.checks.push(check);
        self
    }

    /// Adds one probe replica's harness failures and their check (scope `replica eu#1`), so
    /// the section names the replica that lost requests, not only the run's count.
    pub fn with_replica_harness_failures(mut self, replica: &str, count: usize) -> Self {
        let scope = format!("replica {replica}");
        let limit = HARNESS_FAILURES_MAX as f64;
        let check = Check::at_most("harness failures", &scope, count as f64, limit, "count");
        self.checks.push(check);
        self.replica_harness_failures
            .insert(replica.to_string(), count);
        self
    }

    /// Adds one lane's usage-vs-o200k output-token disagreement (a share, sign ignored).
    pub fn with_token_disagreement(mut self, lane: &str, share: f64) -> Self {
        let scope = format!("lane {lane}");
        let check = Check::noted(
            "usage vs o200k tokens",
            &scope,
            share.abs(),
            TOKEN_DISAGREEMENT_MAX,
            "share",
        );
        self.checks.push(check);
        self
    }

    /// Adds any other check (a workflow's own, such as delivered load against its tolerance).
    pub fn with_check(mut self, check: Check) -> Self {
        self.checks.push(check);
        self
    }
}

/// The stall, CPU and load checks of one canary.
fn runtime_checks(scope: &str, health: &RuntimeHealth) -> Vec<Check> {
    let mut checks = vec![
        Check::at_most(
            "canary p99",
            scope,
            health.lateness_ms_p99,
            STALL_P99_MS,
            "ms",
        ),
        Check::at_most(
            "canary max",
            scope,
            health.lateness_ms_max,
            STALL_MAX_MS,
            "ms",
        ),
    ];
    if let Some(cpu) = &health.cpu {
        let cores = f64::from(cpu.cores.max(1));
        // One canary per process is enough for its CPU: a link runtime shares its process's.
        if !health.runtime.ends_with("-link") {
            checks.push(Check::at_most(
                "CPU worst minute",
                scope,
                cpu.worst_minute_cpu_per_wall,
                CPU_WORST_MINUTE_SHARE * cores,
                "CPU/s",
            ));
            if let Some(load) = cpu.load_average_max {
                let limit = LOAD_PER_CORE * cores;
                checks.push(Check::noted(
                    "load average max",
                    scope,
                    load,
                    limit,
                    "threads",
                ));
            }
        }
    }
    checks
}

#[cfg(test)]
#[path = "assess_tests.rs"]
mod tests;
