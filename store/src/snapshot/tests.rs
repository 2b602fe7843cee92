use super::*;
use crate::schema::RUNS;

/// A store holding two runs' `runs` rows (the other tables are not needed): one complete, one
/// failed.
fn store_with_runs(dir: &std::path::Path) -> Store {
    let path = dir.join("s.sqlite");
    let mut store = Store::open(&path.to_string_lossy()).unwrap_or_else(|e| panic!("{e}"));
    let row = |run_id: &str, status: &str| -> Vec<Value> {
        RUNS.columns
            .iter()
            .map(|c| match c.name {
                "run_id" => Value::from(run_id),
                "status" => Value::from(status),
                "rounds" | "requests" => Value::Int(0),
                "simulator_time_scale" | "started_at" | "finished_at" => Value::Null,
                _ => Value::from(""),
            })
            .collect()
    };
    store
        .execute_many(
            &schema::insert(&RUNS),
            &[row("run-done", "complete"), row("run-cut", "interrupted")],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    store
}

#[test]
fn only_a_complete_stored_run_is_published_and_never_re_approved() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut store = store_with_runs(dir.path());
    let at = "2026-12-06T10:00:00Z";
    let refused = |r: Result<Recorded, StoreError>| match r {
        Err(e) => e.to_string(),
        Ok(r) => panic!("published: {r:?}"),
    };
    assert!(refused(publish(&mut store, "run-done", "  ", at)).contains("non-empty approval id"));
    assert!(refused(publish(&mut store, "run-none", "OK-1", at)).contains("no run with this id"));
    assert!(
        refused(publish(&mut store, "run-cut", "OK-1", at))
            .contains("stored as interrupted: only a complete run")
    );
    assert_eq!(list(&mut store).ok(), Some(vec![]));

    assert_eq!(
        publish(&mut store, "run-done", "OK-1", at).ok(),
        Some(Recorded::Added)
    );
    let later = "2026-12-07T10:00:00Z";
    assert_eq!(
        publish(&mut store, "run-done", "OK-1", later).ok(),
        Some(Recorded::Unchanged)
    );
    assert!(
        refused(publish(&mut store, "run-done", "OK-2", later))
            .contains("already published with approval id \"OK-1\"")
    );
    assert_eq!(
        list(&mut store).ok(),
        Some(vec![Snapshot {
            run_id: "run-done".into(),
            approval_id: "OK-1".into(),
            published_at: at.into(),
        }])
    );
}
