//! A synthetic run directory for timing `report`: a run lock, a full plan and `results.jsonl`
//! with `lanes` × `rounds` completed records, plus the gold they are scored against. Seeded and
//! deterministic (same seed, byte-identical files), written streaming so that synthesising a
//! million records costs a few megabytes. Used by `openbench-inference bench analysis` and the
//! `report_scale` test; never by a real run.

use crate::dataset::generate::rng::Rng;
use crate::report::GoldTable;
use crate::scoring::GoldRef;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir::{self as layout, LockedProvider, RunLock};
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The two families the synthetic records use (contract gold is not needed to time the pipeline).
const FAMILIES: [&str; 2] = ["meeting-notes-lookup", "ticket-triage"];

/// Distinct items per family: rounds cycle through them.
const ITEMS_PER_FAMILY: u64 = 200;

/// What to synthesise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntheticRun {
    /// Records wanted; rounded down to whole rounds (at least one round).
    pub records: u64,
    /// Lanes (providers), at least one.
    pub lanes: usize,
    /// Seed of the latency jitter.
    pub seed: u64,
}

/// A known difference planted in one lane of a synthetic run, so a comparison of two runs has a
/// truth to be checked against: every TTFO, TTFA and E2E of the lane is `latency_shift_ms` later,
/// and every round whose index is a multiple of `fail_every` (when non-zero) times out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Perturbation {
    /// Index of the lane (`p<lane>`) changed.
    pub lane: usize,
    /// Added to the lane's TTFO, TTFA and E2E, ms.
    pub latency_shift_ms: f64,
    /// Rounds `r` with `r % fail_every == 0` time out on that lane; 0 for none.
    pub fail_every: u64,
}

/// What was written: the lock and gold to report with, and the exact counts.
#[derive(Debug, Clone)]
pub struct SyntheticOutput {
    /// The run lock (also written to `run-lock.json`).
    pub lock: RunLock,
    /// Gold for every item the records name.
    pub gold: GoldTable,
    /// Rounds written.
    pub rounds: u64,
    /// Records written (`rounds` × lanes).
    pub records: u64,
}

/// A file of the synthetic run could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct SyntheticError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub source: std::io::Error,
}

/// Writes the synthetic run into `run_dir` (created if needed) and returns its lock and gold.
pub fn write_run(run_dir: &Path, spec: &SyntheticRun) -> Result<SyntheticOutput, SyntheticError> {
    write_perturbed_run(run_dir, spec, &[])
}

/// [`write_run`] with known differences planted in some lanes (see [`Perturbation`]).
pub fn write_perturbed_run(
    run_dir: &Path,
    spec: &SyntheticRun,
    perturbations: &[Perturbation],
) -> Result<SyntheticOutput, SyntheticError> {
    let lanes = spec.lanes.max(1);
    let rounds = (spec.records / lanes as u64).max(1);
    let providers: Vec<String> = (0..lanes).map(|i| format!("p{i}")).collect();
    for dir in ["raw", "artifacts"] {
        let path = run_dir.join(dir);
        std::fs::create_dir_all(&path).map_err(|source| SyntheticError { path, source })?;
    }
    let lock = lock(&providers);
    let lock_path = layout::path(run_dir, layout::RUN_LOCK);
    let bytes = serde_json::to_vec(&lock).map_err(|e| SyntheticError {
        path: lock_path.clone(),
        source: e.into(),
    })?;
    std::fs::write(&lock_path, bytes).map_err(|source| SyntheticError {
        path: lock_path,
        source,
    })?;
    let plan_path = layout::path(run_dir, layout::FULL_PLAN);
    let results_path = layout::path(run_dir, layout::FULL_RESULTS);
    let mut plan = create(&plan_path)?;
    let mut results = create(&results_path)?;
    write_plan_head(&mut plan, &providers).map_err(|source| SyntheticError {
        path: plan_path.clone(),
        source,
    })?;
    for round in 0..rounds {
        let round_spec = RoundSpec {
            providers: &providers,
            round,
            seed: spec.seed,
            perturbations,
        };
        write_round(&mut plan, &mut results, &round_spec).map_err(|e| match e {
            Written::Plan(source) => SyntheticError {
                path: plan_path.clone(),
                source,
            },
            Written::Results(source) => SyntheticError {
                path: results_path.clone(),
                source,
            },
        })?;
    }
    plan.write_all(b"]}")
        .and_then(|()| plan.flush())
        .map_err(|source| SyntheticError {
            path: plan_path,
            source,
        })?;
    results.flush().map_err(|source| SyntheticError {
        path: results_path,
        source,
    })?;
    Ok(SyntheticOutput {
        lock,
        gold: gold(),
        rounds,
        records: rounds * lanes as u64,
    })
}

/// Which of the two streams a write failed on.
enum Written {
    Plan(std::io::Error),
    Results(std::io::Error),
}

fn create(path: &Path) -> Result<BufWriter<std::fs::File>, SyntheticError> {
    std::fs::File::create(path)
        .map(|f| BufWriter::with_capacity(1 << 20, f))
        .map_err(|source| SyntheticError {
            path: path.to_path_buf(),
            source,
        })
}

/// The run id of every synthetic run (its lock and its records).
const RUN_ID: &str = "run-synthetic";

fn lock(providers: &[String]) -> RunLock {
    RunLock::synthetic(
        crate::WORKFLOW_NAME,
        RUN_ID,
        FAMILIES.iter().map(|f| f.to_string()).collect(),
        providers
            .iter()
            .map(|p| LockedProvider {
                key: p.clone(),
                display_name: p.to_uppercase(),
                model: "m".into(),
                input_price_per_mtok: Some(0.5),
                output_price_per_mtok: Some(1.5),
                cached_input_price_per_mtok: None,
                cache_write_input_price_per_mtok: None,
            })
            .collect(),
    )
}

fn gold() -> GoldTable {
    let mut gold = HashMap::new();
    for i in 0..ITEMS_PER_FAMILY {
        gold.insert(
            format!("mn-{i}"),
            GoldRef::MeetingNotes {
                value: format!("v{i}"),
                aliases: vec![],
            },
        );
        gold.insert(
            format!("tt-{i}"),
            GoldRef::TicketTriage {
                category: "bug".into(),
                priority: "p1".into(),
            },
        );
    }
    GoldTable(gold)
}

fn write_plan_head(plan: &mut impl Write, providers: &[String]) -> std::io::Result<()> {
    write!(
        plan,
        "{{\"plan_version\":{},\"kind\":\"full\",\"attempt\":0,\"benchmark_slug\":\"synthetic\",\
         \"schedule_version\":\"v1\",\"dataset_release_hash\":\"00\",\"families\":[\"{}\",\"{}\"],\
         \"items_per_family\":{ITEMS_PER_FAMILY},\"lanes\":[",
        layout::PLAN_VERSION,
        FAMILIES[0],
        FAMILIES[1]
    )?;
    for (i, p) in providers.iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        write!(
            plan,
            "{sep}{{\"label\":\"{p}\",\"provider\":\"{p}\",\"region\":\"local\"}}"
        )?;
    }
    plan.write_all(b"],\"rounds\":[")
}

/// What one round is written from.
struct RoundSpec<'a> {
    providers: &'a [String],
    round: u64,
    seed: u64,
    perturbations: &'a [Perturbation],
}

/// One round: its plan entry and one record per lane. Even rounds ask a meeting-notes item
/// (answered right), odd rounds a ticket-triage item (answered with the wrong priority).
fn write_round(
    plan: &mut impl Write,
    results: &mut impl Write,
    spec: &RoundSpec<'_>,
) -> Result<(), Written> {
    let (providers, round, seed) = (spec.providers, spec.round, spec.seed);
    let item_number = round % ITEMS_PER_FAMILY;
    let (family, item, answer) = if round.is_multiple_of(2) {
        (
            FAMILIES[0],
            format!("mn-{item_number}"),
            format!("{{\"answer\":\"v{item_number}\"}}"),
        )
    } else {
        (
            FAMILIES[1],
            format!("tt-{item_number}"),
            "{\"category\":\"bug\",\"priority\":\"p2\"}".to_string(),
        )
    };
    let sep = if round > 0 { "," } else { "" };
    write!(
        plan,
        "{sep}{{\"round_index\":{round},\"round_id\":\"round-{round}\",\"task_family\":\"{family}\",\
         \"item_id\":\"{item}\",\"item_hash\":\"00\",\"requests\":["
    )
    .map_err(Written::Plan)?;
    for (lane, p) in providers.iter().enumerate() {
        let id = format!("req-{p}-{round}");
        let sep = if lane > 0 { "," } else { "" };
        write!(
            plan,
            "{sep}{{\"lane\":\"{p}\",\"provider\":\"{p}\",\"region\":\"local\",\"request_id\":\"{id}\"}}"
        )
        .map_err(Written::Plan)?;
        let mut rng = Rng::derive(seed, &[round, lane as u64]);
        let jitter = rng.below(1000) as f64;
        let planted = spec.perturbations.iter().find(|p| p.lane == lane);
        let shift = planted.map_or(0.0, |p| p.latency_shift_ms);
        let fails = planted.is_some_and(|p| p.fail_every > 0 && round % p.fail_every == 0);
        let outcome = if fails {
            Outcome::Timeout
        } else {
            Outcome::Completed
        };
        let mut rec = TerminalRecord::new("2026-01-01T00:00:00Z".into(), outcome);
        rec.run_id = RUN_ID.into();
        rec.request_id = id;
        rec.round_index = round;
        rec.task_family = family.into();
        rec.item_id = item.clone();
        rec.provider = p.clone();
        rec.lane = p.clone();
        rec.region = "local".into();
        rec.requested_model = "m".into();
        if fails {
            rec.error_type = Some(openbench_common::record::ErrorType::Timeout);
            rec.error_message = Some("synthetic timeout".into());
        } else {
            rec.response_model = Some("m".into());
            rec.ttfa_ms = Some(200.0 + jitter + shift);
            rec.ttfo_ms = Some(150.0 + jitter + shift);
            // A lane-dependent offset gives the lanes distinct win shares to rank.
            rec.e2e_ms = Some(400.0 + jitter + lane as f64 + shift);
            rec.output_tokens_per_second = Some(50.0 + jitter / 10.0);
            rec.answer_text = answer.clone();
            rec.reasoning_text = "short reasoning".into();
        }
        serde_json::to_writer(&mut *results, &rec).map_err(|e| Written::Results(e.into()))?;
        results.write_all(b"\n").map_err(Written::Results)?;
    }
    plan.write_all(b"]}").map_err(Written::Plan)
}
