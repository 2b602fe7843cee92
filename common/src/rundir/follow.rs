//! Following a JSON-lines file that another process is appending to (`raw/results.jsonl`,
//! `raw/rounds.jsonl`), for readers such as `watch` that must not re-read the whole file on every
//! refresh.
//!
//! A [`LineFollower`] remembers how far it has read. Each [`LineFollower::poll`] reads only the
//! bytes appended since, hands over every complete line, and keeps a torn last line (the writer's
//! `write_all` of line + newline has not finished) until its newline arrives. It works on plain
//! files only — no lock (it never touches the writer lock), no socket, no inotify — so it works the
//! same on a run directory synced from another machine. When the file is replaced (a new inode, or
//! its first bytes changed) or truncated below the offset, it starts over from byte 0 and says so
//! with [`Followed::Reset`] first, so the caller can drop what it built from the old content.

use super::RunDirError;
use super::lines::RECORD_LINE_BYTES;
use super::open::open_read;
use super::write::{io, not_found};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// How many leading bytes identify the file's content (a replaced file almost always differs
/// there: the first record's ids and timestamps).
const PREFIX_BYTES: usize = 256;
/// How many bytes just before the offset are checked on every poll (a torn tail repaired by
/// truncation and followed by a different line changes them).
const TAIL_BYTES: usize = 64;

/// What one poll hands over, in file order.
#[derive(Debug, PartialEq, Eq)]
pub enum Followed<'a> {
    /// The file was replaced, truncated or removed: forget every line handed over before.
    Reset,
    /// One complete line, without its newline.
    Line(&'a str),
}

/// What one poll did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PollStats {
    /// Complete lines handed over.
    pub lines: u64,
    /// Bytes read from the file.
    pub bytes: u64,
    /// True when the file started over (see [`Followed::Reset`]).
    pub reset: bool,
    /// Bytes of a torn last line held back for the next poll.
    pub pending_bytes: usize,
}

/// Reads a growing JSON-lines file incrementally; see the module docs.
#[derive(Debug)]
pub struct LineFollower {
    path: PathBuf,
    /// Bytes consumed so far (complete lines plus the pending torn tail).
    offset: u64,
    /// A torn last line, waiting for its newline.
    pending: Vec<u8>,
    /// The first bytes of the file as last seen (up to [`PREFIX_BYTES`]).
    prefix: Vec<u8>,
    /// The bytes just before the offset as last seen (up to [`TAIL_BYTES`]).
    tail: Vec<u8>,
    /// The file's identity (device, inode) on Unix.
    identity: Option<(u64, u64)>,
    /// True once anything was handed over (a reset is only worth reporting after that).
    delivered: bool,
}

impl LineFollower {
    /// A follower of `path`, at its start; the file need not exist yet.
    pub fn new(path: impl Into<PathBuf>) -> LineFollower {
        LineFollower {
            path: path.into(),
            offset: 0,
            pending: Vec::new(),
            prefix: Vec::new(),
            tail: Vec::new(),
            identity: None,
            delivered: false,
        }
    }

    /// The file followed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the file consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Hands every line appended since the last poll to `sink`, after a [`Followed::Reset`] when
    /// the file started over. An absent file is empty (a reset, if lines had been handed over).
    pub fn poll(&mut self, mut sink: impl FnMut(Followed<'_>)) -> Result<PollStats, RunDirError> {
        let mut stats = PollStats::default();
        let mut file = match open_read(&self.path) {
            Ok(f) => f,
            Err(e) if not_found(&e) => {
                self.start_over(&mut sink, &mut stats);
                return Ok(stats);
            }
            Err(e) => return Err(e),
        };
        let meta = file.metadata().map_err(io(&self.path))?;
        let identity = file_identity(&meta);
        let len = meta.len();
        let replaced = (self.identity.is_some() && identity != self.identity)
            || len < self.offset
            || !self.still_matches(&mut file, len)?;
        if replaced {
            self.start_over(&mut sink, &mut stats);
        }
        self.identity = identity;
        if len == self.offset {
            stats.pending_bytes = self.pending.len();
            return Ok(stats);
        }
        file.seek(SeekFrom::Start(self.offset))
            .map_err(io(&self.path))?;
        // Read only up to the length seen now: bytes appended meanwhile wait for the next poll.
        let mut reader = BufReader::with_capacity(1 << 16, file.take(len - self.offset));
        let mut line = std::mem::take(&mut self.pending);
        loop {
            // A line is read no further than one byte past the bound of one line.
            let room = (RECORD_LINE_BYTES + 1).saturating_sub(line.len() as u64);
            let n = (&mut reader)
                .take(room)
                .read_until(b'\n', &mut line)
                .map_err(io(&self.path))?;
            if line.len() as u64 > RECORD_LINE_BYTES {
                return Err(RunDirError::TooLarge {
                    path: self.path.clone(),
                    limit: RECORD_LINE_BYTES,
                });
            }
            if n == 0 {
                break;
            }
            self.offset += n as u64;
            stats.bytes += n as u64;
            if line.last() != Some(&b'\n') {
                break; // torn: keep it for the next poll
            }
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            // A line that is not UTF-8 is handed over lossily; its JSON will not parse and the
            // caller counts it as unreadable.
            sink(Followed::Line(&String::from_utf8_lossy(&line)));
            self.delivered = true;
            stats.lines += 1;
            line.clear();
        }
        self.pending = line;
        stats.pending_bytes = self.pending.len();
        // Remember the bytes that identify what was read. A file truncated meanwhile fails these
        // reads; the next poll sees it shorter than the offset and starts over.
        let mut file = reader.into_inner().into_inner();
        if self.prefix.len() < PREFIX_BYTES && self.offset > self.prefix.len() as u64 {
            let n = (self.offset as usize).min(PREFIX_BYTES);
            self.prefix = read_at(&mut file, 0, n).unwrap_or_default();
        }
        let n = (self.offset as usize).min(TAIL_BYTES);
        self.tail = read_at(&mut file, self.offset - n as u64, n).unwrap_or_default();
        Ok(stats)
    }

    /// Forgets everything read and tells the sink (when it had been given anything).
    fn start_over(&mut self, sink: &mut impl FnMut(Followed<'_>), stats: &mut PollStats) {
        if self.delivered || self.offset > 0 {
            sink(Followed::Reset);
            stats.reset = true;
        }
        self.offset = 0;
        self.pending.clear();
        self.prefix.clear();
        self.tail.clear();
        self.identity = None;
        self.delivered = false;
    }

    /// True when the file still holds the bytes remembered at its start and just before the
    /// offset (the caller has checked that it is at least `offset` long).
    fn still_matches(&self, file: &mut File, len: u64) -> Result<bool, RunDirError> {
        if len < self.offset {
            return Ok(false);
        }
        let tail_at = self.offset - self.tail.len() as u64;
        let read = read_at(file, 0, self.prefix.len())
            .and_then(|prefix| Ok((prefix, read_at(file, tail_at, self.tail.len())?)));
        match read {
            Ok((prefix, tail)) => Ok(prefix == self.prefix && tail == self.tail),
            // Truncated since its length was read: it starts over.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
            Err(e) => Err(io(&self.path)(e)),
        }
    }
}

/// `n` bytes of `file` from byte `at`.
fn read_at(file: &mut File, at: u64, n: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0; n];
    if n == 0 {
        return Ok(buf);
    }
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(&mut buf)?;
    Ok(buf)
}

#[cfg(unix)]
fn file_identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn file_identity(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

#[cfg(test)]
mod tests;
