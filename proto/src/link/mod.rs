//! The caller's side of the probe link, and what both sides share: the bearer token
//! ([`token`]), the PEM files TLS is read from ([`tls`]) and the one connector to a probe
//! ([`client`]). It lives in the contract crate so the coordinator reaches probes without
//! depending on the probe; the probe's server side (token check, server TLS, exposure rule)
//! builds on these types.

pub mod client;
pub mod runtime;
pub mod session;
pub mod tls;
pub mod token;
pub mod transport;

pub use client::{
    ClientSecurity, KEEPALIVE_INTERVAL, KEEPALIVE_TIMEOUT, ProbeChannel, channel, connect,
    in_process_channel, link_client, probe_client,
};
pub use runtime::LinkRuntime;
pub use session::open_session;
pub use tls::ClientTlsFiles;
pub use token::{AttachToken, ProbeToken, TOKEN_ENV};
pub use transport::{InMemoryExecution, InProcessCall, InProcessProbe, ProbeTransport};

/// What can go wrong setting up the link (never a secret in the message).
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The probe token could not be loaded.
    #[error("probe token from {source_name}: {message}")]
    Token {
        /// Where the token came from (a file path or `$VARIABLE`, never the token).
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// A TLS certificate, key or CA file could not be used.
    #[error("TLS {role} {path}: {message}")]
    Tls {
        /// Which file (`certificate`, `key`, `client CA`, `CA`, ...).
        role: String,
        /// Path of the file (or the variables naming it).
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A probe could not be reached.
    #[error("probe at {url}: {message}")]
    Connect {
        /// The probe's URL.
        url: String,
        /// What went wrong.
        message: String,
    },
}
