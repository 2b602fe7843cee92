//! The store's versioned migrations: `schema_migrations` lists every version applied; opening a
//! store applies the missing ones in order, each in its own transaction, and refuses a store
//! newer than this build. A later version appends to [`MIGRATIONS`]; it never edits an applied
//! one: a table's DDL is made from its description without the columns a later migration added
//! ([`Column::added_in`]), which that migration adds with `ALTER TABLE … ADD COLUMN`.

use super::Kind::{Int, Real, Text};
use super::{
    Column, Kind, LOAD_REPEAT_INTERVALS, LOAD_REPEATS, PAIRED_PAIRS, PAIRED_REPEAT_INTERVALS,
    PAIRED_REPEATS, PAIRED_WINS, REPLICA_VALIDITY, RUN_CONTRACTS, RUN_VALIDITY, RUNS, SNAPSHOTS,
    TABLES, Table, VALIDITY_CHECKS,
};
use crate::StoreError;
use crate::backend::{Store, Value};

/// One schema version.
pub struct Migration {
    /// Version number (1, 2, …).
    pub version: i64,
    /// What it adds.
    pub name: &'static str,
    /// Its DDL.
    pub ddl: fn() -> String,
}

/// Every migration, oldest first.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "runs, lanes, requests, metrics",
        ddl: initial_schema,
    },
    Migration {
        version: 2,
        name: "load_steps, load_saturation, load_requests",
        ddl: load_schema,
    },
    Migration {
        version: 3,
        name: "snapshots",
        ddl: snapshot_schema,
    },
    Migration {
        version: 4,
        name: "run_validity, validity_checks",
        ddl: validity_schema,
    },
    Migration {
        version: 5,
        name: "paired_wins, paired_pairs, run_contracts",
        ddl: paired_contract_schema,
    },
    Migration {
        version: 6,
        name: "load_repeats, load_repeat_intervals, replica_validity",
        ddl: repeats_replicas_schema,
    },
    Migration {
        version: 7,
        name: "requests.usage_cache_write_tokens",
        ddl: cache_write_schema,
    },
    Migration {
        version: 8,
        name: "paired_repeats, paired_repeat_intervals",
        ddl: paired_repeats_schema,
    },
];

fn sql_type(kind: Kind) -> &'static str {
    match kind {
        Int => "BIGINT",
        Real => "DOUBLE PRECISION",
        Text => "TEXT",
    }
}

/// `CREATE TABLE` for one table as it was created: without the columns a later migration
/// added ([`Column::added_in`]); child tables reference `runs` and go with it.
pub fn create_table(table: &Table) -> String {
    let mut parts: Vec<String> = table
        .columns
        .iter()
        .filter(|c| c.added_in == 0)
        .map(|c| {
            let null = if c.nullable { "" } else { " NOT NULL" };
            format!("{} {}{null}", c.name, sql_type(c.kind))
        })
        .collect();
    parts.push(format!("PRIMARY KEY ({})", table.key.join(", ")));
    if table.name != RUNS.name {
        parts.push("FOREIGN KEY (run_id) REFERENCES runs (run_id) ON DELETE CASCADE".into());
    }
    format!(
        "CREATE TABLE {} (\n  {}\n)",
        table.name,
        parts.join(",\n  ")
    )
}

fn initial_schema() -> String {
    let mut ddl: Vec<String> = TABLES[..4].iter().map(create_table).collect();
    ddl.push("CREATE INDEX requests_by_lane ON requests (run_id, lane_index, round_index)".into());
    ddl.push("CREATE INDEX runs_by_start ON runs (started_at, run_id)".into());
    ddl.join(";\n")
}

fn load_schema() -> String {
    TABLES[4..7]
        .iter()
        .map(create_table)
        .collect::<Vec<_>>()
        .join(";\n")
}

fn validity_schema() -> String {
    [RUN_VALIDITY, VALIDITY_CHECKS]
        .iter()
        .map(create_table)
        .collect::<Vec<_>>()
        .join(";\n")
}

fn snapshot_schema() -> String {
    create_table(&SNAPSHOTS)
}

/// Self-contained (names its tables, not a slice of [`TABLES`]), so it can be renumbered.
fn paired_contract_schema() -> String {
    [PAIRED_WINS, PAIRED_PAIRS, RUN_CONTRACTS]
        .iter()
        .map(create_table)
        .collect::<Vec<_>>()
        .join(";\n")
}

/// Self-contained, as [`paired_contract_schema`].
fn repeats_replicas_schema() -> String {
    [LOAD_REPEATS, LOAD_REPEAT_INTERVALS, REPLICA_VALIDITY]
        .iter()
        .map(create_table)
        .collect::<Vec<_>>()
        .join(";\n")
}

/// Self-contained, as [`paired_contract_schema`].
fn paired_repeats_schema() -> String {
    [PAIRED_REPEATS, PAIRED_REPEAT_INTERVALS]
        .iter()
        .map(create_table)
        .collect::<Vec<_>>()
        .join(";\n")
}

/// Migration 7: prompt tokens written to the provider's cache (Anthropic's
/// `cache_creation_input_tokens`), so a stored run prices them as its report does.
fn cache_write_schema() -> String {
    add_columns(7)
}

/// `ALTER TABLE … ADD COLUMN` for every column migration `version` added to an existing table
/// (each nullable: a table's existing rows hold NULL in it).
fn add_columns(version: i64) -> String {
    TABLES
        .iter()
        .flat_map(|t| {
            t.columns
                .iter()
                .filter(move |c| c.added_in == version)
                .map(move |c: &Column| {
                    format!(
                        "ALTER TABLE {} ADD COLUMN {} {}",
                        t.name,
                        c.name,
                        sql_type(c.kind)
                    )
                })
        })
        .collect::<Vec<_>>()
        .join(";\n")
}

/// The newest schema version this build knows.
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Brings the store to [`latest_version`]; refuses a newer store.
pub fn migrate(store: &mut Store) -> Result<(), StoreError> {
    store.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (\
         version BIGINT NOT NULL PRIMARY KEY, name TEXT NOT NULL)",
    )?;
    let current = applied_version(store)?;
    if current > latest_version() {
        return Err(StoreError::NewerSchema {
            store: store.name().to_string(),
            found: current,
            known: latest_version(),
        });
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        store.transaction(|s| {
            // Two processes opening a fresh store at once: the loser's check inside the
            // transaction sees the winner's row and skips.
            if applied_version(s)? >= m.version {
                return Ok(());
            }
            s.execute_batch(&(m.ddl)())?;
            s.execute_many(
                "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                &[vec![Value::Int(m.version), Value::from(m.name)]],
            )
        })?;
    }
    Ok(())
}

/// The highest applied version (0 for a new store).
pub fn applied_version(store: &mut Store) -> Result<i64, StoreError> {
    let rows = store.query(
        "SELECT version FROM schema_migrations ORDER BY version",
        &[],
    )?;
    Ok(rows
        .iter()
        .filter_map(|r| r.first().and_then(Value::int))
        .max()
        .unwrap_or(0))
}
