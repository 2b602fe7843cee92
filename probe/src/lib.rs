//! The probe: executes one timed streaming chat request per planned request and serves that over
//! gRPC.
//!
//! Read top-down: [`sse`] frames the byte stream, [`classify`] says what each chunk carried,
//! [`body`] builds the request from adapter data, [`executor`] runs the timed request (over
//! reqwest for `https://`, over [`plain_http`] for `http://`) and
//! [`record`] turns what it saw into a terminal record; [`server`] serves the tonic `Probe`
//! service, guarded by [`auth`], [`tls`] and [`connections`] (limits on connections that have
//! not shown the token): a coordinator's session ([`session_open`]) brings
//! the adapters and contract, one actor per provider executes them, and [`identity`] says who
//! the probe is. The caller's side of the
//! link ([`client`]) lives in the contract crate, so the coordinator needs no probe.

mod actor;
pub mod auth;
pub mod body;
pub mod classify;
pub mod connections;
pub mod dialect;
pub mod endpoint_policy;
pub use openbench_proto::link::client;
pub mod error;
pub mod executor;
pub mod genai_metrics;
pub mod genai_span;
mod health;
pub mod identity;
pub mod limits;
pub mod link;
pub mod plain_http;
pub mod record;
pub mod redact;
pub mod redact_forms;
pub mod release;
pub use openbench_common::semconv;
pub mod server;
mod service;
/// The most requests one probe holds in flight at once (a larger session is refused).
pub use service::MAX_PROBE_IN_FLIGHT;
pub mod session_open;
pub mod sse;
pub mod tls;
pub mod tool_fold;
mod transport;
pub use openbench_proto::trace_context;

pub use error::ProbeError;
pub use executor::Executor;
pub use openbench_common::credentials::{self, Credentials};
