//! The tables of migration 6: a repeated load sweep's figures per repeat and across repeats
//! (docs/load.md, "Repeats"), and each probe replica's send lag and clock offset from a run's
//! validity section (docs/validity.md); and of migration 7: a repeated paired run's headline
//! figures per repeat and across repeats (docs/methodology.md, "Repeats of paired rounds").

use super::Kind::{Int, Real, Text};
use super::{Table, col, opt};

/// A repeated load sweep's figures per repeat (`load.repeats`): one row per written step, row
/// (lane, provider or `pooled`), figure and repeat (1-based), with the run's step (`phase`,
/// `load_steps.step`) that repeat ran as.
pub const LOAD_REPEATS: Table = Table {
    name: "load_repeats",
    columns: &[
        col("run_id", Text),
        col("step", Int),
        col("row_name", Text),
        col("figure", Text),
        col("repeat", Int),
        col("phase", Int),
        opt("value", Real),
    ],
    key: &["run_id", "step", "row_name", "figure", "repeat"],
};

/// A repeated load sweep's figures across repeats: the mean over the repeats that had the
/// figure and its 95% Student t interval (docs/load.md, "Repeats").
pub const LOAD_REPEAT_INTERVALS: Table = Table {
    name: "load_repeat_intervals",
    columns: &[
        col("run_id", Text),
        col("step", Int),
        col("row_name", Text),
        col("figure", Text),
        col("repeats", Int),
        col("mean", Real),
        col("low", Real),
        col("high", Real),
    ],
    key: &["run_id", "step", "row_name", "figure"],
};

/// Each probe replica's send lag and clock offset from a run's validity section
/// (docs/validity.md): its releases' send-lag count, p50, p99 and max, and its link's clock
/// offset and bound. NULL where the section has one and not the other.
pub const REPLICA_VALIDITY: Table = Table {
    name: "replica_validity",
    columns: &[
        col("run_id", Text),
        col("replica", Text),
        opt("send_lag_count", Int),
        opt("send_lag_p50_ms", Real),
        opt("send_lag_p99_ms", Real),
        opt("send_lag_max_ms", Real),
        opt("clock_offset_ms", Real),
        opt("clock_offset_bound_ms", Real),
    ],
    key: &["run_id", "replica"],
};

/// A repeated paired run's headline figures per repeat (`plans.repeats`): one row per lane,
/// figure (`task_success_rate`, `ttfa_p50`, `ttfa_p99`, `e2e_latency_p50`, `e2e_latency_p99`,
/// `output_tokens_per_second_p50`) and repeat (1-based). NULL where the repeat had no population.
pub const PAIRED_REPEATS: Table = Table {
    name: "paired_repeats",
    columns: &[
        col("run_id", Text),
        col("lane", Text),
        col("figure", Text),
        col("repeat", Int),
        opt("value", Real),
    ],
    key: &["run_id", "lane", "figure", "repeat"],
};

/// A repeated paired run's headline figures across repeats: the mean over the repeats that had
/// the figure and its 95% Student t interval.
pub const PAIRED_REPEAT_INTERVALS: Table = Table {
    name: "paired_repeat_intervals",
    columns: &[
        col("run_id", Text),
        col("lane", Text),
        col("figure", Text),
        col("repeats", Int),
        col("mean", Real),
        col("low", Real),
        col("high", Real),
    ],
    key: &["run_id", "lane", "figure"],
};
