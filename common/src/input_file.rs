//! Reading a file the user names (spec, `.env`, dataset files, answers to score): only when it is
//! a regular file, and never more than a bound. A FIFO would otherwise hang the command until
//! something writes to it, and `/dev/zero` (or a sparse file of terabytes) fill memory.
//!
//! The open never waits (`O_NONBLOCK`, which changes nothing for a regular file's reads); the
//! file's type and size are checked on the opened descriptor, and the read stops one byte past
//! the bound, so a file that grows after the check is still refused.

use std::fs::File;
use std::io::{Error, ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Bytes in one MiB.
pub const MIB: u64 = 1024 * 1024;

/// Largest spec file read (a reference spec is a few KiB).
pub const SPEC_BYTES: u64 = 4 * MIB;

/// Largest `.env` file read (a few lines of keys).
pub const DOTENV_BYTES: u64 = MIB;

/// Largest dataset file read (a release's largest family file is well under 10 MiB; a file is
/// held whole while parsed, so the bound also keeps a command's memory under 300 MB).
pub const DATASET_FILE_BYTES: u64 = 32 * MIB;

/// Largest prompt file (`load.workload.path`, any workflow input file the lock hashes) read: it
/// is held whole while parsed (about 2.5 times its size at the peak), so 64 MiB keeps a command
/// under 300 MB.
pub const PROMPT_FILE_BYTES: u64 = 64 * MIB;

/// Largest single prompt (one line of a prompt file): far above any context window a provider
/// serves (1 MiB is about 250,000 tokens).
pub const PROMPT_BYTES: u64 = MIB;

/// Largest certificate, key or token file read (PEM files are a few KiB).
pub const CREDENTIAL_FILE_BYTES: u64 = MIB;

/// Largest answers file `score` reads (a million answers of a few KiB each).
pub const ANSWERS_BYTES: u64 = 16 * 1024 * MIB;

/// Opens `path` for reading when it is a regular file of at most `limit` bytes; the error says
/// what it is instead, or its size and the limit. The returned reader stops after `limit + 1`
/// bytes (see [`over_limit`]).
pub fn open_regular(path: &Path, limit: u64) -> std::io::Result<std::io::Take<File>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a folder"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{what}, not a regular file; refusing to read it"),
        ));
    }
    if meta.len() > limit {
        return Err(over_limit(limit));
    }
    Ok(file.take(limit + 1))
}

/// The error of a file over `limit` bytes.
pub fn over_limit(limit: u64) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        format!("larger than the {limit}-byte limit for this input; refusing to read it"),
    )
}

/// Reads a whole regular file of at most `limit` bytes ([`open_regular`]).
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_regular(path, limit)?.read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(over_limit(limit));
    }
    Ok(bytes)
}

/// Lower-case hex sha256 and size of a regular file of at most `limit` bytes, streamed: the hash
/// stops one byte past the bound, so a file that grows while it is hashed is refused too.
pub fn sha256_regular(path: &Path, limit: u64) -> std::io::Result<(String, u64)> {
    let (hash, size) = crate::hash::sha256_reader(open_regular(path, limit)?)?;
    if size > limit {
        return Err(over_limit(limit));
    }
    Ok((hash, size))
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_string(path: &Path, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read_regular(path, limit)?)
        .map_err(|e| Error::new(ErrorKind::InvalidData, e.utf8_error()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_oversized_files_are_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let zero = read_regular(Path::new("/dev/zero"), MIB).map(|_| ());
        let message = zero.err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(message, "a device, not a regular file; refusing to read it");
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let message = read_regular(&fifo, MIB)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(message, "a FIFO, not a regular file; refusing to read it");
        let big = dir.path().join("big");
        std::fs::write(&big, [b'x'; 11]).unwrap_or_else(|e| panic!("{e}"));
        let message = read_regular(&big, 10)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.contains("10-byte limit"), "{message}");
        assert_eq!(read_regular(&big, 11).ok(), Some(vec![b'x'; 11]));
        // Hashing takes the same road: no device, no FIFO, nothing past the bound.
        let message = sha256_regular(Path::new("/dev/zero"), MIB)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(message, "a device, not a regular file; refusing to read it");
        assert!(sha256_regular(&fifo, MIB).is_err());
        assert!(sha256_regular(&big, 10).is_err());
        assert_eq!(
            sha256_regular(&big, 11).ok(),
            Some((crate::hash::sha256_hex([b'x'; 11]), 11))
        );
    }
}
