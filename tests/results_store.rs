#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The results store end to end, through the binary: three simulated runs published to SQLite
//! and to a real PostgreSQL give byte-identical `history.md`; a lane slowed by a known amount in
//! the third run is named as a regression with the right direction and fails
//! `--fail-on-regression`; publishing twice changes nothing; a run whose records fail
//! verification is refused; nothing stored or exported holds the provider key; and the Parquet
//! and CSV exports open in DuckDB (from PyPI, not our code) with the store's row counts.
//!
//! The planted regression uses the simulator's exact-schedule mode (`x-sim-schedule`, real
//! milliseconds, never scaled): the `slowed` lane's first write comes 5 ms after the request in
//! runs 1 and 2 and 205 ms after it in run 3, so each of its run-3 requests takes at least 208 ms
//! (a causal bound: a sleep is never shorter). Whether other changes (the machine's load moves
//! every lane a little between runs) are flagged is not asserted.

mod coordinator_support;
mod real_targets;
mod results_store_support;

use coordinator_support::*;
use real_targets::skip::skip_or_fail;
use results_store_support::*;
use std::path::{Path, PathBuf};

/// The URL `deploy/postgres/test-server.sh` exports.
const POSTGRES_ENV: &str = "OPENBENCH_TEST_POSTGRES_URL";
/// A provider key that must never reach the store or an export.
const SENTINEL: &str = "sk-store-sentinel-7f3a9c1e5b";
/// Items per family: 12 × 3 families = 36 rounds, above the bootstrap's 30-round minimum.
const ITEMS: usize = 12;

fn dataset() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/micro-single-task")
}

/// Writes the spec of run `n` (1-based): a seeded simulator profile with usage and prices, and
/// two exact-schedule lanes, `slowed` 200 ms slower in run 3.
fn spec(dir: &Path, n: usize) -> PathBuf {
    let first_write_ms = if n == 3 { 205 } else { 5 };
    let schedule = |name: &str, ms: u32| {
        format!(
            "    display_name: {name}\n    extra_headers: {{x-sim-schedule: \"{ms},1,1,1\"}}\n    auth: {{scheme: none}}\n"
        )
    };
    let providers = vec![
        Prov {
            key: "baseten".into(),
            profile: "baseten".into(),
            extra: "    display_name: Baseten\n    auth: {scheme: bearer, env: OPENBENCH_STORE_TEST_KEY}\n    include_usage: true\n    price: {input_per_mtok: 0.5, output_per_mtok: 2.0}\n".into(),
        },
        Prov {
            key: "steady".into(),
            profile: "plain".into(),
            extra: schedule("Steady", 5),
        },
        Prov {
            key: "slowed".into(),
            profile: "plain".into(),
            extra: schedule("Slowed", first_write_ms),
        },
    ];
    write_spec(dir, &dataset(), &providers, ITEMS, 0.01, 5000)
}

/// Makes run `n`; run 3's spec says `results: {publish: true}`, so `run` publishes it itself to
/// the store `OPENBENCH_STORE` names.
fn run(dir: &Path, n: usize) -> PathBuf {
    let spec = spec(dir, n);
    if n == 3 {
        let text = std::fs::read_to_string(&spec).unwrap();
        std::fs::write(&spec, format!("{text}results:\n  publish: true\n")).unwrap();
    }
    let store = dir.join("results.sqlite");
    let o = run_bin(
        dir,
        &[
            "run",
            "--spec",
            spec.to_str().unwrap(),
            "--full",
            "--approve-full",
            "--approval-id",
            &format!("STORE-{n}"),
        ],
        &[
            ("OPENBENCH_STORE_TEST_KEY", SENTINEL),
            ("OPENBENCH_STORE", store.to_str().unwrap()),
        ],
    );
    assert!(o.status.success(), "run {n}: {}", text(&o));
    assert_eq!(
        text(&o).contains("published: run "),
        n == 3,
        "only run 3 publishes itself: {}",
        text(&o)
    );
    printed_run_dir(&o.stdout)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

fn all_bytes_under(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            out.extend(std::fs::read(&path).unwrap());
        }
    }
    out
}

#[test]
fn three_runs_give_one_history_in_sqlite_and_postgres_and_the_planted_regression_fails_it() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let runs: Vec<PathBuf> = (1..=3).map(|n| run(cwd, n)).collect();
    let sqlite = cwd.join("results.sqlite");
    let sqlite = sqlite.to_str().unwrap();

    // Publishing: runs 1 and 2 by hand; run 3 published itself, so publishing it again, like
    // run 1 again, changes nothing.
    for dir in &runs[..2] {
        let said = publish(cwd, sqlite, dir);
        assert!(said.starts_with("published: run "), "{said}");
        assert!(
            said.contains(&format!("(complete, {} requests)", 3 * 3 * ITEMS)),
            "{said}"
        );
    }
    let again = publish(cwd, sqlite, &runs[0]);
    assert!(
        again.starts_with("already published, unchanged: run "),
        "{again}"
    );

    // A run whose records fail verification (a second committed record of one request) is
    // refused, naming the problem, and nothing is stored.
    let tampered = cwd.join("tampered");
    copy_dir(&runs[1], &tampered);
    let results = tampered.join("raw/results.jsonl");
    let first = std::fs::read_to_string(&results).unwrap();
    let line = first.lines().next().unwrap().to_string();
    std::fs::write(&results, format!("{first}{line}\n")).unwrap();
    let o = store_cmd(
        cwd,
        sqlite,
        &["publish", "--run-dir", tampered.to_str().unwrap()],
    );
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("not published"), "{}", text(&o));
    assert!(text(&o).contains("extra committed record"), "{}", text(&o));

    let (code, md) = history(cwd, sqlite, &cwd.join("history-sqlite"), &[]);
    if let Some(keep) = std::env::var_os("OPENBENCH_KEEP_HISTORY") {
        std::fs::write(keep, &md).unwrap();
    }
    assert_eq!(
        code,
        Some(3),
        "a regression fails --fail-on-regression\n{md}"
    );
    // Each complete run is compared with the previous one.
    assert!(md.contains("\nCompared: #1 → #2, #2 → #3.\n"), "{md}");
    let planted = *section(&md, "Regressions")
        .iter()
        .find(|l| l.starts_with("- #2 ") && l.contains(": Slowed, pooled: E2E p50 slower in B by "))
        .unwrap_or_else(|| {
            panic!("no E2E p50 regression of the slowed lane from run 2 to 3:\n{md}")
        });
    assert!(planted.contains("→ #3 "), "{planted}");
    // "E2E p50: A → B (+Δ ms, …)": B is at least 208 ms (205 + three 1 ms gaps), Δ = B − A.
    let figures = planted.split("E2E p50: ").nth(1).unwrap();
    let number = |s: &str| s.trim().replace(',', "").parse::<f64>().unwrap();
    let a = number(figures.split(" → ").next().unwrap());
    let b = number(
        figures
            .split(" → ")
            .nth(1)
            .unwrap()
            .split(" (")
            .next()
            .unwrap(),
    );
    let delta = number(
        figures
            .split(" (+")
            .nth(1)
            .unwrap()
            .split(" ms")
            .next()
            .unwrap(),
    );
    assert!(
        b >= 208.0,
        "every run-3 request of the slowed lane takes ≥ 208 ms: {planted}"
    );
    assert!(a < b, "{planted}");
    assert!((delta - (b - a)).abs() <= 0.11, "{planted}");
    // The interval is on the slower side: its lower end is above zero.
    let low = planted.split("95% interval +").nth(1);
    assert!(low.is_some(), "{planted}");
    // Against a chosen baseline (run 1), only the latest run is compared, with run 1: the
    // planted regression is named from #1, and no change from #2 remains.
    let id = |dir: &Path| dir.file_name().unwrap().to_str().unwrap().to_string();
    let (code, base_md) = history(
        cwd,
        sqlite,
        &cwd.join("history-baseline"),
        &["--baseline", &id(&runs[0])],
    );
    assert_eq!(code, Some(3), "{base_md}");
    assert!(base_md.contains("\nCompared: #1 → #3.\n"), "{base_md}");
    assert!(
        base_md.contains(&format!(
            "Each change is from the baseline run {} to the latest complete run,",
            id(&runs[0])
        )),
        "{base_md}"
    );
    let from_baseline = section(&base_md, "Regressions");
    let prefix = format!("- #1 {} → #3 {}: ", id(&runs[0]), id(&runs[2]));
    assert!(
        from_baseline.iter().all(|l| l.starts_with(&prefix)),
        "{base_md}"
    );
    assert!(
        from_baseline
            .iter()
            .any(|l| l.contains(": Slowed, pooled: E2E p50 slower in B by ")),
        "{base_md}"
    );
    assert!(
        section(&base_md, "Changes whose interval excludes zero")
            .iter()
            .all(|l| l.starts_with(&prefix)),
        "{base_md}"
    );
    let html = std::fs::read_to_string(cwd.join("history-sqlite/history.html")).unwrap();
    assert!(
        html.contains("Slowed, pooled: E2E p50 slower in B by"),
        "{html}"
    );

    // The store and its exports never hold the key.
    assert!(!contains(
        &std::fs::read(cwd.join("results.sqlite")).unwrap(),
        SENTINEL
    ));

    // Exports open in DuckDB with the store's row counts: 3 runs × 3 lanes × 3 families × ITEMS.
    let requests = 3 * 3 * 3 * ITEMS;
    if duckdb_available() {
        for format in ["parquet", "csv"] {
            let out = cwd.join(format!("export-{format}"));
            let o = store_cmd(
                cwd,
                sqlite,
                &["export", "--format", format, "--out", out.to_str().unwrap()],
            );
            assert!(o.status.success(), "{}", text(&o));
            assert!(
                text(&o).contains(&format!("requests.{format} ({requests} rows)")),
                "{}",
                text(&o)
            );
            let file = |t: &str| out.join(format!("{t}.{format}")).display().to_string();
            let count = |t: &str| duckdb(&format!("SELECT count(*) FROM '{}'", file(t))).unwrap();
            assert_eq!(count("requests"), [requests.to_string()]);
            assert_eq!(count("runs"), ["3"]);
            assert_eq!(count("lanes"), ["9"]);
            // Types and NULLs survive: the simulator's profile reports usage, schedule lanes never.
            let usage_rows = |provider: &str| {
                duckdb(&format!(
                    "SELECT count(*) FROM '{}' r JOIN '{}' l USING (run_id, lane_index) \
                     WHERE l.provider = '{provider}' AND r.usage_completion_tokens IS NOT NULL",
                    file("requests"),
                    file("lanes")
                ))
                .unwrap()
            };
            assert_ne!(usage_rows("baseten"), ["0"], "{format}");
            assert_eq!(usage_rows("steady"), ["0"], "{format}");
            if format == "parquet" {
                check_cost(&md, &file("requests"), &file("lanes"), &file("runs"));
            }
            assert!(!contains(&all_bytes_under(&out), SENTINEL));
        }
    } else {
        skip_or_fail(
            "results_store::exports_open_in_duckdb",
            "python3's duckdb is not installed (deploy/setup.sh installs it)",
        );
    }

    // The same runs in a real PostgreSQL give the same history, byte for byte.
    let Ok(url) = std::env::var(POSTGRES_ENV) else {
        skip_or_fail(
            "results_store::postgres_history_matches_sqlite",
            &format!("{POSTGRES_ENV} is not set (deploy/postgres/test-server.sh starts one)"),
        );
        return;
    };
    reset_postgres(&url);
    for dir in &runs {
        publish(cwd, &url, dir);
    }
    let (code, pg_md) = history(cwd, &url, &cwd.join("history-postgres"), &[]);
    assert_eq!(code, Some(3));
    assert_eq!(
        pg_md, md,
        "history.md differs between SQLite and PostgreSQL"
    );
    // Every stored value reads back the same, bit for bit: the CSV exports (floats in their
    // shortest round-trip form) of the two stores are identical.
    for (store, out) in [(sqlite, "csv-sqlite"), (url.as_str(), "csv-postgres")] {
        let o = store_cmd(cwd, store, &["export", "--format", "csv", "--out", out]);
        assert!(o.status.success(), "{}", text(&o));
    }
    for table in ["runs", "lanes", "requests", "metrics"] {
        let read = |dir: &str| std::fs::read(cwd.join(dir).join(format!("{table}.csv"))).unwrap();
        assert!(
            read("csv-sqlite") == read("csv-postgres"),
            "{table}.csv differs between SQLite and PostgreSQL"
        );
    }
    let o = store_cmd(
        cwd,
        &url,
        &["publish", "--run-dir", runs[2].to_str().unwrap()],
    );
    assert!(
        text(&o).starts_with("already published, unchanged"),
        "{}",
        text(&o)
    );
}

/// The latest run's cost and token reconciliation in `history.md`, against the same figures
/// taken by DuckDB from the exported records of the Baseten lane (the one reporting usage), over
/// its completed responses with usage: the token sums; the discrepancy between the provider's
/// visible completion tokens (completion − reasoning) and our o200k count, `visible / o200k − 1`;
/// the cached tokens and their cost at the input price (the spec gives no cached price); and the
/// cost, (prompt × 0.5 + completion × 2.0) / 10⁶ USD, per million output tokens and per correct
/// answer.
fn check_cost(md: &str, requests: &str, lanes: &str, runs: &str) {
    let row = duckdb(&format!(
        "SELECT count(*) FILTER (WHERE has_usage = 1) || ',' || count(*) || ',' || \
         sum(usage_prompt_tokens) || ',' || sum(usage_completion_tokens) || ',' || \
         sum(coalesce(usage_reasoning_tokens, 0)) FILTER (WHERE has_usage = 1) || ',' || \
         sum(coalesce(answer_tokens, 0)) FILTER (WHERE has_usage = 1) || ',' || \
         sum(correct) FILTER (WHERE has_usage = 1) || ',' || \
         sum(coalesce(usage_cached_tokens, 0)) FILTER (WHERE has_usage = 1) || ',' || \
         ((sum(usage_completion_tokens) - sum(coalesce(usage_reasoning_tokens, 0)) \
           FILTER (WHERE has_usage = 1))::DOUBLE \
          / (sum(coalesce(answer_tokens, 0)) FILTER (WHERE has_usage = 1)) - 1) \
         FROM '{requests}' r JOIN '{lanes}' l USING (run_id, lane_index) \
         WHERE l.provider = 'baseten' AND r.completed = 1 \
         AND r.run_id = (SELECT max(run_id) FROM '{runs}')"
    ))
    .unwrap();
    let parts: Vec<&str> = row[0].split(',').collect();
    let int = |i: usize| parts[i].parse::<u64>().unwrap();
    let (with_usage, completed, prompt, completion, reasoning, o200k, correct, cached) = (
        int(0),
        int(1),
        int(2),
        int(3),
        int(4),
        int(5),
        int(6),
        int(7),
    );
    let discrepancy: f64 = parts[8].parse().unwrap();
    assert!(with_usage > 0 && o200k > 0, "{row:?}");
    let row = md
        .lines()
        .find(|l| l.starts_with("| Baseten | ") && l.contains('$'))
        .unwrap_or_else(|| panic!("no cost row:\n{md}"));
    let cells: Vec<&str> = row.trim_end_matches(" |").split(" | ").collect();
    let count = |c: &str| c.replace(',', "").parse::<u64>().unwrap();
    assert_eq!(cells[1], format!("{with_usage} / {completed}"), "{row}");
    assert_eq!(count(cells[2]), completion, "{row}");
    assert_eq!(count(cells[3]), reasoning, "{row}");
    assert_eq!(count(cells[4]), o200k, "{row}");
    assert_eq!(cells[5], format!("{:+.2}%", discrepancy * 100.0), "{row}");
    let cost = (prompt as f64 * 0.5 + completion as f64 * 2.0) / 1e6;
    let usd = |c: &str| c.trim_start_matches('$').replace(',', "");
    // Cached tokens and their cost: no cached price in the spec, so the input price 0.5.
    assert_eq!(count(cells[6]), cached, "{row}");
    assert_eq!(
        usd(cells[7]),
        format!("{:.4}", cached as f64 * 0.5 / 1e6),
        "{row}"
    );
    // No cache writes reported (an OpenAI-dialect lane): none, at no cost.
    assert_eq!((cells[8], usd(cells[9])), ("0", "0.0000".into()), "{row}");
    assert_eq!(usd(cells[10]), format!("{cost:.4}"), "{row}");
    assert_eq!(
        usd(cells[11]),
        format!("{:.4}", cost / completion as f64 * 1e6),
        "{row}"
    );
    assert_eq!(
        usd(cells[12]),
        format!("{:.4}", cost / correct as f64),
        "{row}"
    );
}

/// Drops the store's tables so each test run starts from an empty database.
fn reset_postgres(url: &str) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client
        .batch_execute(
            "DROP TABLE IF EXISTS load_requests, load_saturation, load_steps, metrics, requests, \
             lanes, runs, snapshots, run_validity, validity_checks, paired_wins, paired_pairs, \
             run_contracts, load_repeats, load_repeat_intervals, replica_validity, paired_repeats, \
             paired_repeat_intervals, schema_migrations CASCADE",
        )
        .unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
