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
}
