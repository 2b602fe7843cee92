//! Reading a run directory's terminal records, streaming, one line at a time.
//!
//! A lane-round may have a `harness_error` record and, after a resume, a real one. Per
//! request_id the reader keeps the last record whose outcome is not `harness_error`, or the
//! harness record when that is all there is. A half-written last line (a crash mid-write) is
//! ignored; any other unreadable line is an error naming the file and line. Each record is handed
//! to a conversion closure as soon as it is read, so callers keep only a compact form in memory.

use openbench_common::layout;
use openbench_common::record::{Outcome, TerminalRecord};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// A failure reading records.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// File path.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// A line that is not a terminal record (and not a half-written last line).
    #[error("{path}:{line}: not a terminal record: {message}")]
    BadLine {
        /// File path.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// Parser message.
        message: String,
    },
    /// The run directory holds no results file.
    #[error("{0}: no raw/results.jsonl nor raw/results-attempt-N.jsonl")]
    NoResults(PathBuf),
}

/// Which results file a run directory's report reads: the full run's, else the latest smoke
/// attempt's. Returns (layout name, attempt) — attempt `None` for a full run.
pub fn results_file(run_dir: &Path) -> Result<(String, Option<u32>), RecordsError> {
    if layout::path(run_dir, layout::FULL_RESULTS).is_file() {
        return Ok((layout::FULL_RESULTS.to_string(), None));
    }
    let mut attempt = None;
    for n in 1..=16 {
        if layout::path(run_dir, &layout::smoke_results(n)).is_file() {
            attempt = Some(n);
        }
    }
    attempt
        .map(|n| (layout::smoke_results(n), Some(n)))
        .ok_or_else(|| RecordsError::NoResults(run_dir.to_path_buf()))
}

/// Counts from one read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines holding a record.
    pub lines: u64,
    /// Records superseded by a later record with the same request_id.
    pub superseded: u64,
    /// True when a half-written last line was ignored.
    pub ignored_partial_last_line: bool,
}

/// The final records of a file, converted, in order of each request_id's first appearance.
#[derive(Debug)]
pub struct FinalRecords<T> {
    /// One converted record per request_id.
    pub items: Vec<T>,
    /// Read counts.
    pub stats: ReadStats,
}

/// Streams `path`, converting each record with `convert` and keeping the final one per request_id.
pub fn read_final<T>(
    path: &Path,
    mut convert: impl FnMut(TerminalRecord) -> T,
) -> Result<FinalRecords<T>, RecordsError> {
    let io = |source| RecordsError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Sized by a first pass counting lines: growing by doubling would, at the last step, hold a
    // million records and half a million more at once (the report's peak memory).
    let lines = count_lines(path).map_err(io)?;
    let mut reader = BufReader::with_capacity(1 << 20, File::open(path).map_err(io)?);
    // request_id → (index into slots, whether the kept record is a harness one)
    let mut index: HashMap<String, (usize, bool)> = HashMap::with_capacity(lines);
    let mut slots: Vec<T> = Vec::with_capacity(lines);
    let mut stats = ReadStats::default();
    let mut line = String::new();
    let mut line_no = 0u64;
    let mut pending_error: Option<RecordsError> = None;
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(io)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        // A bad line is only forgiven when it turns out to be the last one, unterminated.
        if let Some(e) = pending_error.take() {
            return Err(e);
        }
        if line.trim().is_empty() {
            continue;
        }
        let record: TerminalRecord = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                let err = RecordsError::BadLine {
                    path: path.to_path_buf(),
                    line: line_no,
                    message: e.to_string(),
                };
                if line.ends_with('\n') {
                    return Err(err);
                }
                pending_error = Some(err);
                stats.ignored_partial_last_line = true;
                continue;
            }
        };
        stats.lines += 1;
        let is_harness = record.outcome == Outcome::HarnessError;
        match index.get_mut(&record.request_id) {
            None => {
                index.insert(record.request_id.clone(), (slots.len(), is_harness));
                slots.push(convert(record));
            }
            Some((slot, kept_harness)) => {
                // A harness record never replaces a real one.
                if is_harness && !*kept_harness {
                    stats.superseded += 1;
                    continue;
                }
                stats.superseded += 1;
                *kept_harness = is_harness;
                slots[*slot] = convert(record);
            }
        }
    }
    Ok(FinalRecords {
        items: slots,
        stats,
    })
}

/// Newline-terminated lines in `path`, plus one for an unterminated last line.
fn count_lines(path: &Path) -> std::io::Result<usize> {
    let mut reader = BufReader::with_capacity(1 << 20, File::open(path)?);
    let mut count = 0;
    let mut last = b'\n';
    loop {
        let buf = reader.fill_buf()?;
        let Some(&end) = buf.last() else { break };
        count += buf.iter().filter(|b| **b == b'\n').count();
        last = end;
        let n = buf.len();
        reader.consume(n);
    }
    Ok(count + usize::from(last != b'\n'))
}
