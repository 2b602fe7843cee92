//! TLS files of the probe link (rustls through tonic): the coordinator's side (the CA it trusts
//! and its own client certificate for mutual TLS) and the PEM reader both sides use. Every error
//! names the file.

use super::LinkError;
use std::path::{Path, PathBuf};
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

/// PEM files a caller uses towards `https://` probes.
#[derive(Debug, Clone, Default)]
pub struct ClientTlsFiles {
    /// CA that signed the probes' certificates; without it, the system's roots are trusted.
    pub ca: Option<PathBuf>,
    /// Client certificate and key, for probes that require mutual TLS.
    pub identity: Option<(PathBuf, PathBuf)>,
}

impl ClientTlsFiles {
    /// Reads the files into tonic's client TLS configuration.
    pub fn load(&self) -> Result<ClientTlsConfig, LinkError> {
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

/// Reads a PEM file playing `role` (named in errors), refusing one that holds no PEM block.
pub fn read_pem(path: &Path, role: &str) -> Result<Vec<u8>, LinkError> {
    let error = |message: String| LinkError::Tls {
        role: role.to_string(),
        path: path.display().to_string(),
        message,
    };
    let bytes = openbench_common::input_file::read_regular(
        path,
        openbench_common::input_file::CREDENTIAL_FILE_BYTES,
    )
    .map_err(|e| error(format!("cannot read: {e}")))?;
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(error("holds no PEM block".into()));
    }
    Ok(bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_a_pem_block_is_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let der = dir.join("ca.der");
        std::fs::write(&der, [0x30, 0x82, 0x01, 0x0a]).unwrap();
        let err = read_pem(&der, "CA").unwrap_err().to_string();
        assert_eq!(err, format!("TLS CA {}: holds no PEM block", der.display()));
        let pem = dir.join("ca.pem");
        std::fs::write(
            &pem,
            "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        assert!(read_pem(&pem, "CA").is_ok());
        let missing = dir.join("missing.pem");
        let err = read_pem(&missing, "client key").unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "TLS client key {}: cannot read:",
                missing.display()
            )),
            "{err}"
        );
    }
}
