//! Unit tests of [`super`]: migrations and generated statements.

use super::*;

#[test]
fn a_new_store_is_migrated_once_and_a_newer_one_is_refused() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("s.sqlite");
    let location = path.to_string_lossy().into_owned();
    let mut store = Store::open(&location).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(applied_version(&mut store).ok(), Some(7));
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
            vec![Value::Int(7)]
        ]
    );
    store
        .execute_batch("INSERT INTO schema_migrations (version, name) VALUES (8, 'future')")
        .unwrap_or_else(|e| panic!("{e}"));
    drop(store);
    match Store::open(&location) {
        Err(StoreError::NewerSchema { found, known, .. }) => assert_eq!((found, known), (8, 7)),
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
