//! The results JSON: one file per published snapshot, read straight from the store's rows (the
//! `runs`, `lanes`, `metrics` and load tables) with no value recomputed or rounded, so every
//! figure equals the store's bit for bit. Its JSON Schema (`results/schema-v1.json`) is derived
//! from these structs.

use crate::SiteError;
use openbench_store::backend::{Store, Value};
use openbench_store::schema::{self, LANES, LOAD_SATURATION, LOAD_STEPS, METRICS, RUNS, Table};
use openbench_store::snapshot::Snapshot;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the results JSON layout; the schema file is `schema-v{SCHEMA_VERSION}.json`.
pub const SCHEMA_VERSION: u32 = 1;

/// A figure as the store holds it: `null` where the population was empty.
pub type Figure = Option<f64>;

/// One published snapshot's results, exactly as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotResults {
    /// Layout version of this file (1).
    pub schema_version: u32,
    /// The benchmark: one workflow serving one model (`<workflow>-<model>` in lower case).
    pub benchmark: String,
    /// The stored run every figure of this file came from.
    pub run_id: String,
    /// The workflow that ran (`micro-single-task`, `load`).
    pub workflow: String,
    /// The model label of the run's lock.
    pub model: String,
    /// The approval id the snapshot was published under.
    pub approval_id: String,
    /// When the snapshot was published (RFC 3339, as stored).
    pub published_at: String,
    /// The run's stored status (always `complete` for a snapshot).
    pub status: String,
    /// First execution start (RFC 3339).
    pub started_at: Option<String>,
    /// Completion time (RFC 3339).
    pub finished_at: Option<String>,
    /// True when every provider was the embedded simulator (the lock has a time scale).
    pub simulated: bool,
    /// The simulator's time scale, for a simulated run.
    pub simulator_time_scale: Option<f64>,
    /// Rounds (paired run) or steps (load run).
    pub rounds: i64,
    /// Request rows stored for the run.
    pub requests: i64,
    /// Task families, in round order.
    pub families: Vec<String>,
    /// Regions the run was measured from.
    pub regions: Vec<String>,
    /// Probe ids that served each region.
    pub probes: BTreeMap<String, Vec<String>>,
    /// What every request was sent under.
    pub contract: Contract,
    /// One entry per lane (provider × region), in stored lane order.
    pub lanes: Vec<LaneResults>,
    /// A load run's figures (absent for a paired run).
    pub load: Option<LoadResults>,
}

/// The request contract of a run, as far as the store records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Contract {
    /// Every request streams (both workflows always stream).
    pub streaming: bool,
    /// Requests in flight per provider (1 in paired rounds; a load run's steps set their own).
    pub concurrency_per_provider: Option<u64>,
    /// Per-request client timeout, ms (the lock's).
    pub timeout_ms: u64,
    /// The reasoning effort sent, when the store records it (the lock does not: `null`).
    pub reasoning_effort: Option<String>,
}

/// One lane's figures: every metric of the report's summary rows, by its `metrics.json` path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LaneResults {
    /// Lane label (`provider` or `provider@region`).
    pub lane: String,
    /// Provider key.
    pub provider: String,
    /// Region.
    pub region: String,
    /// Display name (with the region when the run had several).
    pub display_name: String,
    /// Model id the provider was asked for.
    pub model: String,
    /// The lock's input price, USD per million tokens.
    pub input_price_per_mtok: Figure,
    /// The lock's output price, USD per million tokens.
    pub output_price_per_mtok: Figure,
    /// The pooled row: metric → value (`e2e_latency_p99`, `task_success_rate`, …).
    pub pooled: BTreeMap<String, Figure>,
    /// Per family: metric → value.
    pub families: BTreeMap<String, BTreeMap<String, Figure>>,
}

/// A load run's stored figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadResults {
    /// `load_steps` rows (column → value), in step and row order.
    pub steps: Vec<BTreeMap<String, Cell>>,
    /// `load_saturation` rows (column → value), in row and kind order.
    pub saturation: Vec<BTreeMap<String, Cell>>,
}

/// One stored column value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Cell {
    /// NULL.
    Null,
    /// An integer column (booleans are 0/1).
    Int(i64),
    /// A float column.
    Real(f64),
    /// A text column.
    Text(String),
}

impl Cell {
    /// The value as a float (integers convert).
    pub fn real(&self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(*i as f64),
            Cell::Real(x) => Some(*x),
            _ => None,
        }
    }
    /// The text.
    pub fn text(&self) -> Option<&str> {
        match self {
            Cell::Text(t) => Some(t),
            _ => None,
        }
    }
}

impl From<&Value> for Cell {
    fn from(v: &Value) -> Cell {
        match v {
            Value::Null => Cell::Null,
            Value::Int(i) => Cell::Int(*i),
            Value::Real(x) => Cell::Real(*x),
            Value::Text(t) => Cell::Text(t.clone()),
        }
    }
}

/// The index of `results/`: every snapshot file, newest benchmark snapshot marked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultsIndex {
    /// Layout version (1).
    pub schema_version: u32,
    /// The schema file of every snapshot file, beside this index.
    pub schema: String,
    /// One entry per published snapshot, by benchmark then start time.
    pub snapshots: Vec<IndexEntry>,
}

/// One snapshot in the index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IndexEntry {
    /// Benchmark slug.
    pub benchmark: String,
    /// The run.
    pub run_id: String,
    /// Its results file, relative to the index.
    pub file: String,
    /// True for the benchmark's latest snapshot (the one its leaderboard shows).
    pub latest: bool,
    /// Simulated run.
    pub simulated: bool,
}

impl SnapshotResults {
    /// The model as page titles name it: the lock's label, or the workflow's name when the run
    /// had none.
    pub fn model_title(&self) -> &str {
        if self.model.trim().is_empty() {
            &self.workflow
        } else {
            &self.model
        }
    }
}

/// The benchmark slug of a workflow and model: lower-case letters and digits joined by `-`.
pub fn slug(workflow: &str, model: &str) -> String {
    let mut out = String::new();
    for c in format!("{workflow} {model}").chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

fn column<'r>(table: &Table, row: &'r [Value], name: &str) -> &'r Value {
    table
        .columns
        .iter()
        .position(|c| c.name == name)
        .and_then(|i| row.get(i))
        .unwrap_or(&Value::Null)
}

fn text(table: &Table, row: &[Value], name: &str) -> String {
    column(table, row, name)
        .text()
        .unwrap_or_default()
        .to_string()
}

/// Reads one published snapshot's results from the store.
pub fn read(store: &mut Store, snapshot: &Snapshot) -> Result<SnapshotResults, SiteError> {
    let id = [Value::from(snapshot.run_id.as_str())];
    let corrupt = |detail: String| SiteError::Corrupt {
        run_id: snapshot.run_id.clone(),
        detail,
    };
    let runs = store.query(&schema::select(&RUNS, true), &id)?;
    let run = runs
        .first()
        .ok_or_else(|| corrupt("the snapshot's run is not in `runs`".into()))?;
    let json_of = |name: &str| -> Result<serde_json::Value, SiteError> {
        serde_json::from_str(&text(&RUNS, run, name))
            .map_err(|e| corrupt(format!("runs.{name}: {e}")))
    };
    let families: Vec<String> = serde_json::from_value(json_of("families")?)
        .map_err(|e| corrupt(format!("runs.families: {e}")))?;
    let regions: Vec<String> = serde_json::from_value(json_of("regions")?)
        .map_err(|e| corrupt(format!("runs.regions: {e}")))?;
    let probes: BTreeMap<String, Vec<String>> = serde_json::from_value(json_of("probes")?)
        .map_err(|e| corrupt(format!("runs.probes: {e}")))?;
    let lock = json_of("lock_json")?;
    let timeout_ms = lock
        .get("timeout_ms")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| corrupt("runs.lock_json: no timeout_ms".into()))?;
    let workflow = text(&RUNS, run, "workflow");
    let model = text(&RUNS, run, "model_label");
    let time_scale = column(&RUNS, run, "simulator_time_scale").real();
    let load = read_load(store, &id)?;
    let contract = Contract {
        streaming: true,
        concurrency_per_provider: load.is_none().then_some(1),
        timeout_ms,
        reasoning_effort: None,
    };
    Ok(SnapshotResults {
        schema_version: SCHEMA_VERSION,
        benchmark: slug(&workflow, &model),
        run_id: snapshot.run_id.clone(),
        workflow,
        model,
        approval_id: snapshot.approval_id.clone(),
        published_at: snapshot.published_at.clone(),
        status: text(&RUNS, run, "status"),
        started_at: column(&RUNS, run, "started_at").text().map(str::to_string),
        finished_at: column(&RUNS, run, "finished_at").text().map(str::to_string),
        simulated: time_scale.is_some(),
        simulator_time_scale: time_scale,
        rounds: column(&RUNS, run, "rounds").int().unwrap_or(0),
        requests: column(&RUNS, run, "requests").int().unwrap_or(0),
        families,
        regions,
        probes,
        contract,
        lanes: read_lanes(store, &id)?,
        load,
    })
}

fn read_lanes(store: &mut Store, id: &[Value]) -> Result<Vec<LaneResults>, SiteError> {
    let mut lanes: Vec<LaneResults> = store
        .query(&schema::select(&LANES, true), id)?
        .iter()
        .map(|r| LaneResults {
            lane: text(&LANES, r, "lane"),
            provider: text(&LANES, r, "provider"),
            region: text(&LANES, r, "region"),
            display_name: text(&LANES, r, "display_name"),
            model: text(&LANES, r, "model"),
            input_price_per_mtok: column(&LANES, r, "input_price_per_mtok").real(),
            output_price_per_mtok: column(&LANES, r, "output_price_per_mtok").real(),
            pooled: BTreeMap::new(),
            families: BTreeMap::new(),
        })
        .collect();
    for r in store.query(&schema::select(&METRICS, true), id)? {
        let lane = text(&METRICS, &r, "lane");
        let family = text(&METRICS, &r, "family");
        let metric = text(&METRICS, &r, "metric");
        let value = column(&METRICS, &r, "value").real();
        let Some(l) = lanes.iter_mut().find(|l| l.lane == lane) else {
            continue;
        };
        if family == "pooled" {
            l.pooled.insert(metric, value);
        } else {
            l.families.entry(family).or_default().insert(metric, value);
        }
    }
    Ok(lanes)
}

fn read_load(store: &mut Store, id: &[Value]) -> Result<Option<LoadResults>, SiteError> {
    let rows =
        |store: &mut Store, table: &Table| -> Result<Vec<BTreeMap<String, Cell>>, SiteError> {
            Ok(store
                .query(&schema::select(table, true), id)?
                .iter()
                .map(|r| {
                    table
                        .columns
                        .iter()
                        .filter(|c| c.name != "run_id")
                        .map(|c| (c.name.to_string(), Cell::from(column(table, r, c.name))))
                        .collect()
                })
                .collect())
        };
    let steps = rows(store, &LOAD_STEPS)?;
    if steps.is_empty() {
        return Ok(None);
    }
    let saturation = rows(store, &LOAD_SATURATION)?;
    Ok(Some(LoadResults { steps, saturation }))
}

/// The JSON Schema of a snapshot file (`results/schema-v1.json`).
pub fn snapshot_schema() -> String {
    pretty(&schemars::schema_for!(SnapshotResults))
}

/// The JSON Schema of the index (`results/index.schema-v1.json`).
pub fn index_schema() -> String {
    pretty(&schemars::schema_for!(ResultsIndex))
}

/// Pretty JSON with a final newline (serializing these types cannot fail).
pub fn pretty(value: &impl Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}
