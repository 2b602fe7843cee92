//! The rows of figures over a run's repeats (a load sweep's `load.repeats`, a paired run's
//! `plans.repeats`): one row per figure and repeat, and one row per figure across its repeats
//! (repeats with a value, mean, 95% t interval), each beginning with the figure's key columns.

use crate::StoreError;
use crate::backend::{Store, Value};
use crate::schema::{self, Table};

/// The rows gathered for one run, before they are inserted.
#[derive(Default)]
pub(super) struct RepeatRows {
    per_repeat: Vec<Vec<Value>>,
    across: Vec<Vec<Value>>,
}

impl RepeatRows {
    /// Adds one figure: `key` (its key columns), then per repeat the columns after the key
    /// (`per_repeat`), and its interval when it has one: (repeats, mean, low, high).
    pub(super) fn push(
        &mut self,
        key: &[Value],
        per_repeat: impl IntoIterator<Item = Vec<Value>>,
        across: Option<(u64, f64, f64, f64)>,
    ) {
        for columns in per_repeat {
            let mut row = key.to_vec();
            row.extend(columns);
            self.per_repeat.push(row);
        }
        if let Some((n, mean, low, high)) = across {
            let mut row = key.to_vec();
            row.extend([
                Value::from(n),
                Value::from(mean),
                Value::from(low),
                Value::from(high),
            ]);
            self.across.push(row);
        }
    }

    /// Inserts the rows into `per_repeat` and `across` (inside `publish`'s transaction).
    pub(super) fn insert(
        self,
        s: &mut Store,
        per_repeat: &Table,
        across: &Table,
    ) -> Result<(), StoreError> {
        if !self.per_repeat.is_empty() {
            s.execute_many(&schema::insert(per_repeat), &self.per_repeat)?;
        }
        if !self.across.is_empty() {
            s.execute_many(&schema::insert(across), &self.across)?;
        }
        Ok(())
    }
}
