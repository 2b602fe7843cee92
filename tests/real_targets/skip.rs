//! Skips that count as skips. A test that needs a real target (chromium, rotel, llama-server)
//! calls [`skip_or_fail`] when the target is missing. With `OPENBENCH_REQUIRE_REAL_TARGETS` set
//! (CI sets it) that is a failure. Otherwise the test prints `SKIPPED: …` and returns — which
//! cargo counts as passed — so it also leaves a marker file named after the test, holding the
//! reason, in the directory `OPENBENCH_SKIP_DIR` names: `scripts/test.sh` sets it and moves
//! each marked test from "passed" to "skipped" in its closing line.

use std::path::{Path, PathBuf};

/// Set: a missing real target fails its test instead of skipping it.
pub const REQUIRE_ENV: &str = "OPENBENCH_REQUIRE_REAL_TARGETS";
/// The directory where skipped tests leave their markers (set by `scripts/test.sh`).
pub const SKIP_DIR_ENV: &str = "OPENBENCH_SKIP_DIR";

/// Reports `test` as skipped because `why` (e.g. "chromium is not installed"), or panics when
/// real targets are required. The caller returns right after.
pub fn skip_or_fail(test: &str, why: &str) {
    if std::env::var_os(REQUIRE_ENV).is_some() {
        panic!("{REQUIRE_ENV} is set, so {test} cannot be skipped: {why}");
    }
    println!("SKIPPED: {test}: {why}");
    if let Some(dir) = std::env::var_os(SKIP_DIR_ENV)
        && let Err(e) = record_skip(Path::new(&dir), test, why)
    {
        panic!("{test}: cannot record the skip in {SKIP_DIR_ENV}: {e}");
    }
}

/// Writes the marker of a skipped `test` (its reason) into `dir`; returns its path.
pub fn record_skip(dir: &Path, test: &str, why: &str) -> Result<PathBuf, String> {
    let name: String = test
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, format!("{why}\n")).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// The results stores a test publishes to: an SQLite file in `dir`, and the PostgreSQL server
/// `deploy/postgres/test-server.sh` exports in `OPENBENCH_TEST_POSTGRES_URL` (without it, `test`
/// is reported skipped for PostgreSQL, or fails under [`REQUIRE_ENV`]).
// Not every test that includes this file (by path, from other crates too) publishes.
#[allow(dead_code)]
pub fn store_locations(dir: &Path, test: &str) -> Vec<String> {
    let mut locations = vec![dir.join("store.db").display().to_string()];
    match std::env::var("OPENBENCH_TEST_POSTGRES_URL") {
        Ok(url) => locations.push(url),
        Err(_) => skip_or_fail(
            test,
            "OPENBENCH_TEST_POSTGRES_URL is not set (deploy/postgres/test-server.sh starts one)",
        ),
    }
    locations
}
