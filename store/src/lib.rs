//! The results store: finished runs in a database — SQLite by default (one file, no server),
//! PostgreSQL for a team — with the history of every lane across runs, the regressions among
//! them, cost and token reconciliation, and exports (CSV, Parquet) any data tool reads.
//!
//! The store holds no derived truth of its own: publishing verifies a run directory as `report`
//! does and stores its lock, the records that count (scored) and the report's figures; `history`
//! rebuilds the observations from the stored rows and measures them with the report's own
//! metrics and `compare`'s bootstrap (`openbench-task-metrics`, shared with micro-single-task). Method and schema: docs/results-store.md.

pub mod backend;
pub mod cost;
mod error;
pub mod export;
pub mod history;
pub mod load;
pub mod publish;
pub mod schema;
pub mod snapshot;

pub use backend::{LocationError, Store, Value, describe};
pub use error::StoreError;
/// Enum labels as the run directory spells them (shared: a workflow labels the rows it hands
/// `publish` the same way).
pub use openbench_common::labels;
