//! The store's tables, described once in Rust: the migrations' DDL, the publish statements and
//! the exports (CSV headers, Parquet schemas) are all made from [`TABLES`].
//!
//! Versioned migrations (`migrations`): `schema_migrations` lists every version applied; opening
//! a store applies the missing ones in order, each in its own transaction, and refuses a store
//! that is newer than this build. A later version appends to [`MIGRATIONS`]; it never edits an
//! applied one (a column added to an existing table says which migration added it).

/// A column's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 64-bit integer (booleans are 0/1).
    Int,
    /// 64-bit float.
    Real,
    /// UTF-8 text.
    Text,
}

/// One column.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// Column name.
    pub name: &'static str,
    /// Type.
    pub kind: Kind,
    /// May be NULL.
    pub nullable: bool,
    /// 0: created with its table; N: added to the existing table by migration N (so the
    /// table's own `CREATE TABLE` leaves it out and migration N adds it).
    pub added_in: i64,
}

/// One table: columns in order, and the primary key (also the export's row order).
#[derive(Debug, Clone, Copy)]
pub struct Table {
    /// Table name.
    pub name: &'static str,
    /// Columns in order.
    pub columns: &'static [Column],
    /// Primary-key columns.
    pub key: &'static [&'static str],
}

const fn col(name: &'static str, kind: Kind) -> Column {
    Column {
        name,
        kind,
        nullable: false,
        added_in: 0,
    }
}

const fn opt(name: &'static str, kind: Kind) -> Column {
    Column {
        name,
        kind,
        nullable: true,
        added_in: 0,
    }
}

impl Column {
    /// This column, added to its existing table by migration `version` (nullable only: the
    /// table's earlier rows hold NULL).
    const fn added(self, version: i64) -> Column {
        Column {
            added_in: version,
            ..self
        }
    }
}

use Kind::{Int, Real, Text};

mod repeats;
pub use repeats::{
    LOAD_REPEAT_INTERVALS, LOAD_REPEATS, PAIRED_REPEAT_INTERVALS, PAIRED_REPEATS, REPLICA_VALIDITY,
};

/// One row per published run: its identity, status, input hashes and placement.
pub const RUNS: Table = Table {
    name: "runs",
    columns: &[
        col("run_id", Text),
        col("workflow", Text),
        col("mode", Text),
        col("status", Text),
        col("content_sha256", Text),
        col("lock_sha256", Text),
        col("spec_sha256", Text),
        col("dataset_release_hash", Text),
        col("adapters_sha256", Text),
        col("tokenizer", Text),
        col("code_sha256", Text),
        col("program_version", Text),
        col("model_label", Text),
        col("families", Text),
        col("regions", Text),
        col("probes", Text),
        opt("simulator_time_scale", Real),
        col("locked_at", Text),
        opt("started_at", Text),
        opt("finished_at", Text),
        col("rounds", Int),
        col("requests", Int),
        col("lock_json", Text),
    ],
    key: &["run_id"],
};

/// One row per lane of a run (provider × region), with the lock's prices.
pub const LANES: Table = Table {
    name: "lanes",
    columns: &[
        col("run_id", Text),
        col("lane_index", Int),
        col("lane", Text),
        col("provider", Text),
        col("region", Text),
        col("display_name", Text),
        col("model", Text),
        opt("input_price_per_mtok", Real),
        opt("output_price_per_mtok", Real),
    ],
    key: &["run_id", "lane_index"],
};

/// One row per request that counts (its final record), scored.
pub const REQUESTS: Table = Table {
    name: "requests",
    columns: &[
        col("run_id", Text),
        col("request_id", Text),
        col("round_index", Int),
        col("lane_index", Int),
        col("item_id", Text),
        col("family", Text),
        col("started_at", Text),
        opt("probe_id", Text),
        col("outcome", Text),
        col("class", Text),
        opt("error_type", Text),
        opt("failure_error_type", Text),
        opt("http_status", Int),
        col("correct", Int),
        col("schema_valid", Int),
        col("field_bits", Int),
        opt("ttfo_ms", Real),
        opt("ttfa_ms", Real),
        opt("e2e_ms", Real),
        opt("tokens_per_second", Real),
        opt("answer_tokens", Int),
        opt("reasoning_tokens_before_answer", Int),
        col("reasoning_emitted", Int),
        col("truncated_by_length", Int),
        col("completed", Int),
        opt("model_mismatch", Text),
        col("out_of_round", Int),
        opt("usage_prompt_tokens", Int),
        opt("usage_completion_tokens", Int),
        opt("usage_total_tokens", Int),
        opt("usage_cached_tokens", Int),
        opt("usage_reasoning_tokens", Int),
        col("has_usage", Int),
        // Prompt tokens written to the provider's cache (Anthropic's
        // `cache_creation_input_tokens`), priced at the cache-write price.
        opt("usage_cache_write_tokens", Int).added(7),
    ],
    key: &["run_id", "request_id"],
};

/// The report's figures, long form: one row per (run, lane, family or `pooled`, metric).
pub const METRICS: Table = Table {
    name: "metrics",
    columns: &[
        col("run_id", Text),
        col("lane", Text),
        col("family", Text),
        col("metric", Text),
        opt("value", Real),
    ],
    key: &["run_id", "lane", "family", "metric"],
};

/// A load run's figures per step and row (lane, provider over its regions, or `pooled`), as
/// the load report computes them.
pub const LOAD_STEPS: Table = Table {
    name: "load_steps",
    columns: &[
        col("run_id", Text),
        col("step", Int),
        col("row_name", Text),
        col("row_kind", Text),
        col("label", Text),
        col("model", Text),
        col("load", Real),
        col("achieved_per_s", Real),
        col("measured", Int),
        col("completed", Int),
        opt("request_throughput_per_s", Real),
        opt("output_tokens_per_s", Real),
        opt("ttfa_p50_ms", Real),
        opt("ttfa_p90_ms", Real),
        opt("ttfa_p99_ms", Real),
        opt("itl_p50_ms", Real),
        opt("itl_p90_ms", Real),
        opt("itl_p99_ms", Real),
        opt("e2e_p50_ms", Real),
        opt("e2e_p90_ms", Real),
        opt("e2e_p99_ms", Real),
        opt("tpot_p50_ms", Real),
        opt("tokens_per_s_p50", Real),
        col("goodput_fraction", Real),
        opt("goodput_per_s", Real),
        col("failed_rate_limited", Int),
        col("failed_http_4xx", Int),
        col("failed_http_5xx", Int),
        col("failed_timeout", Int),
        col("failed_transport_error", Int),
        col("failed_stream_limit_exceeded", Int),
        col("failed_stream_error", Int),
        col("harness_failures", Int),
        col("sustained", Int),
        opt("held_requests", Int),
        opt("held_short", Int),
    ],
    key: &["run_id", "step", "row_name"],
};

/// A load run's saturation points: per lane (and provider with several lanes) and kind of load
/// that ran; the point's columns are NULL when no step of that kind was sustained.
pub const LOAD_SATURATION: Table = Table {
    name: "load_saturation",
    columns: &[
        col("run_id", Text),
        col("row_name", Text),
        col("kind", Text),
        opt("step", Int),
        opt("label", Text),
        opt("load", Real),
        opt("achieved_per_s", Real),
    ],
    key: &["run_id", "row_name", "kind"],
};

/// One row per request of a load run's counted steps.
pub const LOAD_REQUESTS: Table = Table {
    name: "load_requests",
    columns: &[
        col("run_id", Text),
        col("request_id", Text),
        col("step", Int),
        col("lane", Text),
        col("started_at", Text),
        opt("scheduled_ms", Real),
        opt("sent_ms", Real),
        opt("ttfo_ms", Real),
        opt("ttfa_ms", Real),
        opt("e2e_ms", Real),
        col("outcome", Text),
        opt("error_type", Text),
        opt("http_status", Int),
        col("measured", Int),
        col("input_tokens", Int),
        opt("answer_tokens", Int),
        opt("usage_prompt_tokens", Int),
        opt("usage_completion_tokens", Int),
        opt("correct", Int),
        opt("held_tokens", Int),
    ],
    key: &["run_id", "request_id"],
};

/// One row per published snapshot: a stored complete run named for the site, with the approval
/// id that published it (as a full run names its approval) and when. Not in [`TABLES`]: a
/// snapshot is a decision about runs, not a run's data, so publishing and exporting a run leave
/// it alone.
pub const SNAPSHOTS: Table = Table {
    name: "snapshots",
    columns: &[
        col("run_id", Text),
        col("approval_id", Text),
        col("published_at", Text),
    ],
    key: &["run_id"],
};

/// One row per run that measured its own validity (docs/validity.md): whether every check
/// passed and the run's own timing error, which `compare` and `history` read.
pub const RUN_VALIDITY: Table = Table {
    name: "run_validity",
    columns: &[
        col("run_id", Text),
        col("passed", Int),
        col("failed_checks", Int),
        col("measured_error_ms", Real),
        col("section_json", Text),
    ],
    key: &["run_id"],
};

/// A paired run's round wins per compared lane, as the report computes them
/// (`artifacts/paired-comparisons.json`, METHODOLOGY §6): `win_share` = `wins` ÷
/// `rounds_with_winner` (the run's rounds in which a compared lane had an E2E). Lanes of the run
/// absent here were left out as configuration-incompatible.
pub const PAIRED_WINS: Table = Table {
    name: "paired_wins",
    columns: &[
        col("run_id", Text),
        col("lane", Text),
        col("wins", Real),
        col("rounds_with_e2e", Int),
        col("rounds_with_winner", Int),
        opt("win_share", Real),
    ],
    key: &["run_id", "lane"],
};

/// A paired run's E2E differences A − B per ordered pair of compared lanes over the rounds where
/// both had an E2E (nearest-rank p50/p95/p99, ms), with the count and the coverage (count ÷
/// rounds), as the report computes them. The run holds no interval for these: none is stored.
pub const PAIRED_PAIRS: Table = Table {
    name: "paired_pairs",
    columns: &[
        col("run_id", Text),
        col("lane_a", Text),
        col("lane_b", Text),
        col("count", Int),
        opt("coverage", Real),
        opt("e2e_diff_p50", Real),
        opt("e2e_diff_p95", Real),
        opt("e2e_diff_p99", Real),
    ],
    key: &["run_id", "lane_a", "lane_b"],
};

/// The request contract a run was sent under, read at publish time from the run: `streaming`
/// (both workflows always stream), the requests in flight per provider (1 in paired rounds;
/// NULL for a load run, whose steps set their own), the lock's `timeout_ms`, and the spec's
/// `request.reasoning_effort` (`''`: the spec sent none) when the spec the lock names is still
/// there with the locked bytes (`source` = `spec`); NULL when it is not (`source` = `lock`).
pub const RUN_CONTRACTS: Table = Table {
    name: "run_contracts",
    columns: &[
        col("run_id", Text),
        col("streaming", Int),
        opt("concurrency_per_provider", Int),
        col("timeout_ms", Int),
        opt("reasoning_effort", Text),
        col("source", Text),
    ],
    key: &["run_id"],
};

/// One row per check of a run's validity section.
pub const VALIDITY_CHECKS: Table = Table {
    name: "validity_checks",
    columns: &[
        col("run_id", Text),
        col("check_index", Int),
        col("item", Text),
        col("scope", Text),
        col("value", Real),
        col("threshold", Real),
        col("unit", Text),
        col("passed", Int),
    ],
    key: &["run_id", "check_index"],
};

/// Every data table, parents first (publish inserts in this order, deletes in reverse).
pub const TABLES: [Table; 17] = [
    RUNS,
    LANES,
    REQUESTS,
    METRICS,
    LOAD_STEPS,
    LOAD_SATURATION,
    LOAD_REQUESTS,
    RUN_VALIDITY,
    VALIDITY_CHECKS,
    PAIRED_WINS,
    PAIRED_PAIRS,
    RUN_CONTRACTS,
    LOAD_REPEATS,
    LOAD_REPEAT_INTERVALS,
    REPLICA_VALIDITY,
    PAIRED_REPEATS,
    PAIRED_REPEAT_INTERVALS,
];

/// `INSERT` of every column of `table`, with `$n` placeholders.
pub fn insert(table: &Table) -> String {
    let names: Vec<&str> = table.columns.iter().map(|c| c.name).collect();
    let marks: Vec<String> = (1..=names.len()).map(|i| format!("${i}")).collect();
    format!(
        "INSERT INTO {} ({}) VALUES ({})",
        table.name,
        names.join(", "),
        marks.join(", ")
    )
}

/// `SELECT` of every column of `table` in key order, optionally for one run.
pub fn select(table: &Table, one_run: bool) -> String {
    let names: Vec<&str> = table.columns.iter().map(|c| c.name).collect();
    let filter = if one_run { " WHERE run_id = $1" } else { "" };
    format!(
        "SELECT {} FROM {}{filter} ORDER BY {}",
        names.join(", "),
        table.name,
        table.key.join(", ")
    )
}

mod migrations;
pub use migrations::{
    MIGRATIONS, Migration, applied_version, create_table, latest_version, migrate,
};

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
