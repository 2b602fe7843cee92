#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Load runs in the results store, end to end through the binary: two simulated closed-loop
//! sweeps (the embedded simulator's capacity model on loopback) — the second on a server with a
//! quarter of the slots, run with `results: {publish: true}` so `run` publishes it itself — are
//! published to SQLite (and, when `deploy/postgres/test-server.sh` runs, to PostgreSQL: the same
//! history byte for byte); the stored step figures are the load report's own, bit for bit;
//! `history` names the saturation point that fell and exits 3 under `--fail-on-regression`;
//! CSV and Parquet exports hold one row per request (DuckDB from PyPI reads them); `compare`
//! writes compare.html; the provider key is in nothing stored or exported.
//!
//! The saturation points come from the capacity model with wide margins: with 64-token answers
//! (TTFA 40 ms, then 63 gaps of 5 ms) a request is served in T = 355 ms. Four users on four
//! slots wait for nothing (E2E ≈ T, under the 1,000 ms SLO by 645 ms); four users on one slot
//! queue (E2E ≈ 4T = 1,420 ms, over it by 420 ms). So run 1 sustains 4 users and run 2 only 1.

mod coordinator_support;
mod real_targets;
mod results_store_support;

use coordinator_support::*;
use openbench_common::rundir::{FULL_RESULTS, counting_records};
use real_targets::postgres::own_database;
use real_targets::skip::skip_or_fail;
use results_store_support::*;
use std::path::{Path, PathBuf};

/// The URL `deploy/postgres/test-server.sh` exports.
const POSTGRES_ENV: &str = "OPENBENCH_TEST_POSTGRES_URL";
/// A provider key that must never reach the store or an export.
const SENTINEL: &str = "sk-load-store-sentinel-41c2e8";

/// Writes run `n`'s spec (1-based): four slots in run 1, one in run 2, which publishes itself.
fn spec(dir: &Path, n: usize) -> PathBuf {
    let slots = if n == 1 { 4 } else { 1 };
    let publish = if n == 2 {
        "results: {publish: true}\n"
    } else {
        ""
    };
    let text = format!(
        "benchmark: {{slug: load-store, workflow: load, schedule_version: load-store-v1}}
request: {{temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 20000,
  harness_grace_ms: 60000}}
providers:
  - {{key: p, endpoint: 'sim://plain?slots={slots}', model: m, max_tokens_field: max_tokens,
      auth: {{scheme: bearer, env: OPENBENCH_LOAD_STORE_KEY}}}}
dataset: {{source: ., manifest: none}}
simulator: {{time_scale: 1.0, seed: 7}}
run_root: runs
load:
  seed: 5
  phases: {{warmup_s: 0.5, measure: {{duration_s: 2}}, cooldown_s: 0}}
  steps: [{{model: closed, concurrency: 1}}, {{model: closed, concurrency: 4}}]
  slo: {{e2e_ms: 1000}}
  workload:
    kind: synthetic
    input_tokens: {{dist: fixed, tokens: 20}}
    output_tokens: {{dist: fixed, tokens: 64}}
  ignore_eos: [p]
{publish}"
    );
    let path = dir.join(format!("spec-{n}.yaml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn run(dir: &Path, n: usize, store: &str) -> PathBuf {
    let spec = spec(dir, n);
    let o = run_bin(
        dir,
        &[
            "run",
            "--workflow",
            "load",
            "--spec",
            spec.to_str().unwrap(),
            "--full",
            "--approve-full",
            "--approval-id",
            &format!("LOAD-STORE-{n}"),
        ],
        &[
            ("OPENBENCH_LOAD_STORE_KEY", SENTINEL),
            ("OPENBENCH_STORE", store),
        ],
    );
    assert!(o.status.success(), "run {n}: {}", text(&o));
    assert_eq!(
        text(&o).contains("published: run "),
        n == 2,
        "only run 2 publishes itself: {}",
        text(&o)
    );
    printed_run_dir(&o.stdout)
}

fn records(dir: &Path) -> usize {
    counting_records(&dir.join(FULL_RESULTS)).unwrap().len()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Every stored step row of the run equals the load report's own computation of its directory,
/// bit for bit (floats are stored as IEEE doubles).
fn assert_stored_as_computed(store: &str, dir: &Path) {
    let results = openbench_load::run::load_results(dir).unwrap();
    let m = openbench_load::report::compute::compute(&results);
    let mut db = openbench_store::Store::open(store).unwrap();
    let rows = db
        .query(
            "SELECT step, achieved_per_s, request_throughput_per_s, output_tokens_per_s, \
             ttfa_p99_ms, itl_p50_ms, e2e_p50_ms, tpot_p50_ms, goodput_fraction, goodput_per_s, \
             sustained, measured FROM load_steps WHERE run_id = $1 AND row_name = 'p' \
             ORDER BY step",
            &[openbench_store::Value::from(m.run_id.as_str())],
        )
        .unwrap();
    assert_eq!(rows.len(), m.steps.len());
    for (row, step) in rows.iter().zip(&m.steps) {
        let lane = &step.lanes[0].metrics;
        let real = |i: usize| row[i].real();
        assert_eq!(row[0].int(), Some(step.index as i64));
        assert_eq!(real(1), Some(lane.rate.achieved_per_s));
        assert_eq!(real(2), lane.request_throughput_per_s);
        assert_eq!(real(3), lane.output_tokens_per_s);
        assert_eq!(real(4), lane.ttfa_ms.p99);
        assert_eq!(real(5), lane.itl_ms.p50);
        assert_eq!(real(6), lane.e2e_ms.p50);
        assert_eq!(real(7), lane.tpot_ms.p50);
        assert_eq!(real(8), Some(lane.goodput.fraction));
        assert_eq!(real(9), lane.goodput.per_s);
        assert_eq!(row[10].int(), Some(i64::from(lane.sustained)));
        assert_eq!(row[11].int(), Some(lane.measured as i64));
        // Every TPOT p50 is the capacity model's 5 ms gap (63 gaps over 64 tokens), give or
        // take the client's timestamps: the figure is a real measurement, not a placeholder.
        assert!(
            (lane.tpot_ms.p50.unwrap() - 5.0).abs() < 2.0,
            "{:?}",
            lane.tpot_ms
        );
    }
    // The measured requests of each step are the request rows flagged measured.
    let counted = db
        .query(
            "SELECT s.step, s.measured, (SELECT count(*) FROM load_requests r WHERE \
             r.run_id = s.run_id AND r.step = s.step AND r.measured = 1 AND \
             r.outcome <> 'harness_error') FROM load_steps s WHERE s.run_id = $1 AND \
             s.row_name = 'p' ORDER BY s.step",
            &[openbench_store::Value::from(m.run_id.as_str())],
        )
        .unwrap();
    for r in counted {
        assert_eq!(r[1].int(), r[2].int(), "step {:?}", r[0]);
    }
}

#[test]
fn load_runs_publish_track_export_and_compare() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let sqlite_path = cwd.join("results.sqlite");
    let sqlite = sqlite_path.to_str().unwrap();
    let first = run(cwd, 1, sqlite);
    let out = publish(cwd, sqlite, &first);
    assert!(
        out.starts_with("published: run ")
            && out.contains(&format!("(complete, {} requests)", records(&first))),
        "{out}"
    );
    // One run: nothing compared, nothing regressed.
    let (code, md) = history(cwd, sqlite, &cwd.join("h1"), &["--workflow", "load"]);
    assert_eq!(code, Some(0), "{md}");
    assert_eq!(section(&md, "Regressions"), ["None."]);

    // Run 2 publishes itself (`results: {publish: true}`); publishing it again changes nothing.
    let second = run(cwd, 2, sqlite);
    let again = publish(cwd, sqlite, &second);
    assert!(again.starts_with("already published, unchanged"), "{again}");
    let (runs, paired_requests) = stored(sqlite);
    assert_eq!(paired_requests, 0, "a load run has no paired request rows");
    assert_eq!(runs.iter().map(|r| r.2).collect::<Vec<_>>(), {
        let mut by_id = vec![
            (
                first.file_name().unwrap().to_owned(),
                records(&first) as i64,
            ),
            (
                second.file_name().unwrap().to_owned(),
                records(&second) as i64,
            ),
        ];
        by_id.sort();
        by_id.into_iter().map(|r| r.1).collect::<Vec<_>>()
    });
    for dir in [&first, &second] {
        assert_stored_as_computed(sqlite, dir);
    }

    // History: the saturation point fell from 4 users to 1, a regression; exit 3.
    let (code, md) = history(cwd, sqlite, &cwd.join("h2"), &["--workflow", "load"]);
    assert_eq!(code, Some(3), "{md}");
    let regressions = section(&md, "Regressions");
    assert!(
        regressions
            .iter()
            .any(|l| l.contains(": p, saturation point (closed): 4 users → 1 user (-75.0%)")),
        "{md}"
    );
    let saturation = section(&md, "Saturation points");
    assert!(
        saturation[2].starts_with("| p | closed | #1 ")
            && saturation[2].contains("| closed c=4 | 4 users |"),
        "{saturation:?}"
    );
    assert!(
        saturation[3].starts_with("| p | closed | #2 ")
            && saturation[3].contains("| closed c=1 | 1 user |"),
        "{saturation:?}"
    );
    for figure in [
        "achieved/s",
        "requests/s",
        "output tokens/s",
        "TTFA p99",
        "goodput/s",
    ] {
        assert!(section(&md, "Steps")[0].contains(figure), "{figure}: {md}");
    }
    assert!(
        std::fs::read_to_string(cwd.join("h2/history.html"))
            .unwrap()
            .contains("<h2>Saturation points</h2>")
    );

    // Exports: one row per request of both runs, in CSV and in Parquet.
    let total = records(&first) + records(&second);
    for format in ["csv", "parquet"] {
        let o = store_cmd(
            cwd,
            sqlite,
            &["export", "--format", format, "--out", format],
        );
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            text(&o).contains(&format!("load_requests.{format} ({total} rows)")),
            "{}",
            text(&o)
        );
        assert!(!contains(
            &std::fs::read(cwd.join(format).join(format!("load_requests.{format}"))).unwrap(),
            SENTINEL
        ));
    }
    let csv = std::fs::read_to_string(cwd.join("csv/load_requests.csv")).unwrap();
    assert_eq!(csv.lines().count(), total + 1);
    assert!(csv.starts_with(
        "run_id,request_id,step,lane,started_at,scheduled_ms,sent_ms,ttfo_ms,ttfa_ms,e2e_ms,outcome,"
    ));
    if duckdb_available() {
        let parquet = cwd.join("parquet");
        let file = |t: &str| parquet.join(format!("{t}.parquet")).display().to_string();
        let rows = duckdb(&format!(
            "SELECT count(*) || ',' || count(DISTINCT run_id) || ',' || \
             count(*) FILTER (WHERE outcome = 'completed') FROM '{}'",
            file("load_requests")
        ))
        .unwrap();
        assert_eq!(rows, [format!("{total},2,{total}")]);
        // The steps' measured counts add up to the measured request rows, across the files.
        let joined = duckdb(&format!(
            "SELECT (SELECT sum(measured) + sum(harness_failures) FROM '{}' \
             WHERE row_kind = 'lane') || ',' || \
             (SELECT count(*) FROM '{}' WHERE measured = 1)",
            file("load_steps"),
            file("load_requests")
        ))
        .unwrap();
        let (steps, requests) = joined[0].split_once(',').unwrap();
        assert_eq!(steps, requests, "{joined:?}");
        assert!(steps.parse::<u64>().unwrap() > 0, "{joined:?}");
    } else {
        skip_or_fail(
            "results_store_load::exports_open_in_duckdb",
            "python3's duckdb is not installed (deploy/setup.sh installs it)",
        );
    }

    // Compare: compare.html beside compare.md and compare.json.
    let o = run_bin(
        cwd,
        &[
            "compare",
            first.to_str().unwrap(),
            second.to_str().unwrap(),
            "--out",
            "cmp",
            "--replicates",
            "100",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(cwd.join("cmp/compare.html")).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    assert!(
        page.contains("<h2>closed c=4 (step 1 in A, 1 in B)</h2>"),
        "{page}"
    );
    assert!(cwd.join("cmp/compare.md").is_file() && cwd.join("cmp/compare.json").is_file());
    assert!(!contains(&std::fs::read(&sqlite_path).unwrap(), SENTINEL));

    // The same runs in a real PostgreSQL (a database of this test's own) give the same history.
    let Ok(url) = std::env::var(POSTGRES_ENV) else {
        skip_or_fail(
            "results_store_load::postgres_history_matches_sqlite",
            &format!("{POSTGRES_ENV} is not set (deploy/postgres/test-server.sh starts one)"),
        );
        return;
    };
    let url = own_database(&url, "openbench_load_store_test");
    for dir in [&first, &second] {
        publish(cwd, &url, dir);
        assert_stored_as_computed(&url, dir);
    }
    let (code, pg_md) = history(cwd, &url, &cwd.join("h-pg"), &["--workflow", "load"]);
    assert_eq!(code, Some(3));
    assert_eq!(
        pg_md, md,
        "history.md differs between SQLite and PostgreSQL"
    );
    let o = store_cmd(cwd, &url, &["export", "--format", "csv", "--out", "csv-pg"]);
    assert!(o.status.success(), "{}", text(&o));
    for table in ["load_steps", "load_saturation", "load_requests", "lanes"] {
        let read = |d: &str| std::fs::read(cwd.join(d).join(format!("{table}.csv"))).unwrap();
        assert!(read("csv") == read("csv-pg"), "{table}.csv differs");
    }
    let again = publish(cwd, &url, &second);
    assert!(again.starts_with("already published, unchanged"), "{again}");
}
