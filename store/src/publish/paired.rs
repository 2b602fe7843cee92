//! What `publish` stores besides the figures: a paired run's comparisons (`paired_wins`,
//! `paired_pairs`: the report's own paired comparisons, the content of
//! `artifacts/paired-comparisons.json`, as [`PairedFigures`] carries them), a repeated paired
//! run's figures per repeat and across repeats (`paired_repeats`, `paired_repeat_intervals`)
//! and every run's request contract (`run_contracts`).
//!
//! The run directory keeps the lock, not the spec: the lock has the timeout but not the
//! reasoning effort. So the contract's reasoning effort is read from the spec file the lock
//! names (`spec_path`, as `resume` reads it) when that file still holds the locked bytes (its
//! sha256 equals the lock's `spec_sha256`), and is NULL otherwise, with `source` saying which.

use crate::StoreError;
use crate::backend::{Store, Value};
use crate::schema::{
    self, PAIRED_PAIRS, PAIRED_REPEAT_INTERVALS, PAIRED_REPEATS, PAIRED_WINS, RUN_CONTRACTS,
};
use openbench_common::hash;
use openbench_common::paired_figures::PairedFigures;
use openbench_common::rundir::RunLock;
use openbench_common::spec::LoadedSpec;
use std::path::Path;

/// Inserts the paired comparisons of run `run_id` (inside `publish`'s transaction).
pub(super) fn insert(
    s: &mut Store,
    run_id: &str,
    paired: &PairedFigures,
) -> Result<(), StoreError> {
    let wins: Vec<Vec<Value>> = paired
        .wins
        .iter()
        .map(|w| {
            vec![
                Value::from(run_id),
                Value::from(w.lane.as_str()),
                Value::from(w.wins),
                Value::from(w.rounds_with_e2e),
                Value::from(paired.rounds_with_winner),
                Value::from(w.win_share),
            ]
        })
        .collect();
    s.execute_many(&schema::insert(&PAIRED_WINS), &wins)?;
    let pairs: Vec<Vec<Value>> = paired
        .pairs
        .iter()
        .map(|p| {
            vec![
                Value::from(run_id),
                Value::from(p.a.as_str()),
                Value::from(p.b.as_str()),
                Value::from(p.count),
                Value::from(p.coverage),
                Value::from(p.e2e_diff_ms[0]),
                Value::from(p.e2e_diff_ms[1]),
                Value::from(p.e2e_diff_ms[2]),
            ]
        })
        .collect();
    s.execute_many(&schema::insert(&PAIRED_PAIRS), &pairs)?;
    insert_repeats(s, run_id, paired)
}

/// A repeated run's rows (`plans.repeats`): each repeat's value, and the interval across them.
fn insert_repeats(s: &mut Store, run_id: &str, paired: &PairedFigures) -> Result<(), StoreError> {
    let mut rows = super::repeats::RepeatRows::default();
    for r in &paired.repeats {
        let key = [
            Value::from(run_id),
            Value::from(r.lane.as_str()),
            Value::from(r.figure.as_str()),
        ];
        let per_repeat = r
            .per_repeat
            .iter()
            .enumerate()
            .map(|(i, value)| vec![Value::from(i as u64 + 1), Value::from(*value)]);
        rows.push(&key, per_repeat, r.across);
    }
    rows.insert(s, &PAIRED_REPEATS, &PAIRED_REPEAT_INTERVALS)
}

/// The contract of a run: where its reasoning effort came from and what it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredContract {
    /// The spec's `request.reasoning_effort` (`""`: none sent); `None` when the locked spec is
    /// gone or changed.
    pub reasoning_effort: Option<String>,
    /// `spec` (read from the locked spec) or `lock` (the lock alone).
    pub source: &'static str,
}

/// Reads the reasoning effort from the spec file `lock` names, if it still holds the locked
/// bytes; otherwise the lock alone (no reasoning effort).
pub fn contract(lock: &RunLock) -> StoredContract {
    let from_lock = StoredContract {
        reasoning_effort: None,
        source: "lock",
    };
    let Ok(spec) = LoadedSpec::load(Path::new(&lock.spec_path)) else {
        return from_lock;
    };
    if hash::sha256_hex(&spec.bytes) != lock.spec_sha256 {
        return from_lock;
    }
    StoredContract {
        reasoning_effort: Some(spec.spec.request.reasoning_effort.trim().to_string()),
        source: "spec",
    }
}

/// Inserts run `lock.run_id`'s contract row: streaming (every workflow streams), `concurrency`
/// per provider (1 in paired rounds, `None` for a load run), the lock's timeout, and what
/// [`contract`] read.
pub(super) fn insert_contract(
    s: &mut Store,
    lock: &RunLock,
    concurrency: Option<u64>,
) -> Result<(), StoreError> {
    let c = contract(lock);
    s.execute_many(
        &schema::insert(&RUN_CONTRACTS),
        &[vec![
            Value::from(lock.run_id.as_str()),
            Value::from(true),
            Value::from(concurrency),
            Value::from(lock.timeout_ms),
            Value::from(c.reasoning_effort),
            Value::from(c.source),
        ]],
    )
}
