//! The spec loader on arbitrary bytes: never panics; a spec it accepts has no problems and its
//! limits are within their maxima.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openbench_common::spec::Spec;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    if let Ok(spec) = Spec::parse(Path::new("fuzz.yaml"), data) {
        assert!(spec.problems().is_empty());
        assert!(spec.request.limits.problems().is_empty());
    }
});
