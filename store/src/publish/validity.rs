//! A run's validity section as the store keeps it: one `run_validity` row (passed, failed
//! checks, the run's own timing error, the section's JSON) and one `validity_checks` row per
//! check. A run made before validity was measured has neither.

use crate::StoreError;
use crate::backend::{Store, Value};
use crate::schema::{self, REPLICA_VALIDITY, RUN_VALIDITY, VALIDITY_CHECKS};
use openbench_common::validity::assess::ValiditySection;
use std::collections::BTreeSet;

/// Inserts `section`'s rows for `run_id`.
pub(super) fn insert(
    s: &mut Store,
    run_id: &str,
    section: &ValiditySection,
) -> Result<(), StoreError> {
    let failed = section.failures().len() as u64;
    let json = serde_json::to_string(section).unwrap_or_default();
    let row = vec![
        Value::from(run_id),
        Value::from(section.passed()),
        Value::from(failed),
        Value::from(section.measured_error_ms()),
        Value::from(json),
    ];
    s.execute_many(&schema::insert(&RUN_VALIDITY), &[row])?;
    let checks: Vec<Vec<Value>> = section
        .checks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            vec![
                Value::from(run_id),
                Value::from(i as u64),
                Value::from(c.item.as_str()),
                Value::from(c.scope.as_str()),
                Value::from(c.value),
                Value::from(c.threshold),
                Value::from(c.unit.as_str()),
                Value::from(c.passed),
            ]
        })
        .collect();
    if !checks.is_empty() {
        s.execute_many(&schema::insert(&VALIDITY_CHECKS), &checks)?;
    }
    let replicas = replica_rows(run_id, section);
    if replicas.is_empty() {
        return Ok(());
    }
    s.execute_many(&schema::insert(&REPLICA_VALIDITY), &replicas)
}

/// One `replica_validity` row per probe replica the section names (its send lag, its link or
/// both: a replica key holds the `#` of `eu#1`).
fn replica_rows(run_id: &str, section: &ValiditySection) -> Vec<Vec<Value>> {
    let replicas: BTreeSet<&String> = section
        .replica_send_lag_ms
        .keys()
        .chain(
            section
                .clock
                .keys()
                .filter(|k| k.contains(openbench_common::spec::REPLICA_SEPARATOR)),
        )
        .collect();
    replicas
        .into_iter()
        .map(|replica| {
            let lag = section.replica_send_lag_ms.get(replica);
            let link = section.clock.get(replica);
            let mut row = vec![Value::from(run_id), Value::from(replica.as_str())];
            row.extend([
                Value::from(lag.map(|l| l.n as u64)),
                Value::from(lag.map(|l| l.p50)),
                Value::from(lag.map(|l| l.p99)),
                Value::from(lag.map(|l| l.max)),
                Value::from(link.map(|l| l.clock_offset_ms)),
                Value::from(link.map(|l| l.clock_offset_error_ms)),
            ]);
            row
        })
        .collect()
}
