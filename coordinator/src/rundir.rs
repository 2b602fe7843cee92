//! Run-directory primitives: write-once artifacts, fsynced JSON-lines appends, crash repair of a
//! half-written last line, atomic replacement of mutable files, and reading records back.

use openbench_common::record::{Outcome, TerminalRecord};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// A file-system problem, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// An I/O error on a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// A JSON (de)serialisation error.
    #[error("{path}: {message}")]
    Json {
        /// The file (and line, when reading lines).
        path: String,
        /// Parser message.
        message: String,
    },
    /// An immutable artifact already exists with different content.
    #[error("{path} is immutable and already holds different content; refusing to rewrite it")]
    Immutable {
        /// The file.
        path: PathBuf,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunDirError + '_ {
    move |source| RunDirError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Pretty JSON bytes of a value, with a trailing newline.
pub fn json_bytes<T: Serialize>(path: &Path, value: &T) -> Result<Vec<u8>, RunDirError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| RunDirError::Json {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Writes an immutable artifact: absent → written (atomically, fsynced); identical → no-op;
/// different → [`RunDirError::Immutable`].
pub fn write_once(path: &Path, bytes: &[u8]) -> Result<(), RunDirError> {
    match std::fs::read(path) {
        Ok(existing) if existing == bytes => Ok(()),
        Ok(_) => Err(RunDirError::Immutable {
            path: path.to_path_buf(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => write_atomic(path, bytes),
        Err(source) => Err(RunDirError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Serialises `value` as pretty JSON and writes it once ([`write_once`]).
pub fn write_json_once<T: Serialize>(path: &Path, value: &T) -> Result<(), RunDirError> {
    write_once(path, &json_bytes(path, value)?)
}

/// Replaces a mutable file atomically: write a sibling temp file, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunDirError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let tmp = path.with_extension("tmp");
    let mut file = File::create(&tmp).map_err(io(&tmp))?;
    file.write_all(bytes).map_err(io(&tmp))?;
    file.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    Ok(())
}

/// Reads and parses a JSON file.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, RunDirError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    serde_json::from_slice(&bytes).map_err(|e| RunDirError::Json {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Truncates a JSON-lines file back to its last newline, dropping a half-written last line left by
/// a crash. Returns how many bytes were dropped (0 when the file is whole or absent).
pub fn repair_jsonl(path: &Path) -> Result<u64, RunDirError> {
    let mut file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(source) => {
            return Err(RunDirError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let len = file.metadata().map_err(io(path))?.len();
    if len == 0 {
        return Ok(0);
    }
    // Scan backwards in blocks for the last newline.
    let mut end = len;
    let mut keep = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    'scan: while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start)).map_err(io(path))?;
        file.read_exact(chunk).map_err(io(path))?;
        if let Some(pos) = chunk.iter().rposition(|&b| b == b'\n') {
            keep = start + pos as u64 + 1;
            break 'scan;
        }
        end = start;
    }
    if keep == len {
        return Ok(0);
    }
    file.set_len(keep).map_err(io(path))?;
    file.sync_all().map_err(io(path))?;
    Ok(len - keep)
}

/// An append-only JSON-lines file; every line is one `write` and optionally fsynced.
pub struct JsonlWriter {
    path: PathBuf,
    file: File,
    fsync: bool,
}

impl JsonlWriter {
    /// Opens (creating) a file for appending.
    pub fn open(path: &Path, fsync: bool) -> Result<JsonlWriter, RunDirError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io(path))?;
        Ok(JsonlWriter {
            path: path.to_path_buf(),
            file,
            fsync,
        })
    }

    /// Appends one value as a line (one `write_all` call), fsyncing when configured.
    pub fn append<T: Serialize>(&mut self, value: &T) -> Result<(), RunDirError> {
        let mut line = serde_json::to_vec(value).map_err(|e| RunDirError::Json {
            path: self.path.display().to_string(),
            message: e.to_string(),
        })?;
        line.push(b'\n');
        self.append_raw(&line)
    }

    /// Appends already-serialised bytes (several lines at once is fine).
    pub fn append_raw(&mut self, bytes: &[u8]) -> Result<(), RunDirError> {
        self.file.write_all(bytes).map_err(io(&self.path))?;
        if self.fsync {
            self.file.sync_data().map_err(io(&self.path))?;
        }
        Ok(())
    }
}

/// Reads every line of a JSON-lines file; an absent file is empty. A malformed line names the file
/// and line number.
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, RunDirError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(RunDirError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut out = Vec::new();
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(io(path))?;
        if line.trim().is_empty() {
            continue;
        }
        let value = serde_json::from_str(&line).map_err(|e| RunDirError::Json {
            path: format!("{}:{}", path.display(), n + 1),
            message: e.to_string(),
        })?;
        out.push(value);
    }
    Ok(out)
}

/// Reads terminal records tolerating a half-written last line (a run still being written by
/// another process, or one killed mid-write): only whole lines are parsed.
pub fn read_records_lenient(path: &Path) -> Result<Vec<TerminalRecord>, RunDirError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(RunDirError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let whole = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(pos) => &bytes[..=pos],
        None => &[][..],
    };
    let mut out = Vec::new();
    for (n, line) in whole.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let record = serde_json::from_slice(line).map_err(|e| RunDirError::Json {
            path: format!("{}:{}", path.display(), n + 1),
            message: e.to_string(),
        })?;
        out.push(record);
    }
    Ok(out)
}

/// Per request id, the record readers keep: the last one whose outcome is not `harness_error`, or
/// the last harness one when that is all there is.
pub fn effective_records(records: Vec<TerminalRecord>) -> BTreeMap<String, TerminalRecord> {
    let mut out: BTreeMap<String, TerminalRecord> = BTreeMap::new();
    for record in records {
        let replace = match out.get(&record.request_id) {
            None => true,
            Some(prev) => {
                record.outcome != Outcome::HarnessError || prev.outcome == Outcome::HarnessError
            }
        };
        if replace {
            out.insert(record.request_id.clone(), record);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_once_refuses_different_content() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("artifacts/selection.json");
        write_once(&p, b"one").unwrap();
        write_once(&p, b"one").unwrap();
        let err = write_once(&p, b"two").unwrap_err().to_string();
        assert!(err.contains("selection.json"), "{err}");
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
    }

    #[test]
    fn repair_drops_half_line_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.jsonl");
        std::fs::write(&p, b"{\"a\":1}\n{\"a\":2}\n{\"a\":").unwrap();
        assert_eq!(repair_jsonl(&p).unwrap(), 5);
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"a\":1}\n{\"a\":2}\n");
        assert_eq!(repair_jsonl(&p).unwrap(), 0);
        std::fs::write(&p, b"{\"a\":").unwrap();
        assert_eq!(repair_jsonl(&p).unwrap(), 5);
        assert_eq!(std::fs::read(&p).unwrap(), b"");
        assert_eq!(repair_jsonl(&dir.path().join("absent")).unwrap(), 0);
    }

    #[test]
    fn effective_prefers_non_harness() {
        let mk = |id: &str, outcome: Outcome| {
            let mut r = TerminalRecord::new("t".into(), outcome);
            r.request_id = id.into();
            r
        };
        let eff = effective_records(vec![
            mk("a", Outcome::HarnessError),
            mk("a", Outcome::Completed),
            mk("a", Outcome::HarnessError),
            mk("b", Outcome::HarnessError),
        ]);
        assert_eq!(eff["a"].outcome, Outcome::Completed);
        assert_eq!(eff["b"].outcome, Outcome::HarnessError);
    }
}
