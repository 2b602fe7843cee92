//! Unit tests of [`super`]: migrations and generated statements.

use super::*;
use crate::StoreError;
use crate::backend::{Store, Value};

#[test]
fn a_new_store_is_migrated_once_and_a_newer_one_is_refused() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("s.sqlite");
    let location = path.to_string_lossy().into_owned();
    let mut store = Store::open(&location).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(applied_version(&mut store).ok(), Some(8));
    let tables = store
        .query(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
            &[],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = tables.iter().filter_map(|r| r[0].text()).collect();
    assert_eq!(
        names,
        [
            "lanes",
            "load_repeat_intervals",
            "load_repeats",
            "load_requests",
            "load_saturation",
            "load_steps",
            "metrics",
            "paired_pairs",
            "paired_repeat_intervals",
            "paired_repeats",
            "paired_wins",
            "replica_validity",
            "requests",
            "run_contracts",
            "run_validity",
            "runs",
            "schema_migrations",
            "snapshots",
            "validity_checks"
        ]
    );
    drop(store);
    // Opening again applies nothing (one row per version).
    let mut store = Store::open(&location).unwrap_or_else(|e| panic!("{e}"));
    let rows = store
        .query(
            "SELECT version FROM schema_migrations ORDER BY version",
            &[],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        rows,
        vec![
            vec![Value::Int(1)],
            vec![Value::Int(2)],
            vec![Value::Int(3)],
            vec![Value::Int(4)],
            vec![Value::Int(5)],
            vec![Value::Int(6)],
            vec![Value::Int(7)],
            vec![Value::Int(8)]
        ]
    );
    store
        .execute_batch("INSERT INTO schema_migrations (version, name) VALUES (9, 'future')")
        .unwrap_or_else(|e| panic!("{e}"));
    drop(store);
    match Store::open(&location) {
        Err(StoreError::NewerSchema { found, known, .. }) => assert_eq!((found, known), (9, 8)),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a store newer than the build was opened"),
    }
}

#[test]
fn statements_are_generated_from_the_table_description() {
    assert_eq!(
        insert(&METRICS),
        "INSERT INTO metrics (run_id, lane, family, metric, value) VALUES ($1, $2, $3, $4, $5)"
    );
    assert_eq!(
        select(&LANES, true),
        "SELECT run_id, lane_index, lane, provider, region, display_name, model, \
         input_price_per_mtok, output_price_per_mtok FROM lanes WHERE run_id = $1 \
         ORDER BY run_id, lane_index"
    );
    assert!(create_table(&METRICS).contains("value DOUBLE PRECISION,"));
    assert!(create_table(&METRICS).contains("metric TEXT NOT NULL,"));
}

#[test]
fn a_postgres_url_is_named_without_its_credentials() {
    // Every form: backend/location.rs.
    assert_eq!(
        crate::describe("postgres://bench:s3cret@db.example:5432/results?sslmode=disable"),
        "postgres://db.example:5432/results"
    );
    assert_eq!(crate::describe("results.sqlite"), "results.sqlite");
}

/// A store written by a build that knew migrations 1–6 (made here with their own DDL, as that
/// build ran it) is brought to the latest on open: its request row is kept, value for value, with NULL in
/// the new `usage_cache_write_tokens`, which a new row can then fill.
#[test]
fn a_store_at_migration_6_migrates_to_7_keeping_its_rows() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("v6.sqlite");
    let v6 = rusqlite::Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut ddl = vec![
        "CREATE TABLE schema_migrations (version BIGINT NOT NULL PRIMARY KEY, name TEXT NOT NULL)"
            .to_string(),
    ];
    for m in MIGRATIONS.iter().filter(|m| m.version <= 6) {
        ddl.push((m.ddl)());
        ddl.push(format!(
            "INSERT INTO schema_migrations VALUES ({}, '{}')",
            m.version, m.name
        ));
    }
    // One run and one request with usage, every NOT NULL column of migration 1 given.
    ddl.push(
        "INSERT INTO runs (run_id, workflow, mode, status, content_sha256, lock_sha256, \
         spec_sha256, dataset_release_hash, adapters_sha256, tokenizer, code_sha256, \
         program_version, model_label, families, regions, probes, locked_at, rounds, requests, \
         lock_json) VALUES ('R1', 'w', 'full', 'complete', 'c', 'l', 's', 'd', 'a', 'o200k', \
         'x', '0.1', 'm', 'f', 'r', 'p', 't', 1, 1, '{}')"
            .into(),
    );
    ddl.push(
        "INSERT INTO requests (run_id, request_id, round_index, lane_index, item_id, family, \
         started_at, outcome, class, correct, schema_valid, field_bits, reasoning_emitted, \
         truncated_by_length, completed, out_of_round, usage_prompt_tokens, \
         usage_completion_tokens, usage_cached_tokens, has_usage) VALUES ('R1', 'q1', 0, 0, \
         'i', 'fam', 't', 'completed', 'valid_result', 1, 1, 3, 0, 0, 1, 0, 1200, 40, 1000, 1)"
            .into(),
    );
    v6.execute_batch(&ddl.join(";\n"))
        .unwrap_or_else(|e| panic!("{e}"));
    drop(v6);

    let location = path.to_string_lossy().into_owned();
    let mut store = Store::open(&location).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(applied_version(&mut store).ok(), Some(8));
    let kept = store
        .query(
            "SELECT request_id, field_bits, usage_prompt_tokens, usage_completion_tokens, \
             usage_cached_tokens, has_usage, usage_cache_write_tokens FROM requests",
            &[],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        kept,
        vec![vec![
            Value::from("q1"),
            Value::Int(3),
            Value::Int(1200),
            Value::Int(40),
            Value::Int(1000),
            Value::Int(1),
            Value::Null
        ]]
    );
    // The migrated table takes every column this build inserts.
    let mut row: Vec<Value> = REQUESTS.columns.iter().map(|_| Value::Null).collect();
    for (name, value) in [
        ("run_id", Value::from("R1")),
        ("request_id", Value::from("q2")),
        ("round_index", Value::Int(1)),
        ("lane_index", Value::Int(0)),
        ("item_id", Value::from("i")),
        ("family", Value::from("fam")),
        ("started_at", Value::from("t")),
        ("outcome", Value::from("completed")),
        ("class", Value::from("valid_result")),
        ("correct", Value::Int(1)),
        ("schema_valid", Value::Int(1)),
        ("field_bits", Value::Int(0)),
        ("reasoning_emitted", Value::Int(0)),
        ("truncated_by_length", Value::Int(0)),
        ("completed", Value::Int(1)),
        ("out_of_round", Value::Int(0)),
        ("has_usage", Value::Int(1)),
        ("usage_cache_write_tokens", Value::Int(250)),
    ] {
        let at = REQUESTS.columns.iter().position(|c| c.name == name);
        row[at.unwrap_or_else(|| panic!("{name}"))] = value;
    }
    store
        .execute_many(&insert(&REQUESTS), &[row])
        .unwrap_or_else(|e| panic!("{e}"));
    let written = store
        .query(
            "SELECT request_id, usage_cache_write_tokens FROM requests ORDER BY request_id",
            &[],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        written,
        vec![
            vec![Value::from("q1"), Value::Null],
            vec![Value::from("q2"), Value::Int(250)]
        ]
    );
}

#[test]
fn a_table_is_created_without_the_columns_a_later_migration_added() {
    assert!(!create_table(&REQUESTS).contains("usage_cache_write_tokens"));
    assert_eq!(
        (MIGRATIONS[6].ddl)(),
        "ALTER TABLE requests ADD COLUMN usage_cache_write_tokens BIGINT"
    );
}
