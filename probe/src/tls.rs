//! TLS for the probe link (rustls through tonic): the probe's certificate and key, an optional
//! client CA that turns on mutual TLS, and the coordinator's side (the CA it trusts and its own
//! client certificate). Files are PEM; every error names the file.

use crate::error::ProbeError;
use std::path::{Path, PathBuf};
use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

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

/// PEM files the coordinator's client uses towards `https://` probes.
#[derive(Debug, Clone, Default)]
pub struct ClientTlsFiles {
    /// CA that signed the probes' certificates; without it, the system's roots are trusted.
    pub ca: Option<PathBuf>,
    /// Client certificate and key, for probes that require mutual TLS.
    pub identity: Option<(PathBuf, PathBuf)>,
}

impl ClientTlsFiles {
    /// Reads the files into tonic's client TLS configuration.
    pub fn load(&self) -> Result<ClientTlsConfig, ProbeError> {
        let mut config = ClientTlsConfig::new();
        config = match &self.ca {
            Some(ca) => config.ca_certificate(Certificate::from_pem(read_pem(ca, "CA")?)),
            None => config.with_enabled_roots(),
        };
        if let Some((cert, key)) = &self.identity {
            config = config.identity(Identity::from_pem(
                read_pem(cert, "client certificate")?,
                read_pem(key, "client key")?,
            ));
        }
        Ok(config)
    }
}

/// Reads a PEM file, refusing one that holds no PEM block.
fn read_pem(path: &Path, role: &str) -> Result<Vec<u8>, ProbeError> {
    let error = |message: String| ProbeError::Tls {
        role: role.to_string(),
        path: path.display().to_string(),
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| error(format!("cannot read: {e}")))?;
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(error("holds no PEM block".into()));
    }
    Ok(bytes)
}
