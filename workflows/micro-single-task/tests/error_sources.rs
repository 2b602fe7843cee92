#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Errors keep what caused them: an I/O failure under a report or a dataset load is still
//! reachable through `std::error::Error::source()`, not only as text in the message.

use openbench_common::workflow::Workflow;
use openbench_micro_single_task::MicroSingleTask;
use openbench_micro_single_task::dataset::load_release;
use std::error::Error;
use std::io::ErrorKind;

/// The first `std::io::Error` in `error`'s source chain (the error itself excluded).
fn io_source<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a std::io::Error> {
    let mut next = error.source();
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        next = e.source();
    }
    None
}

#[test]
fn a_report_on_a_directory_without_a_lock_keeps_the_not_found_error() {
    let dir = tempfile::tempdir().unwrap();
    let Err(err) = MicroSingleTask.report(dir.path(), &Default::default()) else {
        panic!("a directory without a lock is refused");
    };
    let io = io_source(&err).unwrap_or_else(|| panic!("no io::Error under {err:?}"));
    assert_eq!(io.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains("run-lock.json"), "{err}");
}

#[test]
fn a_dataset_without_its_manifest_keeps_the_not_found_error() {
    let dir = tempfile::tempdir().unwrap();
    let Err(err) = load_release(dir.path(), "manifest.json") else {
        panic!("a folder without a manifest is refused");
    };
    let io = io_source(&err).unwrap_or_else(|| panic!("no io::Error under {err:?}"));
    assert_eq!(io.kind(), ErrorKind::NotFound);
    let shown = err.to_string();
    assert!(shown.contains("cannot read manifest.json"), "{shown}");
}
