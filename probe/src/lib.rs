//! The probe: executes one timed streaming chat request per planned request and serves that over
//! gRPC.
//!
//! Read top-down: [`sse`] frames the byte stream, [`classify`] says what each chunk carried,
//! [`body`] builds the request from adapter data, [`executor`] runs the timed request and
//! [`record`] turns what it saw into a terminal record; [`server`] puts one actor per provider
//! behind the tonic `Probe` service.

mod actor;
pub mod body;
pub mod classify;
pub mod error;
pub mod executor;
pub mod genai_metrics;
pub mod genai_span;
pub mod limits;
pub mod record;
pub mod redact;
pub use openbench_common::semconv;
pub mod server;
pub mod sse;
pub use openbench_proto::trace_context;

pub use error::ProbeError;
pub use executor::Executor;
pub use openbench_common::credentials::{self, Credentials};
