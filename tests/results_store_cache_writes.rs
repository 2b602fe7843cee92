#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Prompt-cache writes through the results store (migration 7): a small micro-single-task run
//! on the simulator's prefix cache in the Anthropic dialect, whose usage reports
//! `cache_creation_input_tokens` (the first request of a shared prefix writes it, later ones
//! read it), is published to SQLite and to a real PostgreSQL. In both, the stored cache-write
//! tokens are the records', and the store's cost table prices them at the cache-write price
//! (1.25 × input: the spec gives none) to the same cost as the run's own report and as the
//! hand-computed cost of the records' usage.

mod coordinator_support;
mod real_targets;
mod results_store_support;

use coordinator_support::*;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir::{self as layout, counting_records};
use real_targets::postgres::own_database;
use real_targets::skip::skip_or_fail;
use results_store_support::*;

/// The URL `deploy/postgres/test-server.sh` exports.
const POSTGRES_ENV: &str = "OPENBENCH_TEST_POSTGRES_URL";

/// Usage sums over the completed records that reported usage.
#[derive(Debug, PartialEq)]
struct Sums {
    prompt: u64,
    cached: u64,
    written: u64,
    completion: u64,
}

fn sums(records: &[&TerminalRecord]) -> Sums {
    let mut s = Sums {
        prompt: 0,
        cached: 0,
        written: 0,
        completion: 0,
    };
    for u in records.iter().filter_map(|r| r.usage.as_ref()) {
        s.prompt += u.prompt_tokens.unwrap();
        s.cached += u.cached_tokens.unwrap_or(0);
        s.written += u.cache_write_tokens.unwrap_or(0);
        s.completion += u.completion_tokens.unwrap();
    }
    s
}

/// The cost by hand at the spec's prices: input 3.0, cached 0.3, cache writes 1.25 × 3.0 =
/// 3.75, output 15.0 USD per million tokens.
fn hand_cost(s: &Sums) -> f64 {
    ((s.prompt - s.cached - s.written) as f64 * 3.0
        + s.cached as f64 * 0.3
        + s.written as f64 * 3.75
        + s.completion as f64 * 15.0)
        / 1e6
}

/// The store's figures for the one stored run's one lane, checked against `expected`.
fn assert_stored(store: &str, expected: &Sums, cost: f64) {
    let mut s = openbench_store::Store::open(store).unwrap();
    let column = s
        .query(
            "SELECT CAST(sum(usage_cache_write_tokens) AS BIGINT) FROM requests WHERE has_usage = 1",
            &[],
        )
        .unwrap();
    assert_eq!(column[0][0].int(), Some(expected.written as i64), "{store}");
    let rows = openbench_store::load::runs(&mut s).unwrap();
    let [row] = rows.as_slice() else {
        panic!("{store}: {} runs", rows.len())
    };
    let run = openbench_store::load::run(&mut s, row).unwrap();
    let costs = openbench_store::cost::of_run(&run);
    let [c] = costs.as_slice() else {
        panic!("{store}: {costs:?}")
    };
    assert_eq!(c.cached_tokens, expected.cached, "{store}");
    assert_eq!(c.cache_write_tokens, expected.written, "{store}");
    assert_eq!(
        c.cache_write_cost_usd,
        Some(expected.written as f64 * 3.75 / 1e6),
        "{store}"
    );
    assert_eq!(c.cost_usd, Some(cost), "{store}");
    assert_eq!(run.metrics.providers[0].pooled.usage.cost_usd, Some(cost));
}

#[test]
fn cache_writes_are_stored_and_priced_as_the_report_prices_them() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let data = sample_dataset(cwd, "data", 20261206);
    let providers = [Prov {
        key: "claude".into(),
        profile: "plain?prefix_cache=on".into(),
        extra: "    api: anthropic-messages\n    price: {input_per_mtok: 3.0, output_per_mtok: 15.0, cached_input_per_mtok: 0.3}\n".into(),
    }];
    let spec = write_spec(cwd, &data, &providers, 2, 0.01, 5000);
    let o = run_bin(
        cwd,
        &[
            "run",
            "--spec",
            spec.to_str().unwrap(),
            "--full",
            "--approve-full",
            "--approval-id",
            "CACHE-WRITES-1",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let dir = printed_run_dir(&o.stdout);

    let records = counting_records(&dir.join(layout::FULL_RESULTS)).unwrap();
    let completed: Vec<&TerminalRecord> = records
        .values()
        .filter(|r| r.outcome == Outcome::Completed)
        .collect();
    let expected = sums(&completed);
    // The run wrote the cache and read it back: both kinds of cached token are exercised.
    assert!(expected.written > 0 && expected.cached > 0, "{expected:?}");
    let cost = hand_cost(&expected);

    // The run's own report prices the same usage to the same cost.
    let metrics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(layout::METRICS)).unwrap()).unwrap();
    let usage = &metrics["providers"][0]["pooled"]["usage"];
    assert_eq!(usage["prompt_tokens"], expected.prompt, "{usage}");
    assert_eq!(usage["completion_tokens"], expected.completion, "{usage}");
    assert_eq!(usage["cache_write_tokens"], expected.written, "{usage}");
    assert_eq!(usage["cached_tokens"], expected.cached, "{usage}");
    assert_eq!(usage["cost_usd"].as_f64(), Some(cost), "{usage}");

    let sqlite = cwd.join("results.sqlite");
    let sqlite = sqlite.to_str().unwrap();
    publish(cwd, sqlite, &dir);
    assert_stored(sqlite, &expected, cost);

    let Ok(url) = std::env::var(POSTGRES_ENV) else {
        skip_or_fail(
            "results_store_cache_writes::postgres",
            &format!("{POSTGRES_ENV} is not set (deploy/postgres/test-server.sh starts one)"),
        );
        return;
    };
    let url = own_database(&url, "openbench_cache_write_test");
    publish(cwd, &url, &dir);
    assert_stored(&url, &expected, cost);
}
