//! TLS of the probe server (rustls through tonic): the probe's certificate and key, and an
//! optional client CA that turns on mutual TLS. The caller's files ([`ClientTlsFiles`]) and the
//! PEM reader live in the contract crate ([`openbench_proto::link::tls`]); every error names the
//! file.

use crate::error::ProbeError;
pub use openbench_proto::link::tls::ClientTlsFiles;
use openbench_proto::link::tls::read_pem;
use std::path::PathBuf;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};

/// PEM files a probe serves TLS with.
#[derive(Debug, Clone)]
pub struct ServerTlsFiles {
    /// The probe's certificate chain.
    pub cert: PathBuf,
    /// The probe's private key.
    pub key: PathBuf,
    /// When set, callers must present a certificate signed by this CA (mutual TLS).
    pub client_ca: Option<PathBuf>,
}

impl ServerTlsFiles {
    /// Reads the files into tonic's server TLS configuration.
    pub fn load(&self) -> Result<ServerTlsConfig, ProbeError> {
        let identity = Identity::from_pem(
            read_pem(&self.cert, "certificate")?,
            read_pem(&self.key, "key")?,
        );
        let mut config = ServerTlsConfig::new().identity(identity);
        if let Some(ca) = &self.client_ca {
            config = config
                .client_ca_root(Certificate::from_pem(read_pem(ca, "client CA")?))
                .client_auth_optional(false);
        }
        Ok(config)
    }
}
