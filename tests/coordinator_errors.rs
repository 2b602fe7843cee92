#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The coordinator's errors keep what caused them: the underlying error is reachable through
//! `Error::source()`, not only as text, while the message still names the file.

use openbench_coordinator::{CoordinatorError, prepare_inputs};
use openbench_micro_single_task::MicroSingleTask;
use std::error::Error;
use std::sync::Arc;

#[test]
fn a_missing_spec_keeps_the_io_error_as_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-spec.yaml");
    let err = match prepare_inputs(&missing, Arc::new(MicroSingleTask), "code") {
        Err(e) => e,
        Ok(_) => panic!("a missing spec was accepted"),
    };
    assert!(matches!(err, CoordinatorError::Setup { .. }), "{err:?}");
    assert!(err.to_string().contains("no-such-spec.yaml"), "{err}");
    // Walk the chain: Setup → SpecError::Read → io::Error (NotFound).
    let mut source = err.source();
    let mut kinds = Vec::new();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            kinds.push(io.kind());
        }
        source = s.source();
    }
    assert_eq!(kinds, vec![std::io::ErrorKind::NotFound]);
}
