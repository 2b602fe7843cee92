//! Published snapshots: the runs the site shows. Publishing a run to the store keeps it; naming
//! it as a snapshot, with an approval id (as a full run is approved), is the separate, deliberate
//! step that puts it on the leaderboard. Only a stored `complete` run can be a snapshot, and a
//! snapshot, once recorded, is never changed: recording it again with the same approval id does
//! nothing, with another approval id is refused.

use crate::StoreError;
use crate::backend::{Store, Value};
use crate::schema::{self, SNAPSHOTS};
use openbench_common::rundir::RunStatus;

/// One published snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The stored run it publishes.
    pub run_id: String,
    /// Who approved it (the id a reviewer gave, as `run --approval-id` takes).
    pub approval_id: String,
    /// When it was published (RFC 3339, UTC), stored so the site rebuilds byte-identical.
    pub published_at: String,
}

/// What recording a snapshot did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// The run was not a snapshot before.
    Added,
    /// The run was already published with this approval id: nothing changed.
    Unchanged,
}

/// Why a snapshot cannot be recorded.
fn refuse(run_id: &str, detail: impl Into<String>) -> StoreError {
    StoreError::Snapshot {
        run_id: run_id.to_string(),
        detail: detail.into(),
    }
}

/// Records `run_id` as a published snapshot approved by `approval_id` at `published_at`.
/// Refused: an empty approval id, a run the store does not hold, a run not stored as complete,
/// a run already published under another approval id.
pub fn publish(
    store: &mut Store,
    run_id: &str,
    approval_id: &str,
    published_at: &str,
) -> Result<Recorded, StoreError> {
    let approval_id = approval_id.trim();
    if approval_id.is_empty() {
        return Err(refuse(run_id, "a snapshot needs a non-empty approval id"));
    }
    store.transaction(|s| {
        let id = [Value::from(run_id)];
        let status = s.query("SELECT status FROM runs WHERE run_id = $1", &id)?;
        let Some(status) = status.first().and_then(|r| r.first()).and_then(Value::text) else {
            return Err(refuse(run_id, "the store holds no run with this id"));
        };
        if status != RunStatus::Complete.as_str() {
            return Err(refuse(
                run_id,
                format!("the run is stored as {status}: only a complete run can be published"),
            ));
        }
        let existing = s.query("SELECT approval_id FROM snapshots WHERE run_id = $1", &id)?;
        if let Some(prior) = existing
            .first()
            .and_then(|r| r.first())
            .and_then(Value::text)
        {
            if prior == approval_id {
                return Ok(Recorded::Unchanged);
            }
            return Err(refuse(
                run_id,
                format!(
                    "already published with approval id {prior:?}; a snapshot is not re-approved"
                ),
            ));
        }
        s.execute_many(
            &schema::insert(&SNAPSHOTS),
            &[vec![
                Value::from(run_id),
                Value::from(approval_id),
                Value::from(published_at),
            ]],
        )?;
        Ok(Recorded::Added)
    })
}

/// Every published snapshot, in run id order.
pub fn list(store: &mut Store) -> Result<Vec<Snapshot>, StoreError> {
    let rows = store.query(&schema::select(&SNAPSHOTS, false), &[])?;
    Ok(rows
        .iter()
        .map(|r| {
            let text = |i: usize| {
                r.get(i)
                    .and_then(Value::text)
                    .unwrap_or_default()
                    .to_string()
            };
            Snapshot {
                run_id: text(0),
                approval_id: text(1),
                published_at: text(2),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests;
