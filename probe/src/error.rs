//! The probe library's error type: setup problems only. A request that fails is never an error
//! here; it becomes a terminal record.

/// What can go wrong while setting a probe up (never while measuring).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A provider's adapter cannot be turned into requests.
    #[error("provider {provider}: {message}")]
    Adapter {
        /// Provider key.
        provider: String,
        /// What is wrong (names the field).
        message: String,
    },
    /// The HTTP client could not be built.
    #[error("provider {provider}: cannot build the HTTP client: {message}")]
    Client {
        /// Provider key.
        provider: String,
        /// What went wrong.
        message: String,
    },
    /// The gRPC server could not start.
    #[error("probe server: {message}")]
    Server {
        /// What went wrong.
        message: String,
    },
    /// The token or a TLS file of the probe link could not be used.
    #[error(transparent)]
    Link(#[from] openbench_proto::link::LinkError),
    /// The listen address is reachable from other machines but the probe is unprotected.
    #[error(
        "refusing to listen on {listen} without {missing}: a probe spends its provider keys for \
         whoever calls it (use a loopback address, add TLS and a token, or pass \
         --insecure-plaintext on a network you trust)"
    )]
    Exposure {
        /// The listen address.
        listen: String,
        /// What protection is missing.
        missing: String,
    },
}
