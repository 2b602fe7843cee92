//! The bearer token every call to a probe carries: loaded once (from a file or an environment
//! variable), kept out of `Debug`, and attached to each call by [`AttachToken`]. The probe checks
//! it with its own interceptor (`openbench_probe::auth::RequireToken`).

use super::LinkError;
use std::path::Path;
use tonic::metadata::{Ascii, MetadataValue};
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
    /// Refuses an empty token and one that cannot travel in an HTTP header; `source` (a path or
    /// `$VARIABLE`) names where it came from in errors.
    pub fn new(text: &str, source: &str) -> Result<ProbeToken, LinkError> {
        let token = text.trim();
        let refuse = |message: &str| LinkError::Token {
            source_name: source.to_string(),
            message: message.to_string(),
        };
        if token.is_empty() {
            return Err(refuse("the token is empty"));
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(refuse("the token must be printable ASCII without spaces"));
        }
        Ok(ProbeToken(token.to_string()))
    }

    /// Reads the token from `file` when given, else from the environment variable `env_var`;
    /// `None` when neither is set. A file that cannot be read is an error naming the file.
    pub fn load(file: Option<&Path>, env_var: &str) -> Result<Option<ProbeToken>, LinkError> {
        if let Some(path) = file {
            let text = openbench_common::input_file::read_regular_string(
                path,
                openbench_common::input_file::CREDENTIAL_FILE_BYTES,
            )
            .map_err(|e| LinkError::Token {
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

    /// The `authorization` header value carrying this token (what the probe compares).
    pub fn header_value(&self) -> String {
        format!("Bearer {}", self.0)
    }
}

/// Client-side interceptor: adds the bearer token to every call (nothing when there is none).
#[derive(Clone, Debug, Default)]
pub struct AttachToken {
    value: Option<MetadataValue<Ascii>>,
}

impl AttachToken {
    /// Attaches `token` to every call; `None` attaches nothing.
    pub fn new(token: Option<&ProbeToken>) -> Result<AttachToken, LinkError> {
        let value = match token {
            Some(token) => {
                let mut value: MetadataValue<Ascii> =
                    token.header_value().parse().map_err(|_| LinkError::Token {
                        source_name: "probe token".into(),
                        message: "the token cannot travel in a gRPC header".into(),
                    })?;
                // Kept out of tonic's and hyper's debug output.
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        Ok(AttachToken { value })
    }

    /// Attaches nothing (a probe in this process takes no token).
    pub fn none() -> AttachToken {
        AttachToken { value: None }
    }
}

impl tonic::service::Interceptor for AttachToken {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.value {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tonic::service::Interceptor;

    #[test]
    fn a_token_is_trimmed_checked_and_never_shown() {
        let token = ProbeToken::new(" secret-1\n", "test").unwrap();
        assert_eq!(format!("{token:?}"), "ProbeToken(<redacted>)");
        assert_eq!(token.header_value(), "Bearer secret-1");
        let err = ProbeToken::new("  \n", "$TOKEN").unwrap_err().to_string();
        assert_eq!(err, "probe token from $TOKEN: the token is empty");
        let err = ProbeToken::new("two words", "$TOKEN")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("two"), "{err}");
        assert!(ProbeToken::new("caf\u{e9}", "test").is_err());
    }

    #[test]
    fn the_token_is_attached_to_every_call_and_only_when_given() {
        let token = ProbeToken::new("secret-1", "test").unwrap();
        let mut attach = AttachToken::new(Some(&token)).unwrap();
        for _ in 0..2 {
            let sent = attach.call(Request::new(())).unwrap();
            let value = sent.metadata().get("authorization").unwrap();
            assert_eq!(value.to_str().unwrap(), "Bearer secret-1");
            assert!(value.is_sensitive());
        }
        let sent = AttachToken::new(None)
            .unwrap()
            .call(Request::new(()))
            .unwrap();
        assert!(sent.metadata().get("authorization").is_none());
    }

    #[test]
    fn a_token_file_is_read_and_named_when_unreadable() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("token");
        std::fs::write(&file, "from-file\n").unwrap();
        // A variable no test sets: only the file can supply the token.
        let loaded = ProbeToken::load(Some(&file), "OPENBENCH_LINK_TEST_UNSET").unwrap();
        assert_eq!(loaded.unwrap().header_value(), "Bearer from-file");
        assert_eq!(
            ProbeToken::load(None, "OPENBENCH_LINK_TEST_UNSET").unwrap(),
            None
        );
        let missing = tmp.path().join("missing");
        let err = ProbeToken::load(Some(&missing), "OPENBENCH_LINK_TEST_UNSET")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "probe token from {}: cannot read the token file:",
                missing.display()
            )),
            "{err}"
        );
    }
}
