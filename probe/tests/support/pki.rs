//! A throwaway PKI on disk for probe tests: a server CA with a certificate for
//! `localhost`/`127.0.0.1`, and a separate client CA with one client certificate.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use openbench_probe::tls::{ClientTlsFiles, ServerTlsFiles};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use std::path::PathBuf;

/// A CA and the PEM files it signed, on disk.
pub struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    /// A server CA with a certificate for `localhost`/`127.0.0.1`, and a separate client CA with
    /// one client certificate.
    pub fn generate() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
        let server_ca = ca("test server CA");
        write("ca.pem", server_ca.pem());
        let (cert, key) = leaf(&server_ca, &["localhost", "127.0.0.1"]);
        write("server.pem", cert);
        write("server.key", key);
        let client_ca = ca("test client CA");
        write("client-ca.pem", client_ca.pem());
        let (cert, key) = leaf(&client_ca, &["coordinator"]);
        write("client.pem", cert);
        write("client.key", key);
        Pki { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn server(&self, mutual: bool) -> ServerTlsFiles {
        ServerTlsFiles {
            cert: self.path("server.pem"),
            key: self.path("server.key"),
            client_ca: mutual.then(|| self.path("client-ca.pem")),
        }
    }

    pub fn client(&self, identity: bool) -> ClientTlsFiles {
        ClientTlsFiles {
            ca: Some(self.path("ca.pem")),
            identity: identity.then(|| (self.path("client.pem"), self.path("client.key"))),
        }
    }
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

fn leaf(issuer: &CertifiedIssuer<'static, KeyPair>, names: &[&str]) -> (String, String) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, issuer)
        .unwrap();
    (cert.pem(), key.serialize_pem())
}
