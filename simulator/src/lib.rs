//! openbench-simulator: a seeded, OpenAI-compatible provider simulator that streams SSE the way
//! real providers do, so the probe, the coordinator and the reports can be exercised end to end
//! on loopback with no credentials.
//!
//! - [`profile`]: ten provider profiles fitted to the seed snapshot, plus a `plain` reference.
//! - [`quirk`]: the fault and quirk catalogue, selectable per request.
//! - [`draft`]: a pure function from (profile, request, seeded draws) to the events of a response
//!   and their times; [`render`] turns a draft into a [`render::Replay`] (every byte and when).
//! - [`server`]: an axum server that replays them against the clock, one flushed write per
//!   chunk, and records write times for exact-schedule requests.

pub mod agent;
pub mod answer;
pub mod capacity;
pub mod coalesce;
pub mod dialect;
pub mod draft;
pub mod hostile;
pub mod prefix_cache;
pub mod profile;
pub mod quirk;
pub mod render;
pub mod request;
pub mod rng;
pub mod server;
pub mod sse;
pub mod tool_call;

#[cfg(test)]
mod shape_tests;

use openbench_common::workflow::CannedAnswer;

pub use profile::{Profile, profiles};
pub use quirk::{CATALOGUE, Quirk};
pub use server::{SimServer, WriteStamp, start};

/// How the simulator behaves, for every request it serves.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Multiplies every simulated delay (0.02 runs fifty times faster than life). Schedule-mode
    /// requests are never scaled.
    pub time_scale: f64,
    /// Base seed; each request's stream is seeded from (seed, profile, sha256 of its body).
    pub seed: u64,
    /// Profile served on `/v1/chat/completions`.
    pub default_profile: String,
    /// Known prompts and their correct and wrong answers.
    pub answers: Vec<CannedAnswer>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            time_scale: 1.0,
            seed: 0,
            default_profile: String::from("plain"),
            answers: Vec::new(),
        }
    }
}

/// Why the embedded profile table was refused.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// `simulator/profiles.yaml` does not parse.
    #[error("simulator/profiles.yaml: {0}")]
    Yaml(#[source] serde_saphyr::Error),
    /// A profile has a bad field ([`SimError::Profile`]).
    #[error(transparent)]
    Profile(Box<SimError>),
}

/// Everything that can go wrong in the simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The embedded profile table does not parse or fit (shared: the table is parsed once).
    #[error("profile table: {0}")]
    Table(#[source] std::sync::Arc<TableError>),
    /// One profile has a bad field.
    #[error("profile {profile}: {field}: {message}")]
    Profile {
        /// Profile name.
        profile: String,
        /// Field path.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// No profile has this name.
    #[error("unknown profile {name:?}; known: {known}")]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// Known names, comma-separated.
        known: String,
    },
    /// A quirk name that is not in the catalogue.
    #[error("unknown quirk {name:?} in {origin} (see `sim quirks`)")]
    UnknownQuirk {
        /// The name given.
        name: String,
        /// Where it came from (header or model suffix).
        origin: String,
    },
    /// A request body that is not JSON.
    #[error("bad request: body: not JSON: {source}")]
    BodyNotJson {
        /// The parser's error.
        source: serde_json::Error,
    },
    /// A request the simulator cannot serve.
    #[error("bad request: {field}: {message}")]
    BadRequest {
        /// The field or header at fault.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// `time_scale` is not a positive finite number.
    #[error("time_scale {0} must be positive and finite")]
    TimeScale(f64),
    /// The listener could not be bound or read.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Underlying error.
        source: std::io::Error,
    },
}
