//! The probe: executes one timed streaming chat request per planned request and serves that over
//! gRPC.
//!
//! Read top-down: [`sse`] frames the byte stream, [`classify`] says what each chunk carried,
//! [`body`] builds the request from adapter data, [`executor`] runs the timed request and
//! [`record`] turns what it saw into a terminal record; [`server`] puts one actor per provider
//! behind the tonic `Probe` service, guarded by [`auth`] and [`tls`]; [`client`] is the caller's side.

mod actor;
pub mod auth;
pub mod body;
pub mod classify;
pub mod client;
pub mod credentials;
pub mod error;
pub mod executor;
pub mod record;
pub mod redact;
pub mod server;
pub mod sse;
pub mod tls;

pub use credentials::Credentials;
pub use error::ProbeError;
pub use executor::Executor;
