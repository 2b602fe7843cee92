//! The one reader of "the records that count": per request id, the last record whose outcome is
//! committed (not `harness_error`), or the last harness record when that is all there is.
//!
//! Streams the file one line at a time and hands each record to a conversion closure, so callers
//! keep only a compact form in memory. A torn last line (a crash mid-write, or a run still being
//! written by another process) is ignored; any other unreadable line is an error naming the file
//! and line.

use super::RunDirError;
use super::lines::read_line;
use super::open::open_read;
use super::write::{io, not_found};
use crate::record::TerminalRecord;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::mpsc::{SyncSender, sync_channel};

/// Counts from one read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines holding a record.
    pub lines: u64,
    /// Records superseded by a later record with the same request_id.
    pub superseded: u64,
    /// True when a half-written last line was ignored.
    pub ignored_partial_last_line: bool,
    /// The 1-based line number of that half-written last line.
    pub torn_line: Option<u64>,
    /// 1-based numbers of blank lines skipped (the writer never writes one).
    pub blank_lines: Vec<u64>,
    /// Committed records that followed another committed record of the same request id (the
    /// coordinator never writes one: a report refuses them unless told to accept them).
    pub committed_duplicates: u64,
    /// The first few request ids with more than one committed record, to name them.
    pub duplicate_ids: Vec<String>,
}

/// How many request ids [`ReadStats::duplicate_ids`] keeps.
pub const DUPLICATE_IDS_KEPT: usize = 5;

/// The records that count, converted, in order of each request id's first appearance.
#[derive(Debug)]
pub struct CountingRecords<T> {
    /// One converted record per request id.
    pub items: Vec<T>,
    /// Read counts.
    pub stats: ReadStats,
}

/// Streams `path`, converting each record with `convert` and keeping the one that counts per
/// request id. An absent file reads as empty when `absent_is_empty`, else it is an error.
pub fn read_counting<T>(
    path: &Path,
    absent_is_empty: bool,
    mut convert: impl FnMut(TerminalRecord) -> T,
) -> Result<CountingRecords<T>, RunDirError> {
    let file = match open_read(path) {
        Ok(f) => f,
        Err(e) if absent_is_empty && not_found(&e) => {
            return Ok(CountingRecords {
                items: Vec::new(),
                stats: ReadStats::default(),
            });
        }
        Err(e) => return Err(e),
    };
    // Sized by a first pass counting lines: growing by doubling would, at the last step, hold a
    // million records and half a million more at once (the report's peak memory).
    let lines = count_lines(open_read(path)?).map_err(io(path))?;
    let reader = BufReader::with_capacity(1 << 20, file);
    // request id → (index into slots, whether the kept record is committed)
    let mut index: HashMap<String, (usize, bool)> = HashMap::with_capacity(lines);
    let mut slots: Vec<T> = Vec::with_capacity(lines);
    let mut stats = ReadStats::default();
    // JSON parsing is most of a read's cost; a second thread parses while this one keeps and
    // converts, in file order.
    std::thread::scope(|scope| {
        let (sender, batches) = sync_channel(PARSED_BATCHES_AHEAD);
        scope.spawn(move || parse_lines(reader, path, sender));
        for batch in batches {
            for parsed in batch? {
                let record = match parsed {
                    Parsed::Record(record) => *record,
                    Parsed::Torn(line) => {
                        // Torn: the writer's one `write_all` of line + newline had not finished.
                        stats.ignored_partial_last_line = true;
                        stats.torn_line = Some(line);
                        break;
                    }
                    Parsed::Blank(line) => {
                        stats.blank_lines.push(line);
                        continue;
                    }
                };
                stats.lines += 1;
                let committed = record.outcome.is_committed();
                match index.get_mut(&record.request_id) {
                    None => {
                        index.insert(record.request_id.clone(), (slots.len(), committed));
                        slots.push(convert(record));
                    }
                    Some((slot, kept_committed)) => {
                        stats.superseded += 1;
                        if committed && *kept_committed {
                            stats.committed_duplicates += 1;
                            if stats.duplicate_ids.len() < DUPLICATE_IDS_KEPT
                                && !stats.duplicate_ids.contains(&record.request_id)
                            {
                                stats.duplicate_ids.push(record.request_id.clone());
                            }
                        }
                        // A harness record never replaces a committed one.
                        if committed || !*kept_committed {
                            *kept_committed = committed;
                            slots[*slot] = convert(record);
                        }
                    }
                }
            }
        }
        Ok::<(), RunDirError>(())
    })?;
    Ok(CountingRecords {
        items: slots,
        stats,
    })
}

/// Lines parsed per message from the parsing thread: enough that the channel costs little per
/// record, few enough that the batches in flight hold little memory.
const PARSED_BATCH: usize = 256;

/// Batches the parsing thread may run ahead of the thread keeping the records.
const PARSED_BATCHES_AHEAD: usize = 4;

/// One non-blank line of a results file, as the parsing thread hands it over.
enum Parsed {
    /// A complete line's record (boxed: a batch moves pointers, not records).
    Record(Box<TerminalRecord>),
    /// An unterminated last line (its 1-based number); nothing follows it.
    Torn(u64),
    /// A blank line (its 1-based number).
    Blank(u64),
}

/// Parses `reader`'s lines in order into batches sent to `sender`, skipping blank lines. Stops
/// after a torn line, and after the first unreadable line, which it sends as an error naming
/// `path` and the line; stops early when the receiver is gone.
fn parse_lines(
    mut reader: impl BufRead,
    path: &Path,
    sender: SyncSender<Result<Vec<Parsed>, RunDirError>>,
) {
    let mut batch = Vec::with_capacity(PARSED_BATCH);
    let mut line = Vec::new();
    let mut line_no = 0u64;
    let failure = loop {
        line.clear();
        match read_line(&mut reader, &mut line, path, line_no + 1) {
            Ok(0) => break None,
            Ok(_) => {}
            Err(e) => break Some(e),
        }
        line_no += 1;
        if line.last() != Some(&b'\n') {
            batch.push(Parsed::Torn(line_no));
            break None;
        }
        if line.trim_ascii().is_empty() {
            batch.push(Parsed::Blank(line_no));
            continue;
        }
        match serde_json::from_slice(&line) {
            Ok(record) => batch.push(Parsed::Record(Box::new(record))),
            Err(source) => {
                break Some(RunDirError::Json {
                    path: path.to_path_buf(),
                    line: Some(line_no),
                    source,
                });
            }
        }
        if batch.len() == PARSED_BATCH {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(PARSED_BATCH));
            if sender.send(Ok(full)).is_err() {
                return;
            }
        }
    };
    // The records before a failure are delivered first, so the error comes in file order.
    if !batch.is_empty() && sender.send(Ok(batch)).is_err() {
        return;
    }
    if let Some(error) = failure {
        let _ = sender.send(Err(error));
    }
}

/// Newline-terminated lines in `file`, plus one for an unterminated last line.
fn count_lines(file: File) -> std::io::Result<usize> {
    let mut reader = BufReader::with_capacity(1 << 20, file);
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

/// The records that count of a results file (absent = none), by request id.
pub fn counting_records(path: &Path) -> Result<BTreeMap<String, TerminalRecord>, RunDirError> {
    let read = read_counting(path, true, |r| r)?;
    Ok(read
        .items
        .into_iter()
        .map(|r| (r.request_id.clone(), r))
        .collect())
}

/// How many refused records an error names.
pub const STRAYS_NAMED: usize = 5;

/// Refuses a records file holding a record that `judge` says this run did not write (it
/// returns the reason, e.g. another `run_id`, or a request outside the plan): the error names
/// the file, and the line and request of the first [`STRAYS_NAMED`] with their reasons. Every
/// complete line is judged, superseded ones too; a torn last line is left to crash repair.
pub fn refuse_strays(
    path: &Path,
    mut judge: impl FnMut(&TerminalRecord) -> Option<String>,
) -> Result<(), RunDirError> {
    let file = match open_read(path) {
        Ok(f) => f,
        Err(e) if not_found(&e) => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut count = 0usize;
    let mut named = Vec::new();
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut line = Vec::new();
    let mut line_no = 0u64;
    loop {
        line.clear();
        if read_line(&mut reader, &mut line, path, line_no + 1)? == 0 || line.last() != Some(&b'\n')
        {
            break;
        }
        line_no += 1;
        if line.trim_ascii().is_empty() {
            continue;
        }
        let record: TerminalRecord =
            serde_json::from_slice(&line).map_err(|source| RunDirError::Json {
                path: path.to_path_buf(),
                line: Some(line_no),
                source,
            })?;
        if let Some(reason) = judge(&record) {
            count += 1;
            if named.len() < STRAYS_NAMED {
                named.push(format!("line {line_no}: {} ({reason})", record.request_id));
            }
        }
    }
    if count == 0 {
        return Ok(());
    }
    Err(RunDirError::Strays {
        path: path.to_path_buf(),
        count,
        first: named.join("; "),
    })
}

/// The 1-based line numbers of every line of `path` holding a record of one of `ids`, in file
/// order: how an error names where a refused record sits (read only on that error's path).
pub fn lines_of(
    path: &Path,
    ids: &std::collections::HashSet<&str>,
) -> Result<BTreeMap<String, Vec<u64>>, RunDirError> {
    #[derive(serde::Deserialize)]
    struct IdOnly {
        request_id: String,
    }
    let mut found: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut reader = BufReader::with_capacity(1 << 20, open_read(path)?);
    let mut line = Vec::new();
    let mut line_no = 0u64;
    loop {
        line.clear();
        if read_line(&mut reader, &mut line, path, line_no + 1)? == 0 {
            break;
        }
        line_no += 1;
        if let Ok(id) = serde_json::from_slice::<IdOnly>(&line)
            && ids.contains(id.request_id.as_str())
        {
            found.entry(id.request_id).or_default().push(line_no);
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;
    use std::io::Write;

    fn rec(id: &str, outcome: Outcome, e2e: f64) -> String {
        let mut r = TerminalRecord::new("2026-01-01T00:00:00Z".into(), outcome);
        r.request_id = id.into();
        r.e2e_ms = Some(e2e);
        serde_json::to_string(&r).unwrap_or_default()
    }

    #[test]
    fn keeps_the_last_committed_record_per_request() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("results.jsonl");
        let mut body = Vec::new();
        for (id, outcome, e2e) in [
            ("a", Outcome::HarnessError, 1.0),
            ("b", Outcome::Completed, 2.0),
            ("a", Outcome::Completed, 3.0),
            ("b", Outcome::HarnessError, 4.0), // never replaces a committed one
            ("c", Outcome::HarnessError, 5.0), // all there is: kept
            ("c", Outcome::HarnessError, 6.0), // the last harness one wins
        ] {
            let _ = writeln!(body, "{}", rec(id, outcome, e2e));
        }
        // A torn last line that happens to hold a whole record: still not committed.
        body.extend_from_slice(rec("d", Outcome::Completed, 7.0).as_bytes());
        std::fs::write(&path, body).unwrap_or_else(|e| panic!("{e}"));
        let read = read_counting(&path, false, |r| (r.request_id, r.outcome, r.e2e_ms));
        let read = read.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            read.items,
            vec![
                ("a".to_string(), Outcome::Completed, Some(3.0)),
                ("b".to_string(), Outcome::Completed, Some(2.0)),
                ("c".to_string(), Outcome::HarnessError, Some(6.0)),
            ]
        );
        assert!(read.stats.ignored_partial_last_line);
        assert_eq!(read.stats.superseded, 3);
        assert_eq!(read.stats.lines, 6);
        // "a" went harness → committed and "b" committed → harness: neither is a duplicate.
        assert_eq!(read.stats.committed_duplicates, 0);
        let map = counting_records(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(map.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert!(counting_records(&dir.path().join("absent")).is_ok_and(|m| m.is_empty()));
        assert!(read_counting(&dir.path().join("absent"), false, |r| r).is_err());
    }

    #[test]
    fn a_second_committed_record_is_counted_and_named() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("results.jsonl");
        let mut body = Vec::new();
        for (id, outcome) in [
            ("a", Outcome::Completed),
            ("a", Outcome::TransportError),
            ("b", Outcome::HarnessError),
            ("b", Outcome::Completed),
            ("a", Outcome::Completed),
        ] {
            let _ = writeln!(body, "{}", rec(id, outcome, 1.0));
        }
        std::fs::write(&path, body).unwrap_or_else(|e| panic!("{e}"));
        let read = read_counting(&path, false, |r| r.outcome).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.stats.committed_duplicates, 2);
        assert_eq!(read.stats.duplicate_ids, vec!["a".to_string()]);
        assert_eq!(read.items, vec![Outcome::Completed, Outcome::Completed]);
    }

    /// More lines than several of the parsing thread's batches: order, line numbers, superseding
    /// and the torn tail must come through the hand-over unchanged.
    #[test]
    fn records_across_parsed_batches_keep_order_lines_and_superseding() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("results.jsonl");
        let mut body = Vec::new();
        // r0..r98 start as harness records and are replaced at the end; r99..r599 stand.
        for i in 0..600 {
            let outcome = if i < 99 {
                Outcome::HarnessError
            } else {
                Outcome::Completed
            };
            let _ = writeln!(body, "{}", rec(&format!("r{i}"), outcome, f64::from(i)));
            if i == 299 {
                body.push(b'\n');
            }
        }
        for i in 0..99 {
            let _ = writeln!(
                body,
                "{}",
                rec(&format!("r{i}"), Outcome::Completed, 1000.0 + f64::from(i))
            );
        }
        let _ = writeln!(body, "{}", rec("r600", Outcome::Completed, 600.0));
        body.extend_from_slice(b"{\"torn");
        std::fs::write(&path, body).unwrap_or_else(|e| panic!("{e}"));
        let read = read_counting(&path, false, |r| (r.request_id, r.outcome, r.e2e_ms));
        let read = read.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.items.len(), 601);
        for (i, (id, outcome, e2e)) in read.items.iter().enumerate() {
            assert_eq!(id, &format!("r{i}"));
            assert_eq!(*outcome, Outcome::Completed, "r{i}");
            let expected = if i < 99 { 1000 + i } else { i };
            assert_eq!(*e2e, Some(expected as f64), "r{i}");
        }
        assert_eq!(read.stats.lines, 700);
        assert_eq!(read.stats.superseded, 99);
        assert_eq!(read.stats.committed_duplicates, 0);
        assert!(read.stats.ignored_partial_last_line);

        // A broken line past the first batches is named by its line in the file: 300 records,
        // one blank line, 100 records, then the broken line 402.
        let mut body = Vec::new();
        for i in 0..400 {
            let _ = writeln!(body, "{}", rec(&format!("r{i}"), Outcome::Completed, 1.0));
            if i == 299 {
                body.push(b'\n');
            }
        }
        body.extend_from_slice(b"{broken\n");
        for i in 400..900 {
            let _ = writeln!(body, "{}", rec(&format!("r{i}"), Outcome::Completed, 1.0));
        }
        std::fs::write(&path, body).unwrap_or_else(|e| panic!("{e}"));
        match read_counting(&path, false, |r| r.request_id) {
            Err(RunDirError::Json { line, .. }) => assert_eq!(line, Some(402)),
            other => panic!("expected a bad line, got {other:?}"),
        }
    }

    #[test]
    fn a_broken_middle_line_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("results.jsonl");
        let body = format!(
            "{}\n{{broken\n{}\n",
            rec("a", Outcome::Completed, 1.0),
            rec("b", Outcome::Completed, 1.0)
        );
        std::fs::write(&path, body).unwrap_or_else(|e| panic!("{e}"));
        match read_counting(&path, false, |r| r.request_id) {
            Err(RunDirError::Json { line, .. }) => assert_eq!(line, Some(2)),
            other => panic!("expected a bad line, got {other:?}"),
        }
        let message = counting_records(&path).err().map(|e| e.to_string());
        assert!(message.is_some_and(|m| m.contains("results.jsonl:2:")));
    }
}
