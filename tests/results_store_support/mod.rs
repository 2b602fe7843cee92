//! Shared helpers of the results-store tests (`results_store`, `results_store_unfinished`): the
//! store commands through the binary, and DuckDB (PyPI's `duckdb`, not our code) to read exports.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use crate::coordinator_support::run_bin;
use std::path::Path;
use std::process::Output;

/// Stdout then stderr of a finished command, as text.
pub fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

/// Runs a store command (`publish`, `history`, `export`) in `cwd` against `store`.
pub fn store_cmd(cwd: &Path, store: &str, args: &[&str]) -> Output {
    let mut all = args.to_vec();
    all.extend(["--store", store]);
    run_bin(cwd, &all, &[])
}

/// `publish --run-dir run_dir`, which must succeed; returns what it printed.
pub fn publish(cwd: &Path, store: &str, run_dir: &Path) -> String {
    let o = store_cmd(
        cwd,
        store,
        &["publish", "--run-dir", run_dir.to_str().unwrap()],
    );
    assert!(
        o.status.success(),
        "publish {}: {}",
        run_dir.display(),
        text(&o)
    );
    text(&o)
}

/// `history --out out --fail-on-regression` plus `extra`: its exit code and `history.md`.
pub fn history(cwd: &Path, store: &str, out: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let mut args = vec![
        "history",
        "--out",
        out.to_str().unwrap(),
        "--fail-on-regression",
    ];
    args.extend(extra);
    let o = store_cmd(cwd, store, &args);
    let md = std::fs::read_to_string(out.join("history.md")).unwrap_or_default();
    assert!(md.starts_with("# Results history"), "{}\n{md}", text(&o));
    (o.status.code(), md)
}

/// The lines of `md`'s section `## title`, up to the next `## ` heading.
pub fn section<'a>(md: &'a str, title: &str) -> Vec<&'a str> {
    md.split(&format!("## {title}\n"))
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_else(|| panic!("no section {title}:\n{md}"))
        .lines()
        .filter(|l| !l.is_empty())
        .collect()
}

/// Runs `sql` in DuckDB (PyPI's `duckdb`) and returns its first column, one line per row.
pub fn duckdb(sql: &str) -> Option<Vec<String>> {
    let o = std::process::Command::new("python3")
        .args([
            "-c",
            "import duckdb, sys\nfor row in duckdb.sql(sys.argv[1]).fetchall(): print(row[0])",
            sql,
        ])
        .output()
        .ok()?;
    o.status.success().then(|| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(String::from)
            .collect()
    })
}

/// True when python3 can import `duckdb`.
pub fn duckdb_available() -> bool {
    duckdb("SELECT 1").is_some_and(|rows| rows == ["1"])
}

/// The store's `runs` rows as (run id, status, requests), and its number of `requests` rows:
/// read through the store's own connection code, straight from the database.
pub fn stored(store: &str) -> (Vec<(String, String, i64)>, i64) {
    let mut db = openbench_store::Store::open(store).unwrap();
    let runs = db
        .query(
            "SELECT run_id, status, requests FROM runs ORDER BY run_id",
            &[],
        )
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                r[0].text().unwrap().to_string(),
                r[1].text().unwrap().to_string(),
                r[2].int().unwrap(),
            )
        })
        .collect();
    let requests = db.query("SELECT count(*) FROM requests", &[]).unwrap()[0][0]
        .int()
        .unwrap();
    (runs, requests)
}
