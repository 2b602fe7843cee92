//! Tamper-evident records: a running sha256 over every committed line of a results file, kept
//! beside it (`raw/results.jsonl` → `raw/results.chain`, one 64-hex-digit line per record line).
//!
//! Line `i` of the chain is `sha256(h[i-1] ‖ line i of the results, newline included)`, with
//! `h[0] = sha256("openbench-records-chain-v1")`. The writer appends the chain lines of a group
//! of records only after the records themselves are fsynced ([`ChainWriter::commit`]), so the
//! chain never covers a line that is not on disk; a kill leaves at most some committed lines past
//! the chain's end, which a resume verifies the chain up to and then extends ([`extend`]).
//! `report` and `publish` recompute it ([`verify`]): an edited, inserted or deleted record is
//! named by its line. The manifest's final save records the chain's head
//! ([`super::schema::RunManifest::records_chain`]), so a manifest edited to say `complete` after
//! a kill (its head absent or behind the records) is refused too ([`check_manifest`]).
//!
//! This detects changes made without recomputing the chain; it is not a signature: whoever
//! rewrites the records, the chain and the manifest's head consistently is not detected.

use super::RunDirError;
use super::lines::read_line;
use super::open::{open_read, open_with, options};
use super::schema::{RunManifest, RunStatus};
use super::write::{io, not_found};
use crate::hash::hex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Bytes of one chain line: 64 hex digits and a newline.
pub const CHAIN_LINE_BYTES: u64 = 65;

/// Where a chain head stands: the results file (layout name), the lines it covers, its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainHead {
    /// Layout name of the results file (`raw/results.jsonl`).
    pub file: String,
    /// Record lines covered.
    pub lines: u64,
    /// Hex sha256 of the chain after those lines.
    pub sha256: String,
}

/// The chain file of a results file: the same name with `.chain` for `.jsonl`.
pub fn chain_path(results: &Path) -> PathBuf {
    results.with_extension("chain")
}

/// The hash before any line.
fn genesis() -> [u8; 32] {
    Sha256::digest(b"openbench-records-chain-v1").into()
}

/// The hash after `line` (newline included) follows `prev`.
fn next(prev: &[u8; 32], line: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(prev);
    hasher.update(line);
    hasher.finalize().into()
}

/// Appends the chain of one results file, in step with its writer.
pub struct ChainWriter {
    path: PathBuf,
    file: File,
    head: [u8; 32],
    pending: Vec<u8>,
}

impl ChainWriter {
    /// Opens (creating) the chain of `results`, continuing from its last line. A resume calls
    /// [`extend`] first, so the chain then covers every line of the results file.
    pub fn open(results: &Path) -> Result<ChainWriter, RunDirError> {
        let path = chain_path(results);
        let mut open = options();
        open.read(true).create(true).append(true);
        let mut file = open_with(&open, &path)?;
        let head = last_head(&mut file, &path)?.unwrap_or_else(genesis);
        Ok(ChainWriter {
            path,
            file,
            head,
            pending: Vec::new(),
        })
    }

    /// Chains one record line (newline included); written at the next [`ChainWriter::commit`].
    pub fn push(&mut self, line: &[u8]) {
        self.head = next(&self.head, line);
        self.pending.extend_from_slice(hex(&self.head).as_bytes());
        self.pending.push(b'\n');
    }

    /// Appends and fsyncs the chain lines pushed so far: call it once the records they cover are
    /// fsynced.
    pub fn commit(&mut self) -> Result<(), RunDirError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.file.write_all(&self.pending).map_err(io(&self.path))?;
        self.file.sync_data().map_err(io(&self.path))?;
        self.pending.clear();
        Ok(())
    }
}

/// The hash on the last whole line of a chain file, `None` when it has none.
fn last_head(file: &mut File, path: &Path) -> Result<Option<[u8; 32]>, RunDirError> {
    let len = file.metadata().map_err(io(path))?.len();
    let whole = len - len % CHAIN_LINE_BYTES;
    if whole == 0 {
        return Ok(None);
    }
    let mut line = [0u8; CHAIN_LINE_BYTES as usize];
    file.seek(SeekFrom::Start(whole - CHAIN_LINE_BYTES))
        .map_err(io(path))?;
    file.read_exact(&mut line).map_err(io(path))?;
    parse_hash(&line, path, whole / CHAIN_LINE_BYTES).map(Some)
}

fn parse_hash(line: &[u8], path: &Path, line_no: u64) -> Result<[u8; 32], RunDirError> {
    let broken = || RunDirError::Tampered {
        path: path.to_path_buf(),
        detail: format!("line {line_no} is not a chain line"),
    };
    if line.len() as u64 != CHAIN_LINE_BYTES || line[64] != b'\n' {
        return Err(broken());
    }
    let mut out = [0u8; 32];
    for (i, pair) in line[..64].chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).map_err(|_| broken())?;
        out[i] = u8::from_str_radix(text, 16).map_err(|_| broken())?;
    }
    Ok(out)
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainState {
    /// No chain file: a run written before chains existed.
    Absent,
    /// The chain matches the first `lines` record lines; `uncovered` complete lines follow it
    /// (written after the last commit by a process that was killed).
    Verified {
        /// Record lines the chain covers.
        lines: u64,
        /// Hex hash after them.
        sha256: String,
        /// Complete record lines past the chain's end.
        uncovered: u64,
    },
}

/// Recomputes the chain of `results` against its chain file. A record line that differs from
/// what was chained is [`RunDirError::Tampered`] naming the line; so is a chain longer than the
/// records (records deleted). A half-written last line is neither covered nor counted.
pub fn verify(results: &Path) -> Result<ChainState, RunDirError> {
    walk(results, false)
}

/// Before a resume: verifies the chain as [`verify`] does (truncating a half-written chain line),
/// then chains the record lines past its end, which the resume counts as committed. A results
/// file without a chain (an older run) gets one covering its lines as found now.
pub fn extend(results: &Path) -> Result<(), RunDirError> {
    walk(results, true).map(|_| ())
}

fn walk(results: &Path, extend: bool) -> Result<ChainState, RunDirError> {
    let chain = chain_path(results);
    let mut chain_file = match open_read(&chain) {
        Ok(file) => Some(file),
        Err(e) if not_found(&e) => None,
        Err(e) => return Err(e),
    };
    let records = match open_read(results) {
        Ok(file) => Some(file),
        Err(e) if not_found(&e) => None,
        Err(e) => return Err(e),
    };
    // No chain to check; and, extending, no records to chain yet (a fresh plan).
    if chain_file.is_none() && (!extend || records.is_none()) {
        return Ok(ChainState::Absent);
    }
    let chained = match &chain_file {
        Some(file) => file.metadata().map_err(io(&chain))?.len() / CHAIN_LINE_BYTES,
        None => 0,
    };
    let mut chain_reader = chain_file
        .as_mut()
        .map(|f| BufReader::new(f.take(chained * CHAIN_LINE_BYTES)));
    let mut head = genesis();
    // The hash after the last line the chain covers (or, extending, will cover).
    let mut covered = head;
    let mut line = Vec::new();
    let mut line_no = 0u64;
    let mut uncovered = 0u64;
    let mut appended = Vec::new();
    if let Some(records) = records {
        let mut reader = BufReader::with_capacity(1 << 20, records);
        loop {
            line.clear();
            if read_line(&mut reader, &mut line, results, line_no + 1)? == 0
                || line.last() != Some(&b'\n')
            {
                break;
            }
            line_no += 1;
            head = next(&head, &line);
            if line_no <= chained {
                let mut stored = [0u8; CHAIN_LINE_BYTES as usize];
                if let Some(reader) = chain_reader.as_mut() {
                    reader.read_exact(&mut stored).map_err(io(&chain))?;
                }
                covered = head;
                if parse_hash(&stored, &chain, line_no)? != head {
                    return Err(RunDirError::Tampered {
                        path: results.to_path_buf(),
                        detail: format!(
                            "line {line_no} differs from the line committed there (its chain, \
                             {}, no longer matches)",
                            chain.display()
                        ),
                    });
                }
            } else if extend {
                covered = head;
                appended.extend_from_slice(hex(&head).as_bytes());
                appended.push(b'\n');
            } else {
                uncovered += 1;
            }
        }
    }
    if line_no < chained {
        return Err(RunDirError::Tampered {
            path: results.to_path_buf(),
            detail: format!(
                "{chained} record line(s) were committed, the file holds {line_no}: line {} \
                 onward was removed",
                line_no + 1
            ),
        });
    }
    if extend {
        append_chain(&chain, chained, &appended)?;
    }
    Ok(ChainState::Verified {
        lines: line_no - uncovered,
        sha256: hex(&covered),
        uncovered,
    })
}

/// Truncates the chain file to its `whole` lines (dropping a half-written one) and appends
/// `lines`, fsynced; creates it when absent.
fn append_chain(chain: &Path, whole: u64, lines: &[u8]) -> Result<(), RunDirError> {
    let mut open = options();
    open.write(true).create(true);
    let mut file = open_with(&open, chain)?;
    file.set_len(whole * CHAIN_LINE_BYTES).map_err(io(chain))?;
    file.seek(SeekFrom::End(0)).map_err(io(chain))?;
    file.write_all(lines).map_err(io(chain))?;
    file.sync_all().map_err(io(chain))
}

/// The head of the chain of `results` (named `file` in the run's layout) as it stands, for the
/// manifest's final save; `None` without a chain file.
pub fn head(results: &Path, file: &str) -> Result<Option<ChainHead>, RunDirError> {
    let chain = chain_path(results);
    let mut opened = match open_read(&chain) {
        Ok(f) => f,
        Err(e) if not_found(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = opened.metadata().map_err(io(&chain))?.len();
    let sha = last_head(&mut opened, &chain)?.unwrap_or_else(genesis);
    Ok(Some(ChainHead {
        file: file.to_string(),
        lines: len / CHAIN_LINE_BYTES,
        sha256: hex(&sha),
    }))
}

/// How a verified run directory stands, in one line for `report` and `publish`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Integrity {
    /// Every committed line is chained and matches.
    TamperEvident {
        /// Record lines verified.
        lines: u64,
        /// Complete lines past the chain (a killed writer's last group, or lines appended by hand).
        uncovered: u64,
    },
    /// A run written before chains existed.
    OlderRun,
}

impl std::fmt::Display for Integrity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Integrity::TamperEvident {
                lines,
                uncovered: 0,
            } => write!(f, "records: {lines} line(s), chain verified"),
            Integrity::TamperEvident { lines, uncovered } => write!(
                f,
                "records: {lines} line(s), chain verified; {uncovered} line(s) after them are not \
                 covered by the chain (written after the last commit: by a killed writer, or \
                 appended by hand)"
            ),
            Integrity::OlderRun => write!(
                f,
                "records: not tamper-evident (older run: no records chain)"
            ),
        }
    }
}

/// Verifies the records file `file` (layout name) of the run in `run_dir` against its chain and
/// against what the manifest's last save recorded: a manifest that says `complete` must carry
/// the chain's head as it stands. Lines past the chain's end are not refused here (the report's
/// admission rules judge them, and a killed writer leaves some): they are named in the result.
pub fn check_manifest(
    run_dir: &Path,
    file: &str,
    manifest: Option<&RunManifest>,
) -> Result<Integrity, RunDirError> {
    let results = super::layout::path(run_dir, file);
    let state = verify(&results)?;
    let recorded = manifest.and_then(|m| m.records_chain.as_ref());
    let complete = manifest.is_some_and(|m| m.status == RunStatus::Complete);
    let refuse = |detail: String| RunDirError::Tampered {
        path: super::layout::path(run_dir, super::layout::RUN_MANIFEST),
        detail,
    };
    let (lines, sha256, uncovered) = match state {
        ChainState::Absent => {
            if recorded.is_some_and(|h| h.file == file) {
                return Err(refuse(format!(
                    "it records a chain for {file}, but {} is missing",
                    chain_path(&results).display()
                )));
            }
            return Ok(Integrity::OlderRun);
        }
        ChainState::Verified {
            lines,
            sha256,
            uncovered,
        } => (lines, sha256, uncovered),
    };
    if complete {
        let now = ChainHead {
            file: file.to_string(),
            lines,
            sha256,
        };
        match recorded {
            None => {
                return Err(refuse(
                    "it says `complete` but carries no records chain: the run never finished \
                     (its writer was killed) and the manifest was edited"
                        .into(),
                ));
            }
            Some(head) if *head != now => {
                return Err(refuse(format!(
                    "it says `complete` with {} committed line(s) of {} (chain {}), but {file} \
                     holds {} line(s) (chain {}): the records or the manifest were changed",
                    head.lines, head.file, head.sha256, lines, now.sha256
                )));
            }
            Some(_) => {}
        }
    }
    Ok(Integrity::TamperEvident { lines, uncovered })
}
