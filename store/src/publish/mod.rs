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
//! The store reaches the workflow only through the [`Workflow`] trait: a paired run's rows come
//! from [`Workflow::paired_figures`] (the workflow's own report code verified and scored them),
//! a load run's from [`Workflow::load_figures`] (its report's figures per step and row, its
//! saturation points and one row per request, [`load`]). A workflow that answers neither is
//! refused, naming it.

mod load;
pub mod paired;
mod repeats;
mod validity;

use crate::backend::{Store, Value};
use crate::schema::{self, LANES, METRICS, REQUESTS, RUNS, TABLES};
use crate::{StoreError, labels};
use openbench_common::hash;
use openbench_common::load_figures::LoadFigures;
use openbench_common::paired_figures::{PairedFigures, PairedRequestRow};
use openbench_common::rundir::{self, OpenedRun, RunLock, RunManifest, RunStatus};
use openbench_common::workflow::Workflow;
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
    /// A paired run: its scored requests, figures and paired comparisons.
    Paired(Box<PairedFigures>),
    /// A load run: its report's figures and its requests.
    Load(Box<LoadFigures>),
}

impl Body {
    /// Rounds (paired) or steps (load) stored.
    fn rounds(&self) -> u64 {
        match self {
            Body::Paired(f) => f.rounds,
            Body::Load(f) => f.steps.iter().map(|s| s.step + 1).max().unwrap_or(0),
        }
    }
    /// Request rows stored.
    fn requests(&self) -> usize {
        match self {
            Body::Paired(f) => f.requests.len(),
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
    let Some(figures) = workflow
        .paired_figures(run_dir, &opened.lock)
        .map_err(|e| fail(&e))?
    else {
        return Err(unverified(
            run_dir,
            format!(
                "workflow {:?} hands the store neither paired nor load figures",
                workflow.name()
            ),
        ));
    };
    let records_file = figures.records_file.clone();
    finish(
        run_dir,
        opened,
        &records_file,
        Body::Paired(Box::new(figures)),
    )
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
    let records = rundir::counting_records(records_path).map_err(|e| fail(&e))?;
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
    let concurrency = matches!(run.body, Body::Paired(_)).then_some(1);
    paired::insert_contract(s, lock, concurrency)?;
    let figures = match &run.body {
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
        Body::Paired(figures) => figures,
    };
    let lanes = figures
        .lanes
        .iter()
        .map(|(l, p, r)| (l.as_str(), p.as_str(), r.as_str()));
    s.execute_many(&schema::insert(&LANES), &lane_rows(lock, lanes))?;
    let requests: Vec<Vec<Value>> = figures
        .requests
        .iter()
        .map(|r| request_row(&lock.run_id, r))
        .collect();
    s.execute_many(&schema::insert(&REQUESTS), &requests)?;
    paired::insert(s, &lock.run_id, figures)?;
    if let Some(section) = &figures.validity {
        validity::insert(s, &lock.run_id, section)?;
    }
    let metrics: Vec<Vec<Value>> = figures
        .metrics
        .iter()
        .map(|m| {
            vec![
                Value::from(lock.run_id.as_str()),
                Value::from(m.lane.as_str()),
                Value::from(m.group.as_str()),
                Value::from(m.name.as_str()),
                Value::from(m.value),
            ]
        })
        .collect();
    s.execute_many(&schema::insert(&METRICS), &metrics)
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

fn request_row(run_id: &str, r: &PairedRequestRow) -> Vec<Value> {
    let usage = r.usage.as_ref();
    let u = |f: fn(&openbench_common::record::Usage) -> Option<u64>| Value::from(usage.and_then(f));
    vec![
        Value::from(run_id),
        Value::from(r.request_id.as_str()),
        Value::from(r.round_index),
        Value::from(u64::from(r.lane_index)),
        Value::from(r.item_id.as_str()),
        Value::from(r.group.as_str()),
        Value::from(r.started_at.as_str()),
        Value::from(r.probe_id.clone()),
        Value::from(labels::label(&r.outcome)),
        Value::from(r.class.as_str()),
        Value::from(r.error_type.clone()),
        Value::from(r.failure_error_type.map(|e| labels::label(&e))),
        Value::from(r.http_status.map(u64::from)),
        Value::from(r.correct),
        Value::from(r.schema_valid),
        Value::from(u64::from(r.field_bits)),
        Value::from(r.ttfo_ms),
        Value::from(r.ttfa_ms),
        Value::from(r.e2e_ms),
        Value::from(r.tokens_per_second),
        Value::from(r.answer_tokens),
        Value::from(r.reasoning_tokens_before_answer),
        Value::from(r.reasoning_emitted),
        Value::from(r.truncated_by_length),
        Value::from(r.completed),
        Value::from(r.model_mismatch.clone()),
        Value::from(r.out_of_round),
        u(|u| u.prompt_tokens),
        u(|u| u.completion_tokens),
        u(|u| u.total_tokens),
        u(|u| u.cached_tokens),
        u(|u| u.reasoning_tokens),
        Value::from(usage.is_some()),
        u(|u| u.cache_write_tokens),
    ]
}
