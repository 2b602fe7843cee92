//! Metrics (METHODOLOGY §6): per (provider, family) and pooled rows, compatibility,
//! completeness, eligibility and ranking — the content of `artifacts/metrics.json`.
//!
//! Rows are keyed by lane; with one region a lane is a provider. Harness records are never
//! submitted: they are counted apart (`harness_failures`) and leave their request missing, so a
//! lane with an unresolved harness failure is incomplete.

pub mod observe;
pub mod summary;
/// The plan as a report reads it is the report kit's.
pub use openbench_report_kit::plan_view;

pub use observe::{LaneKey, LaneTable, Observation};
pub use summary::{FailureBreakdown, Prices, Summary, UsageSummary};

use openbench_common::rundir::{LockedProvider, RunLock};
use openbench_tasks::scoring::Family;
pub use plan_view::PlanView;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Version of the metrics file layout.
pub const METRICS_VERSION: u32 = 1;
/// Eligibility: minimum pooled task success.
pub const MIN_TASK_SUCCESS_RATE: f64 = 0.95;
/// Eligibility: maximum pooled operational failure rate.
pub const MAX_FAILURE_RATE: f64 = 0.01;

/// The eligibility thresholds, written into the metrics for readers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// Minimum task success.
    pub min_task_success_rate: f64,
    /// Maximum failure rate.
    pub max_failure_rate: f64,
}

/// Response-model echo check of one lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compatibility {
    /// True when every completed response echoed the requested model.
    pub configuration_compatible: bool,
    /// Completed responses checked.
    pub checked_responses: u64,
    /// Completed responses whose model differed (or was absent).
    pub mismatched_responses: u64,
    /// Echoed model → count (`(none)` when absent).
    pub observed_models: BTreeMap<String, u64>,
}

/// Everything measured about one lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderMetrics {
    /// Provider key.
    pub provider: String,
    /// Lane label.
    pub lane: String,
    /// Region label.
    pub region: String,
    /// Name shown in reports (with the region when there are several).
    pub display_name: String,
    /// Model id requested.
    pub requested_model: String,
    /// Pooled row (all families).
    pub pooled: Summary,
    /// One row per family, in round order.
    pub families: Vec<Summary>,
    /// Model echo check.
    pub compatibility: Compatibility,
    /// Planned requests (null without a plan).
    pub planned_requests: Option<u64>,
    /// Planned requests without a submitted record.
    pub missing_requests: u64,
    /// Every planned request has a submitted record.
    pub complete: bool,
    /// Requests whose only record is a harness failure (not submitted, not the provider's fault).
    pub harness_failures: u64,
    /// Meets every eligibility rule.
    pub eligible: bool,
    /// Why not, one line per rule broken.
    pub ineligibility_reasons: Vec<String>,
    /// 1-based rank by pooled E2E p99 among eligible lanes.
    pub rank: Option<u32>,
}

/// One line of the ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankEntry {
    /// 1-based rank.
    pub rank: u32,
    /// Lane label.
    pub lane: String,
    /// Display name.
    pub display_name: String,
    /// Pooled E2E p99, ms.
    pub e2e_latency_p99: f64,
}

/// `artifacts/metrics.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    /// [`METRICS_VERSION`].
    pub metrics_version: u32,
    /// Run id.
    pub run_id: String,
    /// Workflow.
    pub workflow: String,
    /// Benchmark slug.
    pub benchmark_slug: String,
    /// Model label.
    pub model_label: String,
    /// Dataset release hash.
    pub dataset_release_hash: String,
    /// Records file read (`raw/results.jsonl`).
    pub records_file: String,
    /// Families in round order.
    pub families: Vec<String>,
    /// Rounds in the plan (or seen in records without a plan).
    pub rounds: u64,
    /// Final records read (submitted + unresolved harness).
    pub final_records: u64,
    /// Eligibility thresholds.
    pub thresholds: Thresholds,
    /// Lanes, alphabetical by display name.
    pub providers: Vec<ProviderMetrics>,
    /// Eligible lanes by pooled E2E p99.
    pub ranking: Vec<RankEntry>,
    /// How far the run's own measurement can be trusted (docs/validity.md); absent for a run
    /// made before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<openbench_common::validity::assess::ValiditySection>,
    /// A repeated run's headline figures per repeat and across repeats (`plans.repeats`);
    /// absent for a run made once, so its file keeps its bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<crate::repeats::PairedRepeats>,
}

/// What metrics are computed from.
pub struct MetricsInput<'a> {
    /// The run lock.
    pub lock: &'a RunLock,
    /// Interned lanes of the observations.
    pub lanes: &'a LaneTable,
    /// Final records, in a deterministic order.
    pub observations: &'a [Observation],
    /// The plan, when present.
    pub plan: Option<&'a PlanView>,
    /// Records file name.
    pub records_file: &'a str,
}

/// Lanes to report: the plan's (base order), else the lock's providers × regions, plus any seen
/// only in records.
pub fn all_lanes(lock: &RunLock, plan: Option<&PlanView>, seen: &LaneTable) -> Vec<LaneKey> {
    let mut out: Vec<LaneKey> = match plan {
        Some(p) => p
            .lanes
            .iter()
            .map(|l| LaneKey {
                lane: l.label.clone(),
                provider: l.provider.clone(),
                region: l.region.clone(),
            })
            .collect(),
        None => {
            let regions = if lock.regions.is_empty() {
                vec![String::new()]
            } else {
                lock.regions.clone()
            };
            let several = regions.len() > 1;
            lock.providers
                .iter()
                .flat_map(|p| {
                    regions.iter().map(move |r| LaneKey {
                        lane: if several {
                            format!("{}@{r}", p.key)
                        } else {
                            p.key.clone()
                        },
                        provider: p.key.clone(),
                        region: r.clone(),
                    })
                })
                .collect()
        }
    };
    for lane in &seen.lanes {
        if !out.iter().any(|l| l.lane == lane.lane) {
            out.push(lane.clone());
        }
    }
    out
}

/// Computes the metrics.
pub fn compute(input: &MetricsInput<'_>) -> RunMetrics {
    let lock = input.lock;
    let families: Vec<Family> = lock
        .families
        .iter()
        .filter_map(|f| Family::parse(f))
        .collect();
    let submitted_ids: HashSet<&str> = input
        .observations
        .iter()
        .filter(|o| !o.is_harness())
        .map(|o| o.request_id.as_str())
        .collect();
    let lanes = all_lanes(lock, input.plan, input.lanes);
    // One pass each over the records and the plan, not one per lane: at 1,000 lanes a scan per
    // lane is 10⁹ steps.
    let mut by_lane: Vec<Vec<&Observation>> = vec![Vec::new(); input.lanes.lanes.len()];
    for o in input.observations {
        if let Some(bucket) = by_lane.get_mut(o.lane as usize) {
            bucket.push(o);
        }
    }
    let lane_index = input.lanes.index_by_label();
    let planned: Option<HashMap<&str, Planned>> = input.plan.map(|plan| {
        let mut counts: HashMap<&str, Planned> = HashMap::new();
        for req in plan.rounds.iter().flat_map(|r| &r.requests) {
            let count = counts.entry(&*req.lane).or_default();
            count.planned += 1;
            if !submitted_ids.contains(&*req.request_id) {
                count.missing += 1;
            }
        }
        counts
    });
    let several_regions = lanes.iter().any(|l| l.lane != l.provider);
    let mut providers: Vec<ProviderMetrics> = lanes
        .iter()
        .map(|lane| {
            let locked = lock.providers.iter().find(|p| p.key == lane.provider);
            let name = locked.map_or(lane.provider.clone(), |p| p.display_name.clone());
            let display_name = if several_regions {
                format!("{name} ({})", lane.region)
            } else {
                name
            };
            let requested_model = locked.map(|p| p.model.clone()).unwrap_or_default();
            let prices = locked.and_then(LockedProvider::price);
            let mine = lane_index
                .get(lane.lane.as_str())
                .and_then(|i| by_lane.get(*i))
                .map_or(&[][..], Vec::as_slice);
            lane_metrics(LaneInput {
                lane,
                display_name,
                requested_model,
                prices,
                families: &families,
                obs: mine,
                planned: planned
                    .as_ref()
                    .map(|p| p.get(lane.lane.as_str()).copied().unwrap_or_default()),
            })
        })
        .collect();
    providers.sort_by(|a, b| {
        (a.display_name.to_lowercase(), &a.lane).cmp(&(b.display_name.to_lowercase(), &b.lane))
    });
    let ranking = rank(&mut providers);
    let repeats = input.plan.and_then(|plan| {
        crate::repeats::of_run(plan, input.observations, &providers, |label| {
            lane_index.get(label).map(|i| *i as u32)
        })
    });
    let rounds = match input.plan {
        Some(p) => p.rounds.len() as u64,
        None => {
            let set: HashSet<u64> = input.observations.iter().map(|o| o.round_index).collect();
            set.len() as u64
        }
    };
    RunMetrics {
        metrics_version: METRICS_VERSION,
        run_id: lock.run_id.clone(),
        workflow: lock.workflow.clone(),
        benchmark_slug: lock.benchmark_slug.clone(),
        model_label: lock.model_label.clone(),
        dataset_release_hash: lock.dataset_release_hash.clone(),
        records_file: input.records_file.to_string(),
        families: lock.families.clone(),
        rounds,
        final_records: input.observations.len() as u64,
        thresholds: Thresholds {
            min_task_success_rate: MIN_TASK_SUCCESS_RATE,
            max_failure_rate: MAX_FAILURE_RATE,
        },
        providers,
        ranking,
        validity: None,
        repeats,
    }
}

struct LaneInput<'a> {
    lane: &'a LaneKey,
    display_name: String,
    requested_model: String,
    prices: Option<Prices>,
    families: &'a [Family],
    obs: &'a [&'a Observation],
    /// The lane's planned and missing requests; `None` without a plan.
    planned: Option<Planned>,
}

/// Requests a plan gives one lane, and how many of them have no submitted record.
#[derive(Debug, Clone, Copy, Default)]
struct Planned {
    planned: u64,
    missing: u64,
}

fn lane_metrics(input: LaneInput<'_>) -> ProviderMetrics {
    let submitted: Vec<&Observation> = input
        .obs
        .iter()
        .copied()
        .filter(|o| !o.is_harness())
        .collect();
    let harness_failures = input.obs.len() as u64 - submitted.len() as u64;
    let family_rows: Vec<Summary> = input
        .families
        .iter()
        .map(|f| {
            let cell: Vec<&Observation> = submitted
                .iter()
                .copied()
                .filter(|o| o.family == *f)
                .collect();
            summary::summarize(f.as_str(), &cell, Some(*f), input.prices)
        })
        .collect();
    let mut pooled = summary::summarize("pooled", &submitted, None, input.prices);
    pooled.balanced = Some(
        family_rows
            .windows(2)
            .all(|w| w[0].submitted_count == w[1].submitted_count),
    );
    let compatibility = compatibility(&submitted, &input.requested_model);
    let (planned_requests, missing_requests) = match input.planned {
        Some(p) => (Some(p.planned), p.missing),
        None => (None, 0),
    };
    let complete = planned_requests.is_some_and(|p| p > 0) && missing_requests == 0;
    let mut reasons = Vec::new();
    match pooled.task_success_rate {
        None => reasons.push("no submitted requests".to_string()),
        Some(r) if r < MIN_TASK_SUCCESS_RATE => {
            reasons.push(format!("task success {:.2}% is below 95%", r * 100.0))
        }
        Some(_) => {}
    }
    if let Some(r) = pooled.failure_rate.filter(|r| *r > MAX_FAILURE_RATE) {
        reasons.push(format!(
            "operational failure rate {:.2}% is above 1%",
            r * 100.0
        ));
    }
    if !compatibility.configuration_compatible {
        reasons.push(format!(
            "configuration incompatible: {} of {} completed responses did not echo {:?}",
            compatibility.mismatched_responses,
            compatibility.checked_responses,
            input.requested_model
        ));
    }
    match planned_requests {
        None => reasons.push("incomplete: no plan to check against".to_string()),
        Some(p) if !complete => reasons.push(format!(
            "incomplete: {missing_requests} of {p} planned requests have no record"
        )),
        Some(_) => {}
    }
    if reasons.is_empty() && pooled.e2e_latency_p99.is_none() {
        reasons.push("no E2E latency population".to_string());
    }
    ProviderMetrics {
        provider: input.lane.provider.clone(),
        lane: input.lane.lane.clone(),
        region: input.lane.region.clone(),
        display_name: input.display_name,
        requested_model: input.requested_model,
        pooled,
        families: family_rows,
        compatibility,
        planned_requests,
        missing_requests,
        complete,
        harness_failures,
        eligible: reasons.is_empty(),
        ineligibility_reasons: reasons,
        rank: None,
    }
}

fn compatibility(submitted: &[&Observation], requested: &str) -> Compatibility {
    let mut observed_models = BTreeMap::new();
    let mut checked = 0u64;
    let mut mismatched = 0u64;
    for o in submitted.iter().filter(|o| o.completed) {
        checked += 1;
        let model = match &o.model_mismatch {
            None => requested.to_string(),
            Some(m) => {
                mismatched += 1;
                if m.is_empty() {
                    "(none)".to_string()
                } else {
                    m.clone()
                }
            }
        };
        *observed_models.entry(model).or_insert(0) += 1;
    }
    Compatibility {
        configuration_compatible: mismatched == 0,
        checked_responses: checked,
        mismatched_responses: mismatched,
        observed_models,
    }
}

/// Ranks eligible lanes by pooled E2E p99 (ties by display name), setting `rank` in place.
pub fn rank(providers: &mut [ProviderMetrics]) -> Vec<RankEntry> {
    let mut eligible: Vec<(f64, String, usize)> = providers
        .iter()
        .enumerate()
        .filter(|(_, p)| p.eligible)
        .filter_map(|(i, p)| Some((p.pooled.e2e_latency_p99?, p.display_name.clone(), i)))
        .collect();
    eligible.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    eligible
        .into_iter()
        .enumerate()
        .map(|(pos, (p99, _, i))| {
            let rank = pos as u32 + 1;
            providers[i].rank = Some(rank);
            RankEntry {
                rank,
                lane: providers[i].lane.clone(),
                display_name: providers[i].display_name.clone(),
                e2e_latency_p99: p99,
            }
        })
        .collect()
}
