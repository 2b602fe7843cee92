//! Probe access, the server's side: the check of the bearer token every RPC carries, and the
//! rule that a probe reachable from other machines must use TLS and a token. The token itself and
//! the caller's side live in the contract crate ([`openbench_proto::link`]), re-exported here.
//!
//! The check compares SHA-256 digests in constant time, so neither the token's content nor its
//! length leaks through timing.

use crate::connections::ConnectionMark;
use crate::error::ProbeError;
pub use openbench_proto::link::token::{AttachToken, ProbeToken, TOKEN_ENV};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use subtle::ConstantTimeEq;
use tonic::{Request, Status};

/// The digest the check compares: of the whole `authorization` header value.
fn digest(header_value: &[u8]) -> [u8; 32] {
    Sha256::digest(header_value).into()
}

/// Server-side interceptor: refuses every call without the right bearer token
/// (`UNAUTHENTICATED`). With no token configured it admits every call (loopback use). It marks
/// the call's connection ([`ConnectionMark`]) as called, and as authenticated when the call
/// passed, which lifts the connection limits from it.
#[derive(Clone, Debug, Default)]
pub struct RequireToken {
    expected: Option<[u8; 32]>,
}

impl RequireToken {
    /// Checks calls against `token`; `None` admits everything.
    pub fn new(token: Option<&ProbeToken>) -> RequireToken {
        RequireToken {
            expected: token.map(|t| digest(t.header_value().as_bytes())),
        }
    }
}

impl tonic::service::Interceptor for RequireToken {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let connection = request.extensions().get::<ConnectionMark>().cloned();
        if let Some(connection) = &connection {
            connection.called();
        }
        self.check(&request)?;
        if let Some(connection) = connection {
            connection.authenticated();
        }
        Ok(request)
    }
}

impl RequireToken {
    /// Whether `request` carries the token (always, with no token configured).
    fn check(&self, request: &Request<()>) -> Result<(), Status> {
        let Some(expected) = &self.expected else {
            return Ok(());
        };
        let presented = request
            .metadata()
            .get("authorization")
            .ok_or_else(|| Status::unauthenticated("this probe requires a bearer token"))?;
        if bool::from(digest(presented.as_bytes()).ct_eq(expected)) {
            Ok(())
        } else {
            Err(Status::unauthenticated(
                "the bearer token is not this probe's",
            ))
        }
    }
}

/// How a probe is protected, as far as the exposure rule cares.
#[derive(Debug, Clone, Copy)]
pub struct Exposure {
    /// The server speaks TLS.
    pub tls: bool,
    /// Every call must carry a token.
    pub token: bool,
    /// The operator asked for plaintext without a token anyway (`--insecure-plaintext`).
    pub insecure_plaintext: bool,
}

/// The exposure rule: a probe listening on anything but loopback needs TLS and a token, unless
/// the operator said `--insecure-plaintext`. `Ok(Some(warning))` is the loud message to print
/// at start when the rule was waived.
pub fn check_exposure(
    listen: SocketAddr,
    exposure: Exposure,
) -> Result<Option<String>, ProbeError> {
    if listen.ip().is_loopback() || (exposure.tls && exposure.token) {
        return Ok(None);
    }
    let mut missing = Vec::new();
    if !exposure.tls {
        missing.push("TLS (--tls-cert and --tls-key)");
    }
    if !exposure.token {
        missing.push("a token (--token-file or $OPENBENCH_PROBE_TOKEN)");
    }
    let missing = missing.join(" and ");
    if exposure.insecure_plaintext {
        return Ok(Some(format!(
            "WARNING: --insecure-plaintext: this probe listens on {listen} without {missing}; \
             anyone who can reach it can spend its provider keys"
        )));
    }
    Err(ProbeError::Exposure {
        listen: listen.to_string(),
        missing,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tonic::service::Interceptor;

    fn exposure(tls: bool, token: bool, insecure_plaintext: bool) -> Exposure {
        Exposure {
            tls,
            token,
            insecure_plaintext,
        }
    }

    #[test]
    fn loopback_needs_nothing_and_other_addresses_need_tls_and_a_token() {
        let loopback: SocketAddr = "127.0.0.1:7070".parse().unwrap();
        let v6_loopback: SocketAddr = "[::1]:7070".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:7070".parse().unwrap();
        assert_eq!(
            check_exposure(loopback, exposure(false, false, false)).unwrap(),
            None
        );
        assert_eq!(
            check_exposure(v6_loopback, exposure(false, false, false)).unwrap(),
            None
        );
        assert_eq!(
            check_exposure(any, exposure(true, true, false)).unwrap(),
            None
        );
        let err = check_exposure(any, exposure(true, false, false)).unwrap_err();
        assert!(err.to_string().starts_with(
            "refusing to listen on 0.0.0.0:7070 without a token (--token-file or $OPENBENCH_PROBE_TOKEN)"
        ), "{err}");
        let err = check_exposure(any, exposure(false, true, false)).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "refusing to listen on 0.0.0.0:7070 without TLS (--tls-cert and --tls-key):"
            ),
            "{err}"
        );
        let warning = check_exposure(any, exposure(false, false, true))
            .unwrap()
            .unwrap();
        assert!(
            warning.starts_with("WARNING: --insecure-plaintext"),
            "{warning}"
        );
        assert!(
            warning.contains("without TLS (--tls-cert and --tls-key) and a token"),
            "{warning}"
        );
    }

    #[test]
    fn tokens_are_compared_whole() {
        let token = ProbeToken::new(" secret-1\n", "test").unwrap();
        let mut check = RequireToken::new(Some(&token));
        let with = |value: &str| {
            let mut request = Request::new(());
            request
                .metadata_mut()
                .insert("authorization", value.parse().unwrap());
            request
        };
        assert!(check.call(with("Bearer secret-1")).is_ok());
        let err = check.call(Request::new(())).unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unauthenticated);
        for wrong in [
            "Bearer secret-2",
            "Bearer secret-",
            "Bearer secret-11",
            "secret-1",
        ] {
            let err = check.call(with(wrong)).unwrap_err();
            assert_eq!(err.code(), tonic::Code::Unauthenticated, "{wrong}");
        }
        let mut attach = AttachToken::new(Some(&token)).unwrap();
        let sent = attach.call(Request::new(())).unwrap();
        assert!(check.call(sent).is_ok());
        let unchecked = RequireToken::new(None).call(Request::new(()));
        assert!(unchecked.is_ok());
    }
}
