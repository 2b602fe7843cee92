//! A run's validity section as the store keeps it: one `run_validity` row (passed, failed
//! checks, the run's own timing error, the section's JSON) and one `validity_checks` row per
//! check. A run made before validity was measured has neither.

use crate::StoreError;
use crate::backend::{Store, Value};
use crate::schema::{self, RUN_VALIDITY, VALIDITY_CHECKS};
use openbench_common::validity::assess::ValiditySection;

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
    if checks.is_empty() {
        return Ok(());
    }
    s.execute_many(&schema::insert(&VALIDITY_CHECKS), &checks)
}
