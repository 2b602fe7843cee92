//! `publish`: one finished (or failed part-way) run directory into the store.
//!
//! The run is verified exactly as `report` verifies it — the lock read, the dataset's release
//! hash checked against it, every record admitted by the plan and the lock, one committed record
//! per request — and scored by the report's own code; anything `report` refuses is refused here,
//! before the store is touched. Everything is written in one transaction.
//!
//! Idempotent: a run is keyed by its id and a content hash (lock, manifest status and records);
//! publishing the same content again changes nothing. A run stored as failed, interrupted or
//! incomplete is replaced when its content changed (it was resumed); a run stored as complete
//! with other content is refused.
//!
//! A load run (its workflow answers [`Workflow::load_figures`]) is verified by the load
//! workflow's own reading of its directory (as its `report` reads it) and stored as its report's
//! figures per step and row, its saturation points and one row per request ([`load`]); the store
//! reaches the workflow only through that trait method.

mod load;
mod validity;

use crate::backend::{Store, Value};
use crate::schema::{self, LANES, METRICS, REQUESTS, RUNS, TABLES};
use crate::{StoreError, labels};
use openbench_common::hash;
use openbench_common::load_figures::LoadFigures;
use openbench_common::record::TerminalRecord;
use openbench_common::rundir::{self, OpenedRun, RunLock, RunManifest, RunStatus};
use openbench_common::workflow::Workflow;
use openbench_micro_single_task::metrics::{Observation, RunMetrics};
use openbench_micro_single_task::report::{self, Computed};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// What publishing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// The run was new to the store.
    Added,
    /// The store already held this exact content: nothing changed.
    Unchanged,
    /// An earlier, unfinished publication of the run was replaced by its newer content.
    Replaced,
}

/// The outcome of [`publish`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishOutcome {
    /// The run.
    pub run_id: String,
    /// The status stored.
    pub status: String,
    /// What happened.
    pub published: Published,
    /// Request rows of the run.
    pub requests: usize,
    /// How the records stood against their chain ([`rundir::chain::Integrity`]), one line.
    pub integrity: String,
}

/// A verified, scored run, ready to store.
struct Verified {
    lock: RunLock,
    lock_bytes: Vec<u8>,
    manifest: RunManifest,
    body: Body,
    content_sha256: String,
    integrity: String,
}

/// What is stored besides the run's row and lanes.
enum Body {
    /// A paired run: its scored observations and the records they came from.
    Paired {
        computed: Box<Computed>,
        records: BTreeMap<String, TerminalRecord>,
    },
    /// A load run: its report's figures and its requests.
    Load(Box<LoadFigures>),
}

impl Body {
    /// Rounds (paired) or steps (load) stored.
    fn rounds(&self) -> u64 {
        match self {
            Body::Paired { computed, .. } => computed.metrics.rounds,
            Body::Load(f) => f.steps.iter().map(|s| s.step + 1).max().unwrap_or(0),
        }
    }
    /// Request rows stored.
    fn requests(&self) -> usize {
        match self {
            Body::Paired { computed, .. } => computed.observations.len(),
            Body::Load(f) => f.requests.len(),
        }
    }
}

fn unverified(run_dir: &Path, detail: impl std::fmt::Display) -> StoreError {
    StoreError::Unverified {
        run_dir: run_dir.to_path_buf(),
        detail: detail.to_string(),
    }
}

/// Verifies and scores the run `opened` (already checked as `report` checks it: artifacts'
/// hashes, the records chain), a run of `workflow` (the registry's, by the lock's name).
fn verify(
    run_dir: &Path,
    opened: &OpenedRun,
    workflow: &dyn Workflow,
) -> Result<Verified, StoreError> {
    let fail = |e: &dyn std::fmt::Display| unverified(run_dir, e);
    if let Some(figures) = workflow.load_figures(run_dir).map_err(|e| fail(&e))? {
        let records_file = figures.records_file.clone();
        return finish(
            run_dir,
            opened,
            &records_file,
            Body::Load(Box::new(figures)),
        );
    }
    let lock = &opened.lock;
    let gold = openbench_micro_single_task::gold_table(lock).map_err(|e| fail(&e))?;
    let computed = report::compute(run_dir, lock, &gold).map_err(|e| fail(&e))?;
    let names = report::reported_files(run_dir).map_err(|e| fail(&e))?;
    let records_path = rundir::path(run_dir, &names.results);
    let records = rundir::counting_records(&records_path).map_err(|e| fail(&e))?;
    let body = Body::Paired {
        computed: Box::new(computed),
        records,
    };
    finish(run_dir, opened, &records_path, body)
}

/// The checks every run passes (manifest and records of this run) and its content hash, the
/// records streamed into it through the run-directory reader.
fn finish(
    run_dir: &Path,
    opened: &OpenedRun,
    records_path: &Path,
    body: Body,
) -> Result<Verified, StoreError> {
    let fail = |e: &dyn std::fmt::Display| unverified(run_dir, e);
    let lock = opened.lock.clone();
    let lock_bytes = opened.lock_bytes.clone();
    let integrity = opened.integrity.clone();
    let manifest = opened.manifest.clone().ok_or_else(|| {
        unverified(
            run_dir,
            format!("{}: no run manifest", rundir::RUN_MANIFEST),
        )
    })?;
    if manifest.run_id != lock.run_id {
        return Err(unverified(
            run_dir,
            format!(
                "the manifest's run id {:?} differs from the lock's {:?}",
                manifest.run_id, lock.run_id
            ),
        ));
    }
    let counted;
    let records = match &body {
        Body::Paired { records, .. } => records,
        Body::Load(_) => {
            counted = rundir::counting_records(records_path).map_err(|e| fail(&e))?;
            &counted
        }
    };
    if let Some(r) = records.values().find(|r| r.run_id != lock.run_id) {
        return Err(unverified(
            run_dir,
            format!(
                "{}: record {} belongs to run {:?}, not {:?}",
                records_path.display(),
                r.request_id,
                r.run_id,
                lock.run_id
            ),
        ));
    }
    let mut hash = Sha256::new();
    for part in [&lock_bytes[..], stored_status(&manifest).as_bytes()] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part);
    }
    // The records, streamed (length first, as above), through the run-directory reader.
    let records_file = rundir::open_read(records_path).map_err(|e| fail(&e))?;
    let records_len = records_file
        .metadata()
        .map_err(|e| unverified(run_dir, format!("{}: {e}", records_path.display())))?
        .len();
    hash.update(records_len.to_le_bytes());
    let mut hashing = HashingWriter(&mut hash);
    let copied = std::io::copy(&mut records_file.take(records_len), &mut hashing)
        .map_err(|e| unverified(run_dir, format!("{}: {e}", records_path.display())))?;
    if copied != records_len {
        return Err(unverified(
            run_dir,
            format!("{}: changed while it was read", records_path.display()),
        ));
    }
    Ok(Verified {
        lock,
        lock_bytes,
        manifest,
        body,
        content_sha256: hash::hex(&hash.finalize()),
        integrity: integrity.map(|i| i.to_string()).unwrap_or_default(),
    })
}

/// A `Write` feeding a hasher (streams a file into the content hash).
struct HashingWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The status a run is stored with: the manifest's, except that a run no process is writing any
/// more (its writer lock was free) but whose manifest still says `running` or `initialized` died
/// part-way, and is stored as `failed`.
fn stored_status(manifest: &RunManifest) -> &'static str {
    if manifest.status.is_live() {
        RunStatus::Failed.as_str()
    } else {
        manifest.status.as_str()
    }
}

/// Verifies the run in `run_dir`, a run of `workflow` (the registry's, by the lock's name), and
/// stores it (see the module docs). Opens the run directory exactly as `report` does
/// ([`rundir::open_run`]: the writer lock first, so a run still being written is refused, naming
/// its process; nothing read through a plain `std::fs::read`).
pub fn publish(
    store: &mut Store,
    run_dir: &Path,
    workflow: &dyn Workflow,
) -> Result<PublishOutcome, StoreError> {
    let opened = rundir::open_run(run_dir, "publish").map_err(|e| unverified(run_dir, e))?;
    // `opened` holds the writer lock until the run is stored.
    let run = verify(run_dir, &opened, workflow)?;
    let run_id = run.lock.run_id.clone();
    let status = stored_status(&run.manifest).to_string();
    let requests = run.body.requests();
    let published = store.transaction(|s| {
        let stored = s.query(
            "SELECT content_sha256, status FROM runs WHERE run_id = $1",
            &[Value::from(run_id.as_str())],
        )?;
        let mut published = Published::Added;
        if let Some(row) = stored.first() {
            let hash = row.first().and_then(Value::text).unwrap_or_default();
            if hash == run.content_sha256 {
                return Ok(Published::Unchanged);
            }
            if row.get(1).and_then(Value::text) == Some(RunStatus::Complete.as_str()) {
                return Err(StoreError::Conflict {
                    run_id: run_id.clone(),
                    stored: hash.to_string(),
                    now: run.content_sha256.clone(),
                });
            }
            for table in TABLES.iter().rev() {
                s.execute_many(
                    &format!("DELETE FROM {} WHERE run_id = $1", table.name),
                    &[vec![Value::from(run_id.as_str())]],
                )?;
            }
            published = Published::Replaced;
        }
        insert_run(s, &run, &status)?;
        Ok(published)
    })?;
    Ok(PublishOutcome {
        run_id,
        status,
        published,
        requests,
        integrity: run.integrity.clone(),
    })
}

fn insert_run(s: &mut Store, run: &Verified, status: &str) -> Result<(), StoreError> {
    let lock = &run.lock;
    let id = || Value::from(lock.run_id.as_str());
    let probes: BTreeMap<String, Vec<String>> = run
        .manifest
        .session_probes
        .iter()
        .flat_map(|session| session.probes.iter())
        .fold(BTreeMap::new(), |mut acc, (region, probe)| {
            let ids: &mut Vec<String> = acc.entry(region.clone()).or_default();
            if !ids.contains(&probe.probe_id) {
                ids.push(probe.probe_id.clone());
            }
            acc
        });
    let lock_sha256 = hash::sha256_hex(&run.lock_bytes);
    let lock_json = String::from_utf8_lossy(&run.lock_bytes).into_owned();
    let row = vec![
        id(),
        Value::from(lock.workflow.as_str()),
        Value::from(labels::label(&run.manifest.mode)),
        Value::from(status),
        Value::from(run.content_sha256.as_str()),
        Value::from(lock_sha256),
        Value::from(lock.spec_sha256.as_str()),
        Value::from(lock.dataset_release_hash.as_str()),
        Value::from(lock.adapters_sha256.as_str()),
        Value::from(lock.tokenizer.as_str()),
        Value::from(lock.code_sha256.as_str()),
        Value::from(lock.program_version.as_str()),
        Value::from(lock.model_label.as_str()),
        Value::from(json(&lock.families)),
        Value::from(json(&lock.regions)),
        Value::from(json(&probes)),
        Value::from(lock.simulator_time_scale),
        Value::from(lock.created_at.as_str()),
        Value::from(run.manifest.period_start.clone()),
        Value::from(run.manifest.period_end.clone()),
        Value::from(run.body.rounds()),
        Value::from(run.body.requests() as u64),
        Value::from(lock_json),
    ];
    s.execute_many(&schema::insert(&RUNS), &[row])?;
    let (computed, records) = match &run.body {
        Body::Load(figures) => {
            let lanes = figures
                .lanes
                .iter()
                .map(|(l, p, r)| (l.as_str(), p.as_str(), r.as_str()));
            s.execute_many(&schema::insert(&LANES), &lane_rows(lock, lanes))?;
            if let Some(section) = &figures.validity {
                validity::insert(s, &lock.run_id, section)?;
            }
            return load::insert(s, &lock.run_id, figures);
        }
        Body::Paired { computed, records } => (computed, records),
    };
    let lanes = computed
        .lanes
        .lanes
        .iter()
        .map(|l| (l.lane.as_str(), l.provider.as_str(), l.region.as_str()));
    s.execute_many(&schema::insert(&LANES), &lane_rows(lock, lanes))?;
    let requests: Vec<Vec<Value>> = computed
        .observations
        .iter()
        .map(|o| request_row(&lock.run_id, o, records.get(&o.request_id)))
        .collect();
    s.execute_many(&schema::insert(&REQUESTS), &requests)?;
    if let Some(section) = &computed.metrics.validity {
        validity::insert(s, &lock.run_id, section)?;
    }
    s.execute_many(
        &schema::insert(&METRICS),
        &metric_rows(&lock.run_id, &computed.metrics),
    )
}

/// A value as compact JSON (lists of names, the probe map); these never fail to serialize.
fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// The `lanes` rows of `lanes`, each (lane label, provider key, region), in index order.
fn lane_rows<'a>(
    lock: &RunLock,
    lanes: impl Iterator<Item = (&'a str, &'a str, &'a str)>,
) -> Vec<Vec<Value>> {
    let lanes: Vec<(&str, &str, &str)> = lanes.collect();
    let several_regions = lanes.iter().any(|(lane, provider, _)| lane != provider);
    lanes
        .iter()
        .enumerate()
        .map(|(i, &(lane, provider, region))| {
            let locked = lock.providers.iter().find(|p| p.key == provider);
            let name = locked.map_or(provider.to_string(), |p| p.display_name.clone());
            let display = if several_regions {
                format!("{name} ({region})")
            } else {
                name
            };
            vec![
                Value::from(lock.run_id.as_str()),
                Value::from(i as u64),
                Value::from(lane),
                Value::from(provider),
                Value::from(region),
                Value::from(display),
                Value::from(locked.map(|p| p.model.clone()).unwrap_or_default()),
                Value::from(locked.and_then(|p| p.input_price_per_mtok)),
                Value::from(locked.and_then(|p| p.output_price_per_mtok)),
            ]
        })
        .collect()
}

fn request_row(run_id: &str, o: &Observation, record: Option<&TerminalRecord>) -> Vec<Value> {
    let usage = o.usage.as_deref();
    let u = |f: fn(&openbench_common::record::Usage) -> Option<u64>| Value::from(usage.and_then(f));
    let failure = o.failure.as_deref();
    vec![
        Value::from(run_id),
        Value::from(o.request_id.as_str()),
        Value::from(o.round_index),
        Value::from(u64::from(o.lane)),
        Value::from(o.item_id.as_str()),
        Value::from(o.family.as_str()),
        Value::from(record.map(|r| r.started_at.clone()).unwrap_or_default()),
        Value::from(record.and_then(|r| r.probe_id.clone())),
        Value::from(labels::label(&o.outcome)),
        Value::from(labels::label(&o.class)),
        Value::from(o.error_type.map(|e| labels::label(&e))),
        Value::from(
            failure
                .and_then(|f| f.error_type)
                .map(|e| labels::label(&e)),
        ),
        Value::from(failure.and_then(|f| f.http_status).map(u64::from)),
        Value::from(o.correct()),
        Value::from(o.schema_valid),
        Value::from(u64::from(o.field_bits)),
        Value::from(o.ttfo_ms),
        Value::from(o.ttfa_ms),
        Value::from(o.e2e_ms),
        Value::from(o.tokens_per_second),
        Value::from(record.and_then(|r| r.answer_tokens)),
        Value::from(o.reasoning_tokens_before_answer),
        Value::from(o.reasoning_emitted),
        Value::from(o.truncated_by_length),
        Value::from(o.completed),
        Value::from(o.model_mismatch.clone()),
        Value::from(o.out_of_round),
        u(|u| u.prompt_tokens),
        u(|u| u.completion_tokens),
        u(|u| u.total_tokens),
        u(|u| u.cached_tokens),
        u(|u| u.reasoning_tokens),
        Value::from(usage.is_some()),
    ]
}

/// Every numeric figure of every summary row (pooled and per family), named by its path in
/// `metrics.json` (`e2e_latency_p50`, `usage.cost_usd`, `failure_breakdown.http_429`, …).
fn metric_rows(run_id: &str, metrics: &RunMetrics) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    for p in &metrics.providers {
        for summary in std::iter::once(&p.pooled).chain(&p.families) {
            let mut figures = BTreeMap::new();
            if let Ok(value) = serde_json::to_value(summary) {
                flatten("", &value, &mut figures);
            }
            for (name, value) in figures {
                rows.push(vec![
                    Value::from(run_id),
                    Value::from(p.lane.as_str()),
                    Value::from(summary.task_family.as_str()),
                    Value::from(name),
                    Value::from(value),
                ]);
            }
        }
    }
    rows
}

fn flatten(prefix: &str, value: &serde_json::Value, out: &mut BTreeMap<String, Option<f64>>) {
    let name = |key: &str| {
        if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}.{key}")
        }
    };
    let serde_json::Value::Object(map) = value else {
        return;
    };
    for (key, v) in map {
        match v {
            serde_json::Value::Number(n) => {
                out.insert(name(key), n.as_f64());
            }
            serde_json::Value::Bool(b) => {
                out.insert(name(key), Some(f64::from(u8::from(*b))));
            }
            serde_json::Value::Null => {
                out.insert(name(key), None);
            }
            serde_json::Value::Object(_) => flatten(&name(key), v, out),
            _ => {}
        }
    }
}
