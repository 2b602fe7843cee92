#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The record reader: last non-harness record wins, a lone harness record is kept, a half-written
//! last line is ignored, a broken middle line is an error naming file and line.

use openbench_common::record::{Outcome, TerminalRecord};
use openbench_micro_single_task::records::{RecordsError, read_final};
use std::io::Write;

fn rec(id: &str, outcome: Outcome, e2e: f64) -> String {
    let mut r = TerminalRecord::new("2026-01-01T00:00:00Z".into(), outcome);
    r.request_id = id.into();
    r.e2e_ms = Some(e2e);
    serde_json::to_string(&r).unwrap()
}

#[test]
fn keeps_the_last_real_record_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(f, "{}", rec("a", Outcome::HarnessError, 1.0)).unwrap();
    writeln!(f, "{}", rec("b", Outcome::Completed, 2.0)).unwrap();
    writeln!(f, "{}", rec("a", Outcome::Completed, 3.0)).unwrap();
    writeln!(f, "{}", rec("b", Outcome::HarnessError, 4.0)).unwrap(); // never replaces a real one
    writeln!(f, "{}", rec("c", Outcome::HarnessError, 5.0)).unwrap(); // all there is: kept
    write!(f, "{}", &rec("d", Outcome::Completed, 6.0)[..40]).unwrap(); // half-written
    drop(f);
    let read = read_final(&path, |r| (r.request_id, r.outcome, r.e2e_ms)).unwrap();
    assert_eq!(
        read.items,
        vec![
            ("a".to_string(), Outcome::Completed, Some(3.0)),
            ("b".to_string(), Outcome::Completed, Some(2.0)),
            ("c".to_string(), Outcome::HarnessError, Some(5.0)),
        ]
    );
    assert!(read.stats.ignored_partial_last_line);
    assert_eq!(read.stats.superseded, 2);
}

#[test]
fn a_broken_middle_line_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.jsonl");
    let body = format!(
        "{}\n{{broken\n{}\n",
        rec("a", Outcome::Completed, 1.0),
        rec("b", Outcome::Completed, 1.0)
    );
    std::fs::write(&path, body).unwrap();
    match read_final(&path, |r| r.request_id) {
        Err(RecordsError::BadLine { line, .. }) => assert_eq!(line, 2),
        other => panic!("expected a bad line, got {other:?}"),
    }
}
