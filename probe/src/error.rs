//! The probe library's error type: setup problems only. A request that fails is never an error
//! here; it becomes a terminal record.

/// What can go wrong while setting a probe up (never while measuring).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Credential environment variables that are neither in the environment nor in `.env`.
    #[error("missing credential variable(s): {}", names.join(", "))]
    MissingCredentials {
        /// The variable names (never their values).
        names: Vec<String>,
    },
    /// The `.env` file exists but could not be read.
    #[error("cannot read {path}: {message}")]
    DotEnv {
        /// Path of the file.
        path: String,
        /// What went wrong.
        message: String,
    },
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
        /// Which file (`certificate`, `key`, `client CA`, `CA`).
        role: String,
        /// Path of the file.
        path: String,
        /// What went wrong.
        message: String,
    },
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
    /// A probe could not be reached.
    #[error("probe at {url}: {message}")]
    Connect {
        /// The probe's URL.
        url: String,
        /// What went wrong.
        message: String,
    },
}
