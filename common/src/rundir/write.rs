//! Write primitives of the run directory: write-once artifacts, atomic replacement (file and
//! directory fsynced), the fsynced JSON-lines appender, and crash repair of a torn last line.

use super::RunDirError;
use super::open::{open_read, open_with, options, read_bytes};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashSet};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

pub(super) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunDirError + '_ {
    move |source| RunDirError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn json_error(path: &Path, source: serde_json::Error) -> RunDirError {
    RunDirError::Json {
        path: path.to_path_buf(),
        line: None,
        source,
    }
}

/// Pretty JSON bytes of a value, with a trailing newline (the layout of every JSON artifact).
pub fn json_bytes<T: Serialize>(path: &Path, value: &T) -> Result<Vec<u8>, RunDirError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| json_error(path, e))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Writes an immutable artifact: absent → written (atomically, fsynced); identical → no-op;
/// different → [`RunDirError::Immutable`].
pub fn write_once(path: &Path, bytes: &[u8]) -> Result<(), RunDirError> {
    match read_bytes(path) {
        Ok(existing) if existing == bytes => Ok(()),
        Ok(_) => Err(RunDirError::Immutable {
            path: path.to_path_buf(),
        }),
        Err(e) if not_found(&e) => write_atomic(path, bytes),
        Err(e) => Err(e),
    }
}

/// Serialises `value` as pretty JSON and writes it once ([`write_once`]'s rules), streaming: the
/// JSON is never held in memory whole (a 1,000-lane × 600-round plan is ≈ 100 MB of it). An
/// existing file is compared by sha256 of the bytes `value` would be.
pub fn write_json_once<T: Serialize>(path: &Path, value: &T) -> Result<(), RunDirError> {
    let write = |w: &mut dyn Write| -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *w, value).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    };
    match super::open::open_json(path)
        .and_then(|file| crate::hash::sha256_reader(file).map_err(io(path)))
    {
        Ok((existing, _)) => {
            let mut hashed = HashingWriter(Sha256::new());
            write(&mut hashed).map_err(io(path))?;
            if crate::hash::hex(&hashed.0.finalize()) == existing {
                Ok(())
            } else {
                Err(RunDirError::Immutable {
                    path: path.to_path_buf(),
                })
            }
        }
        Err(e) if not_found(&e) => write_atomic_with(path, write),
        Err(e) => Err(e),
    }
}

/// True when a run-directory error says the file does not exist.
pub(super) fn not_found(error: &RunDirError) -> bool {
    matches!(error, RunDirError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

/// A `Write` that only hashes what passes through it.
struct HashingWriter(Sha256);

impl Write for HashingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Serialises `value` as pretty JSON and replaces `path` atomically ([`write_atomic`]).
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), RunDirError> {
    write_atomic(path, &json_bytes(path, value)?)
}

/// Replaces a file atomically with `bytes` (see [`write_atomic_with`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunDirError> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Replaces a file atomically: streams `write` into a hidden sibling temp file, fsyncs it,
/// renames it over `path` and fsyncs the directory, so a crash leaves the old file or the new one,
/// never a mix. On any failure the temp file is removed and the old file is left as it was.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), RunDirError> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let tmp = temp_sibling(path);
    let written = write_and_sync(&tmp, write).map_err(|source| RunDirError::Io {
        // Named by the file being written, not its hidden temp sibling: the user looks for that.
        path: path.to_path_buf(),
        source,
    });
    let renamed = written.and_then(|()| std::fs::rename(&tmp, path).map_err(io(path)));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed?;
    sync_dir(&dir)
}

fn temp_sibling(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

fn write_and_sync(
    tmp: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    // A name left by an earlier process with this pid (or planted) is removed, never followed.
    match std::fs::remove_file(tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut create = options();
    create.write(true).create_new(true);
    let file = create.open(tmp)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    write(&mut w)?;
    let file = w.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()
}

/// Fsyncs a directory so a rename or a new file in it survives a crash.
pub fn sync_dir(dir: &Path) -> Result<(), RunDirError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// Reads and parses a JSON file; errors name the file.
/// Only a regular file of at most [`super::lines::JSON_FILE_BYTES`] is read.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, RunDirError> {
    let file = super::open::open_json(path)?;
    serde_json::from_reader(BufReader::new(file)).map_err(|e| json_error(path, e))
}

/// Truncates a JSON-lines file back to its last newline, dropping a half-written last line left by
/// a crash. Returns how many bytes were dropped (0 when the file is whole or absent).
pub fn repair_jsonl(path: &Path) -> Result<u64, RunDirError> {
    let mut open = options();
    open.read(true).write(true);
    let mut file = match open_with(&open, path) {
        Ok(f) => f,
        Err(e) if not_found(&e) => return Ok(0),
        Err(e) => return Err(e),
    };
    let len = file.metadata().map_err(io(path))?.len();
    let mut end = len;
    let mut keep = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start)).map_err(io(path))?;
        file.read_exact(chunk).map_err(io(path))?;
        if let Some(pos) = chunk.iter().rposition(|&b| b == b'\n') {
            keep = start + pos as u64 + 1;
            break;
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
        let mut open = options();
        open.create(true).append(true);
        let file = open_with(&open, path)?;
        Ok(JsonlWriter {
            path: path.to_path_buf(),
            file,
            fsync,
        })
    }

    /// Appends one value as a line (one `write_all` call), fsyncing when configured.
    pub fn append<T: Serialize>(&mut self, value: &T) -> Result<(), RunDirError> {
        let mut bytes = Vec::new();
        push_line(&mut bytes, &self.path, value)?;
        self.append_raw(&bytes)
    }

    /// Appends already-serialised lines (several at once is fine).
    pub fn append_raw(&mut self, bytes: &[u8]) -> Result<(), RunDirError> {
        self.file.write_all(bytes).map_err(io(&self.path))?;
        if self.fsync {
            self.file.sync_data().map_err(io(&self.path))?;
        }
        Ok(())
    }

    /// Fsyncs what was appended so far (`fdatasync`): the commit point of a group of lines
    /// appended without their own fsync.
    pub fn sync(&mut self) -> Result<(), RunDirError> {
        self.file.sync_data().map_err(io(&self.path))
    }

    /// The file this writer appends to.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Appends `value` as one JSON line to `buf`; errors name `path`.
pub fn push_line<T: Serialize>(
    buf: &mut Vec<u8>,
    path: &Path,
    value: &T,
) -> Result<(), RunDirError> {
    serde_json::to_writer(&mut *buf, value).map_err(|e| json_error(path, e))?;
    buf.push(b'\n');
    Ok(())
}

#[derive(serde::Deserialize)]
struct IdOnly {
    request_id: String,
    #[serde(default)]
    index: Option<u32>,
}

/// Rewrites a JSON-lines file keeping lines whose `request_id` is in `committed` (with `unique`,
/// the first line per request; otherwise the first per (request, event index)), so a request
/// interrupted between its events and its record leaves nothing behind. Untouched when nothing
/// drops.
pub fn keep_committed_lines(
    path: &Path,
    committed: &BTreeSet<String>,
    unique: bool,
) -> Result<(), RunDirError> {
    let file = match open_read(path) {
        Ok(f) => f,
        Err(e) if not_found(&e) => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut seen: HashSet<(String, Option<u32>)> = HashSet::new();
    let mut kept: Vec<u8> = Vec::new();
    let mut dropped = 0usize;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    let mut line_no = 0u64;
    loop {
        line.clear();
        if super::lines::read_line(&mut reader, &mut line, path, line_no + 1)? == 0 {
            break;
        }
        line_no += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let keep = match serde_json::from_slice::<IdOnly>(&line) {
            Ok(id) if committed.contains(&id.request_id) => {
                seen.insert((id.request_id, if unique { None } else { id.index }))
            }
            _ => false,
        };
        if keep {
            kept.extend_from_slice(&line);
            kept.push(b'\n');
        } else {
            dropped += 1;
        }
    }
    if dropped == 0 {
        return Ok(());
    }
    write_atomic(path, &kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tempdir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
    }

    fn read(p: &Path) -> Vec<u8> {
        std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn write_once_refuses_different_content() {
        let dir = tempdir();
        let p = dir.path().join("artifacts/selection.json");
        assert!(write_once(&p, b"one").is_ok());
        assert!(write_once(&p, b"one").is_ok());
        let err = write_once(&p, b"two").map(|()| String::new());
        let err = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("selection.json"), "{err}");
        assert_eq!(read(&p), b"one");
    }

    #[test]
    fn json_write_once_streams_the_same_bytes_and_refuses_a_different_value() {
        let dir = tempdir();
        let p = dir.path().join("artifacts/plan.json");
        let value = serde_json::json!({"rounds": [1, 2], "kind": "full"});
        assert!(write_json_once(&p, &value).is_ok());
        // The layout of every JSON artifact: pretty, newline-terminated (json_bytes).
        assert_eq!(
            read(&p),
            b"{\n  \"rounds\": [\n    1,\n    2\n  ],\n  \"kind\": \"full\"\n}\n"
        );
        assert!(write_json_once(&p, &value).is_ok());
        let other = serde_json::json!({"rounds": [1, 3], "kind": "full"});
        let err = write_json_once(&p, &other).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("plan.json")));
        assert_eq!(
            read(&p),
            b"{\n  \"rounds\": [\n    1,\n    2\n  ],\n  \"kind\": \"full\"\n}\n"
        );
    }

    #[test]
    fn atomic_replace_leaves_no_temp_file_and_keeps_the_old_file_on_failure() {
        let dir = tempdir();
        let p = dir.path().join("m.json");
        assert!(write_atomic(&p, b"old").is_ok());
        let failed = write_atomic_with(&p, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        });
        let message = failed.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("m.json: disk full") && !message.contains("m.json.tmp"),
            "{message}"
        );
        assert_eq!(read(&p), b"old");
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(names, vec!["m.json".to_string()]);
    }

    #[test]
    fn repair_drops_half_line_only() {
        let dir = tempdir();
        let p = dir.path().join("r.jsonl");
        let write = |bytes: &[u8]| std::fs::write(&p, bytes).unwrap_or_else(|e| panic!("{e}"));
        write(b"{\"a\":1}\n{\"a\":2}\n{\"a\":");
        assert_eq!(repair_jsonl(&p).ok(), Some(5));
        assert_eq!(read(&p), b"{\"a\":1}\n{\"a\":2}\n");
        assert_eq!(repair_jsonl(&p).ok(), Some(0));
        write(b"{\"a\":");
        assert_eq!(repair_jsonl(&p).ok(), Some(5));
        assert_eq!(read(&p), b"");
        assert_eq!(repair_jsonl(&dir.path().join("absent")).ok(), Some(0));
    }

    #[test]
    fn uncommitted_lines_are_dropped() {
        let dir = tempdir();
        let p = dir.path().join("events.jsonl");
        let body = "{\"request_id\":\"a\",\"index\":0}\n{\"request_id\":\"b\",\"index\":0}\n\
                    {\"request_id\":\"a\",\"index\":0}\n{\"request_id\":\"a\",\"index\":1}\n";
        std::fs::write(&p, body).unwrap_or_else(|e| panic!("{e}"));
        let committed: BTreeSet<String> = ["a".to_string()].into();
        assert!(keep_committed_lines(&p, &committed, false).is_ok());
        assert_eq!(
            read(&p),
            b"{\"request_id\":\"a\",\"index\":0}\n{\"request_id\":\"a\",\"index\":1}\n"
        );
        assert!(keep_committed_lines(&p, &committed, true).is_ok());
        assert_eq!(read(&p), b"{\"request_id\":\"a\",\"index\":0}\n");
    }
}
