//! Reading runs back out of the store as the workflow's own types: the lock, the lane table and
//! one [`Observation`] per stored request, then the report's metrics recomputed from them — so
//! `history` measures stored runs with the same code `report` and `compare` use on run
//! directories.

use crate::backend::{Store, Value};
use crate::schema::{self, LANES, REQUESTS};
use crate::{StoreError, labels};
use openbench_common::record::Usage;
use openbench_common::rundir::RunLock;
use openbench_task_metrics::metrics::observe::FailureInfo;
use openbench_task_metrics::metrics::{
    self, LaneKey, LaneTable, MetricsInput, Observation, RunMetrics,
};
use openbench_tasks::scoring::Family;

/// One run's row of the `runs` table.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// Run id.
    pub run_id: String,
    /// Workflow.
    pub workflow: String,
    /// The lock's model label (a benchmark is one workflow serving one model).
    pub model_label: String,
    /// Stored status (`complete`, `failed`, …).
    pub status: String,
    /// First execution start (RFC 3339), when the run executed.
    pub started_at: Option<String>,
    /// sha256 of the run lock's bytes.
    pub lock_sha256: String,
    /// Digest of the code that ran.
    pub code_sha256: String,
    /// Requests stored.
    pub requests: i64,
}

/// A stored run, rebuilt.
pub struct StoredRun {
    /// Its row.
    pub row: RunRow,
    /// Its lock.
    pub lock: RunLock,
    /// Its lanes, in stored index order.
    pub lanes: LaneTable,
    /// Its requests in report order (round, lane, request id).
    pub observations: Vec<Observation>,
    /// Per stored request (same order): our o200k count of the visible answer.
    pub answer_tokens: Vec<Option<u64>>,
    /// The report's metrics of the observations.
    pub metrics: RunMetrics,
}

/// Every stored run, oldest first (by first execution start, then id).
pub fn runs(store: &mut Store) -> Result<Vec<RunRow>, StoreError> {
    let rows = store.query(
        "SELECT run_id, workflow, status, started_at, lock_sha256, code_sha256, requests, \
         model_label FROM runs ORDER BY started_at, run_id",
        &[],
    )?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let text = |i: usize| r.get(i).and_then(Value::text).map(str::to_string);
            RunRow {
                run_id: text(0).unwrap_or_default(),
                workflow: text(1).unwrap_or_default(),
                status: text(2).unwrap_or_default(),
                started_at: text(3),
                lock_sha256: text(4).unwrap_or_default(),
                code_sha256: text(5).unwrap_or_default(),
                requests: r.get(6).and_then(Value::int).unwrap_or(0),
                model_label: text(7).unwrap_or_default(),
            }
        })
        .collect())
}

/// Column index of `name` in `table` (the `SELECT` of [`schema::select`] keeps table order).
pub(crate) fn at(table: &schema::Table, name: &str) -> usize {
    table
        .columns
        .iter()
        .position(|c| c.name == name)
        .unwrap_or(usize::MAX)
}

/// Rebuilds one stored run.
pub fn run(store: &mut Store, row: &RunRow) -> Result<StoredRun, StoreError> {
    let id = [Value::from(row.run_id.as_str())];
    let corrupt = |detail: String| StoreError::Corrupt {
        store: String::new(),
        run_id: row.run_id.clone(),
        detail,
    };
    let lock_rows = store.query("SELECT lock_json FROM runs WHERE run_id = $1", &id)?;
    let lock_json = lock_rows
        .first()
        .and_then(|r| r.first())
        .and_then(Value::text)
        .unwrap_or_default();
    let lock: RunLock = serde_json::from_str(lock_json)
        .map_err(|e| with_store(corrupt(format!("runs.lock_json: {e}")), store))?;
    let mut lanes = LaneTable::default();
    for r in store.query(&schema::select(&LANES, true), &id)? {
        let text = |name: &str| {
            r.get(at(&LANES, name))
                .and_then(Value::text)
                .unwrap_or_default()
                .to_string()
        };
        lanes.intern(LaneKey {
            lane: text("lane"),
            provider: text("provider"),
            region: text("region"),
        });
    }
    let mut observations = Vec::new();
    let mut answer_tokens = Vec::new();
    for r in store.query(&schema::select(&REQUESTS, true), &id)? {
        let (o, tokens) = observation(&r).map_err(|e| with_store(corrupt(e), store))?;
        observations.push(o);
        answer_tokens.push(tokens);
    }
    let mut order: Vec<usize> = (0..observations.len()).collect();
    let lane_of = |o: &Observation| {
        lanes
            .lanes
            .get(o.lane as usize)
            .map_or("", |l| l.lane.as_str())
    };
    order.sort_by(|&i, &j| {
        let (a, b) = (&observations[i], &observations[j]);
        (a.round_index, lane_of(a), &a.request_id).cmp(&(b.round_index, lane_of(b), &b.request_id))
    });
    let observations: Vec<Observation> = order.iter().map(|&i| observations[i].clone()).collect();
    let answer_tokens: Vec<Option<u64>> = order.iter().map(|&i| answer_tokens[i]).collect();
    let mut metrics = metrics::compute(&MetricsInput {
        lock: &lock,
        lanes: &lanes,
        observations: &observations,
        plan: None,
        records_file: "store",
    });
    metrics.validity = stored_validity(store, &row.run_id)?;
    Ok(StoredRun {
        row: row.clone(),
        lock,
        lanes,
        observations,
        answer_tokens,
        metrics,
    })
}

/// The validity section stored with `run_id` (`run_validity.section_json`); `None` for a run
/// stored without one.
pub fn stored_validity(
    store: &mut Store,
    run_id: &str,
) -> Result<Option<openbench_common::validity::assess::ValiditySection>, StoreError> {
    let rows = store.query(
        "SELECT section_json FROM run_validity WHERE run_id = $1",
        &[Value::from(run_id)],
    )?;
    let Some(text) = rows.first().and_then(|r| r.first()).and_then(Value::text) else {
        return Ok(None);
    };
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| StoreError::Corrupt {
            store: store.name().to_string(),
            run_id: run_id.to_string(),
            detail: format!("run_validity.section_json: {e}"),
        })
}

/// One probe replica's spread as the store keeps it (`replica_validity`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaValidity {
    /// The replica (`eu#1`).
    pub replica: String,
    /// Its timed releases, and their send lag's p50, p99 and max, ms.
    pub send_lag_count: Option<i64>,
    /// Send-lag median, ms.
    pub send_lag_p50_ms: Option<f64>,
    /// Send-lag 99th percentile, ms.
    pub send_lag_p99_ms: Option<f64>,
    /// Largest send lag, ms.
    pub send_lag_max_ms: Option<f64>,
    /// Its probe's clock − the coordinator's, ms.
    pub clock_offset_ms: Option<f64>,
    /// The bound on that offset's error, ms.
    pub clock_offset_bound_ms: Option<f64>,
}

/// Each probe replica's send lag and clock offset stored with `run_id`, by replica; empty for a
/// run without replicas (or stored before they were kept).
pub fn stored_replica_validity(
    store: &mut Store,
    run_id: &str,
) -> Result<Vec<ReplicaValidity>, StoreError> {
    let rows = store.query(
        &schema::select(&schema::REPLICA_VALIDITY, true),
        &[Value::from(run_id)],
    )?;
    Ok(rows
        .iter()
        .map(|r| {
            let get = |name: &str| {
                r.get(at(&schema::REPLICA_VALIDITY, name))
                    .unwrap_or(&Value::Null)
            };
            ReplicaValidity {
                replica: get("replica").text().unwrap_or_default().to_string(),
                send_lag_count: get("send_lag_count").int(),
                send_lag_p50_ms: get("send_lag_p50_ms").real(),
                send_lag_p99_ms: get("send_lag_p99_ms").real(),
                send_lag_max_ms: get("send_lag_max_ms").real(),
                clock_offset_ms: get("clock_offset_ms").real(),
                clock_offset_bound_ms: get("clock_offset_bound_ms").real(),
            }
        })
        .collect())
}

fn with_store(e: StoreError, store: &Store) -> StoreError {
    match e {
        StoreError::Corrupt { run_id, detail, .. } => StoreError::Corrupt {
            store: store.name().to_string(),
            run_id,
            detail,
        },
        other => other,
    }
}

/// One stored request as the workflow's observation (the failure message is never stored).
fn observation(r: &[Value]) -> Result<(Observation, Option<u64>), String> {
    let get = |name: &str| r.get(at(&REQUESTS, name)).unwrap_or(&Value::Null);
    let text = |name: &str| get(name).text().map(str::to_string);
    let int = |name: &str| get(name).int();
    let uint = |name: &str| int(name).and_then(|i| u64::try_from(i).ok());
    let flag = |name: &str| int(name) == Some(1);
    let request_id = text("request_id").unwrap_or_default();
    let bad = |field: &str| {
        format!(
            "request {request_id}: {field} {:?} is not known",
            get(field)
        )
    };
    let outcome = text("outcome")
        .and_then(|l| labels::parse(&l))
        .ok_or_else(|| bad("outcome"))?;
    let class = text("class")
        .and_then(|l| labels::parse(&l))
        .ok_or_else(|| bad("class"))?;
    let family = text("family")
        .and_then(|f| Family::parse(&f))
        .ok_or_else(|| bad("family"))?;
    let error_type = match text("error_type") {
        Some(l) => Some(labels::parse(&l).ok_or_else(|| bad("error_type"))?),
        None => None,
    };
    let failure_error_type = match text("failure_error_type") {
        Some(l) => Some(labels::parse(&l).ok_or_else(|| bad("failure_error_type"))?),
        None => None,
    };
    let http_status = int("http_status").and_then(|s| u16::try_from(s).ok());
    let usage = flag("has_usage").then(|| {
        Box::new(Usage {
            prompt_tokens: uint("usage_prompt_tokens"),
            completion_tokens: uint("usage_completion_tokens"),
            total_tokens: uint("usage_total_tokens"),
            cached_tokens: uint("usage_cached_tokens"),
            // NULL in rows stored before migration 7: their cache writes were not kept.
            cache_write_tokens: uint("usage_cache_write_tokens"),
            reasoning_tokens: uint("usage_reasoning_tokens"),
        })
    });
    let o = Observation {
        request_id: request_id.clone(),
        round_index: uint("round_index").unwrap_or(0),
        item_id: text("item_id").unwrap_or_default(),
        lane: int("lane_index")
            .and_then(|i| u32::try_from(i).ok())
            .ok_or_else(|| bad("lane_index"))?,
        family,
        outcome,
        class,
        error_type,
        schema_valid: flag("schema_valid"),
        field_bits: int("field_bits")
            .and_then(|b| u16::try_from(b).ok())
            .unwrap_or(0),
        ttfo_ms: get("ttfo_ms").real(),
        ttfa_ms: get("ttfa_ms").real(),
        e2e_ms: get("e2e_ms").real(),
        tokens_per_second: get("tokens_per_second").real(),
        reasoning_tokens_before_answer: uint("reasoning_tokens_before_answer"),
        reasoning_emitted: flag("reasoning_emitted"),
        truncated_by_length: flag("truncated_by_length"),
        usage,
        model_mismatch: text("model_mismatch"),
        completed: flag("completed"),
        failure: (!flag("completed")).then(|| {
            Box::new(FailureInfo {
                outcome,
                error_type: failure_error_type,
                http_status,
                message: None,
            })
        }),
        out_of_round: flag("out_of_round"),
    };
    Ok((o, uint("answer_tokens")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_columns_are_found_by_name() {
        assert_eq!(at(&schema::RUNS, "run_id"), 0);
        assert_eq!(at(&REQUESTS, "request_id"), 1);
        assert_eq!(at(&REQUESTS, "nope"), usize::MAX);
    }
}
