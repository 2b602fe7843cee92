//! Credentials: the secret values a probe reads from its own environment, never from the
//! coordinator, never printed. Shared by the probe (which sends them) and the binary and
//! coordinator (which check up front that every declared one is present).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A credential problem, naming variables and files, never values.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// Credential environment variables that are neither in the environment nor in `.env`.
    #[error("missing credential variable(s): {}", names.join(", "))]
    Missing {
        /// The variable names (never their values).
        names: Vec<String>,
    },
    /// The `.env` file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    DotEnv {
        /// Path of the file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A value begins or ends with whitespace (a stray space in the environment or inside a
    /// quoted `.env` value): HTTP would drop it, so the provider's echo of the key would escape
    /// redaction. Names the variable, never the value.
    #[error(
        "credential variable {name} begins or ends with whitespace: remove it (in the environment or .env)"
    )]
    Whitespace {
        /// The variable name.
        name: String,
    },
    /// A line of the `.env` file is not `KEY=VALUE` (the line is not quoted: it may be a secret).
    #[error("{path}: a line is not KEY=VALUE (error at character {index})")]
    DotEnvLine {
        /// Path of the file.
        path: PathBuf,
        /// Where dotenvy stopped parsing.
        index: usize,
    },
}

/// Secret values by environment variable name. `Debug` shows names only.
#[derive(Clone, Default)]
pub struct Credentials {
    values: BTreeMap<String, String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("names", &self.values.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Credentials {
    /// No credentials (local servers, the simulator).
    pub fn empty() -> Credentials {
        Credentials::default()
    }

    /// Credentials from explicit pairs (tests, `probe once`); values are trimmed, as HTTP
    /// trims a header value.
    pub fn from_pairs<I, K, V>(pairs: I) -> Credentials
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Credentials {
            values: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into().trim().to_string()))
                .collect(),
        }
    }

    /// Reads every name from the process environment, then from `.env` in the current directory
    /// for names the environment lacks (`.env` never overrides the environment). The error names
    /// every missing variable, never a value.
    pub fn from_env(names: &[String]) -> Result<Credentials, CredentialsError> {
        Credentials::from_env_and_file(names, Path::new(".env"))
    }

    /// [`Credentials::from_env`] with an explicit `.env` path.
    pub fn from_env_and_file(
        names: &[String],
        dotenv: &Path,
    ) -> Result<Credentials, CredentialsError> {
        let mut values = BTreeMap::new();
        let mut missing = Vec::new();
        let mut file: Option<BTreeMap<String, String>> = None;
        for name in names {
            if let Some(v) = std::env::var(name).ok().filter(|v| !v.is_empty()) {
                values.insert(name.clone(), v);
                continue;
            }
            if file.is_none() {
                file = Some(read_dotenv(dotenv)?);
            }
            match file.as_ref().and_then(|f| f.get(name)) {
                Some(v) if !v.is_empty() => {
                    values.insert(name.clone(), v.clone());
                }
                _ => missing.push(name.clone()),
            }
        }
        if let Some((name, _)) = values.iter().find(|(_, v)| v.trim() != v.as_str()) {
            return Err(CredentialsError::Whitespace { name: name.clone() });
        }
        if missing.is_empty() {
            Ok(Credentials { values })
        } else {
            Err(CredentialsError::Missing { names: missing })
        }
    }

    /// The value of one variable.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Every secret value, for redaction.
    pub fn secret_values(&self) -> impl Iterator<Item = &str> {
        self.values.values().map(String::as_str)
    }

    /// Every variable name held.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }
}

/// Reads a `.env` file with `dotenvy` (the maintained parser of the format: `export`, comments,
/// quotes, escapes and `${VAR}` substitution). A missing file is empty. A malformed line is
/// named by number only: the line itself may hold a secret.
fn read_dotenv(path: &Path) -> Result<BTreeMap<String, String>, CredentialsError> {
    let io_error = |source| CredentialsError::DotEnv {
        path: path.to_path_buf(),
        source,
    };
    // Read whole, bounded and only when a regular file: a `.env` that is a FIFO or a device
    // would hang or fill memory.
    let bytes = match crate::input_file::read_regular(path, crate::input_file::DOTENV_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(source) => return Err(io_error(source)),
    };
    let lines = dotenvy::from_read_iter(bytes.as_slice());
    let mut out = BTreeMap::new();
    for item in lines {
        match item {
            Ok((key, value)) => {
                out.insert(key, value);
            }
            Err(dotenvy::Error::LineParse(_, index)) => {
                return Err(CredentialsError::DotEnvLine {
                    path: path.to_path_buf(),
                    index,
                });
            }
            Err(dotenvy::Error::Io(source)) => return Err(io_error(source)),
            Err(e) => return Err(io_error(std::io::Error::other(e.to_string()))),
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn dotenv_fills_only_what_env_lacks_and_errors_name_missing() {
        let dir = std::env::temp_dir().join(format!("obp-cred-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(".env");
        std::fs::write(
            &path,
            "# comment\nexport OBP_TEST_A=\"from-file\"\nOBP_TEST_PATH=file-path\n",
        )
        .unwrap();
        // PATH is always set in the environment: the file must not override it.
        let names = vec!["OBP_TEST_A".to_string(), "PATH".to_string()];
        let c = Credentials::from_env_and_file(&names, &path).unwrap();
        assert_eq!(c.get("OBP_TEST_A"), Some("from-file"));
        assert_eq!(c.get("PATH"), std::env::var("PATH").ok().as_deref());
        let err = Credentials::from_env_and_file(
            &["OBP_TEST_MISSING_1".into(), "OBP_TEST_MISSING_2".into()],
            &path,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "missing credential variable(s): OBP_TEST_MISSING_1, OBP_TEST_MISSING_2"
        );
        let debug = format!("{c:?}");
        assert!(!debug.contains("from-file"), "{debug}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_value_with_surrounding_whitespace_is_refused_naming_only_its_variable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env");
        std::fs::write(&path, "OBP_TEST_QUOTED=\"sk-quoted-4411 \"\n").unwrap();
        let err = Credentials::from_env_and_file(&["OBP_TEST_QUOTED".into()], &path)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "credential variable OBP_TEST_QUOTED begins or ends with whitespace: remove it (in \
             the environment or .env)"
        );
        let c = Credentials::from_pairs([("K", "\tsk-padded ")]);
        assert_eq!(c.get("K"), Some("sk-padded"));
    }

    #[test]
    fn a_malformed_dotenv_line_is_refused_without_quoting_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env");
        std::fs::write(&path, "OBP_TEST_OK=1\nsk-secret-0123 oops\n").unwrap();
        let err = Credentials::from_env_and_file(&["OBP_TEST_NOT_SET_ANYWHERE".into()], &path)
            .unwrap_err()
            .to_string();
        assert!(err.contains(".env") && err.contains("KEY=VALUE"), "{err}");
        assert!(!err.contains("sk-secret"), "{err}");
    }

    #[test]
    fn a_dotenv_that_is_a_device_or_a_fifo_is_refused_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        let zero = dir.path().join("zero.env");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let fifo = dir.path().join("fifo.env");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        for (path, what) in [(zero, "a device"), (fifo, "a FIFO")] {
            // Read on a thread with a deadline: a regression hangs (FIFO) or grows without end
            // (/dev/zero) there, and the test fails instead of hanging.
            let (tx, rx) = std::sync::mpsc::channel();
            let file = path.clone();
            std::thread::spawn(move || {
                let names = ["OBP_TEST_NOT_SET_ANYWHERE".to_string()];
                let read = Credentials::from_env_and_file(&names, &file);
                let _ = tx.send(read.map(|_| ()).map_err(|e| e.to_string()));
            });
            let read = rx.recv_timeout(std::time::Duration::from_secs(30));
            let err = read.expect("reading .env did not return").unwrap_err();
            assert!(
                err.contains(&format!("{}: {what}, not a regular file", path.display())),
                "{err}"
            );
        }
    }
}
