//! Probe access: the bearer token every RPC carries, and the rule that a probe reachable from
//! other machines must use TLS and a token.
//!
//! The token is loaded once (from a file or an environment variable), kept out of `Debug`, and
//! checked by a tonic interceptor that compares SHA-256 digests in constant time, so neither the
//! token's content nor its length leaks through timing.

use crate::error::ProbeError;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::path::Path;
use subtle::ConstantTimeEq;
use tonic::{Request, Status};

/// Environment variable a probe (and the coordinator) reads the token from by default.
pub const TOKEN_ENV: &str = "OPENBENCH_PROBE_TOKEN";

/// The shared secret callers present as `authorization: Bearer <token>`. `Debug` hides it.
#[derive(Clone, PartialEq, Eq)]
pub struct ProbeToken(String);

impl std::fmt::Debug for ProbeToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProbeToken(<redacted>)")
    }
}

impl ProbeToken {
    /// A token from its text; surrounding whitespace (a file's final newline) is dropped.
    /// Refuses an empty token and one that cannot travel in an HTTP header.
    pub fn new(text: &str, source: &str) -> Result<ProbeToken, ProbeError> {
        let token = text.trim();
        if token.is_empty() {
            return Err(ProbeError::Token {
                source_name: source.to_string(),
                message: "the token is empty".into(),
            });
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ProbeError::Token {
                source_name: source.to_string(),
                message: "the token must be printable ASCII without spaces".into(),
            });
        }
        Ok(ProbeToken(token.to_string()))
    }

    /// Reads the token from `file` when given, else from the environment variable `env_var`;
    /// `None` when neither is set. A file that cannot be read is an error naming the file.
    pub fn load(file: Option<&Path>, env_var: &str) -> Result<Option<ProbeToken>, ProbeError> {
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|e| ProbeError::Token {
                source_name: path.display().to_string(),
                message: format!("cannot read the token file: {e}"),
            })?;
            return ProbeToken::new(&text, &path.display().to_string()).map(Some);
        }
        match std::env::var(env_var) {
            Ok(text) if !text.trim().is_empty() => {
                ProbeToken::new(&text, &format!("${env_var}")).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The `authorization` header value carrying this token.
    pub fn header_value(&self) -> String {
        format!("Bearer {}", self.0)
    }

    fn digest(&self) -> [u8; 32] {
        Sha256::digest(self.header_value().as_bytes()).into()
    }
}

/// Server-side interceptor: refuses every call without the right bearer token
/// (`UNAUTHENTICATED`). With no token configured it admits every call (loopback use).
#[derive(Clone, Debug, Default)]
pub struct RequireToken {
    expected: Option<[u8; 32]>,
}

impl RequireToken {
    /// Checks calls against `token`; `None` admits everything.
    pub fn new(token: Option<&ProbeToken>) -> RequireToken {
        RequireToken {
            expected: token.map(ProbeToken::digest),
        }
    }
}

impl tonic::service::Interceptor for RequireToken {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(expected) = &self.expected else {
            return Ok(request);
        };
        let presented = request
            .metadata()
            .get("authorization")
            .ok_or_else(|| Status::unauthenticated("this probe requires a bearer token"))?;
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        if bool::from(digest.ct_eq(expected)) {
            Ok(request)
        } else {
            Err(Status::unauthenticated(
                "the bearer token is not this probe's",
            ))
        }
    }
}

/// Client-side interceptor: adds the bearer token to every call (nothing when there is none).
#[derive(Clone, Debug, Default)]
pub struct AttachToken {
    value: Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>,
}

impl AttachToken {
    /// Attaches `token` to every call; `None` attaches nothing.
    pub fn new(token: Option<&ProbeToken>) -> Result<AttachToken, ProbeError> {
        let value = match token {
            Some(token) => Some(
                token
                    .header_value()
                    .parse()
                    .map_err(|_| ProbeError::Token {
                        source_name: "probe token".into(),
                        message: "the token cannot travel in a gRPC header".into(),
                    })?,
            ),
            None => None,
        };
        Ok(AttachToken { value })
    }
}

impl tonic::service::Interceptor for AttachToken {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.value {
            let mut value = value.clone();
            value.set_sensitive(true);
            request.metadata_mut().insert("authorization", value);
        }
        Ok(request)
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
    fn tokens_are_compared_whole_and_never_shown() {
        let token = ProbeToken::new(" secret-1\n", "test").unwrap();
        assert_eq!(format!("{token:?}"), "ProbeToken(<redacted>)");
        let mut check = RequireToken::new(Some(&token));
        let with = |value: &str| {
            let mut request = Request::new(());
            request
                .metadata_mut()
                .insert("authorization", value.parse().unwrap());
            request
        };
        assert!(check.call(with("Bearer secret-1")).is_ok());
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
        assert!(ProbeToken::new("  \n", "test").is_err());
        assert!(ProbeToken::new("two words", "test").is_err());
    }
}
