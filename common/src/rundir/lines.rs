//! Bounds on what reading a run directory may hold in memory: one JSON-lines line at most
//! [`RECORD_LINE_BYTES`], one JSON artifact at most [`JSON_FILE_BYTES`]. The coordinator never
//! writes anything near either; a hostile or damaged file (a 2 GiB sparse file with no newline, a
//! lock grown to gigabytes) is refused naming the file and line instead of filling memory.

use super::RunDirError;
use crate::input_file::MIB;
use std::io::{BufRead, Read};
use std::path::Path;

/// Longest line of a run directory's JSON-lines files (records, events, answers, rounds). A
/// record holds at most two texts of `request.limits.answer_bytes` (2 MiB at most, 12 MiB once
/// JSON-escaped) besides small fields, so 64 MiB is far above any line the coordinator writes.
pub const RECORD_LINE_BYTES: u64 = 64 * MIB;

/// Largest JSON artifact of a run directory read (lock, manifest, selection, plans, checkpoints):
/// a 1,000-lane × 600-round plan is about 100 MB.
pub const JSON_FILE_BYTES: u64 = 256 * MIB;

/// Reads one line (newline included, when there is one) into `line`, appending; returns the
/// bytes read (0 at the end). A line longer than [`RECORD_LINE_BYTES`] is an error naming `path`
/// and the 1-based `line_no`, read no further than one byte past the bound.
pub fn read_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    path: &Path,
    line_no: u64,
) -> Result<usize, RunDirError> {
    let start = line.len();
    let n = reader
        .by_ref()
        .take(RECORD_LINE_BYTES + 1)
        .read_until(b'\n', line)
        .map_err(|source| RunDirError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if (line.len() - start) as u64 > RECORD_LINE_BYTES {
        return Err(RunDirError::LineTooLong {
            path: path.to_path_buf(),
            line: line_no,
            limit: RECORD_LINE_BYTES,
        });
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    #[test]
    fn a_line_past_the_bound_is_refused_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("results.jsonl");
        // A sparse file of 2 × the bound, no newline: read no further than the bound + 1 byte.
        let file = std::fs::File::create(&path).unwrap_or_else(|e| panic!("{e}"));
        file.set_len(2 * RECORD_LINE_BYTES)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut reader = BufReader::new(
            b"{}\n".chain(std::fs::File::open(&path).unwrap_or_else(|e| panic!("{e}"))),
        );
        let mut line = Vec::new();
        assert_eq!(read_line(&mut reader, &mut line, &path, 1).ok(), Some(3));
        line.clear();
        let message = read_line(&mut reader, &mut line, &path, 2)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            message.contains("results.jsonl:2: longer than the 67108864-byte limit"),
            "{message}"
        );
        assert_eq!(line.len() as u64, RECORD_LINE_BYTES + 1);
    }
}
