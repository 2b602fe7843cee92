//! How one execution lands in a plan's raw files. The terminal record is the commit point: its
//! events and answer are appended first, then the record is appended and fsynced — on its own
//! ([`RunWriter::open`]) or with the rest of its round, in one group commit
//! ([`RunWriter::open_grouped`] and [`RunWriter::commit`], before the round's line and
//! checkpoint); each record's line is chained ([`chain`]) once it is durable. Resume repairs
//! torn lines, drops events of uncommitted requests and extends the chain ([`repair`]).

use super::RunDirError;
use super::chain::{self, ChainWriter};
use super::layout::RunFiles;
use super::schema::{Checkpoint, Reconstructed, RoundLine};
use super::write::{JsonlWriter, keep_committed_lines, push_line, repair_jsonl, write_json_atomic};
use crate::record::{Execution, StreamEvent, TerminalRecord};
use std::collections::BTreeSet;

/// Appends executions and round lines for one plan.
pub struct RunWriter {
    files: RunFiles,
    results: JsonlWriter,
    events: JsonlWriter,
    reconstructed: JsonlWriter,
    rounds: JsonlWriter,
    /// The records chain ([`chain`]): pushed with each record, written once it is durable.
    chain: ChainWriter,
    /// True when every record is fsynced as it is written (so is its chain line).
    fsync_each_record: bool,
    /// The lines of the append in progress, kept between appends.
    buf: Vec<u8>,
}

/// Bytes of event lines gathered before each append.
const EVENT_BLOCK_BYTES: usize = 64 << 10;

/// One line of `raw/stream-events.jsonl`: the record's request id, then the event.
#[derive(serde::Serialize)]
struct EventLine<'a> {
    request_id: &'a str,
    #[serde(flatten)]
    event: &'a StreamEvent,
}

impl RunWriter {
    /// Opens every raw file of the plan for appending; every record is fsynced as it is written.
    pub fn open(files: RunFiles) -> Result<RunWriter, RunDirError> {
        RunWriter::open_with(files, true)
    }

    /// Opens every raw file for group commit: records are appended without an fsync each, and
    /// [`RunWriter::commit`] makes everything appended so far durable at once.
    pub fn open_grouped(files: RunFiles) -> Result<RunWriter, RunDirError> {
        RunWriter::open_with(files, false)
    }

    fn open_with(files: RunFiles, fsync_each_record: bool) -> Result<RunWriter, RunDirError> {
        Ok(RunWriter {
            results: JsonlWriter::open(&files.results, fsync_each_record)?,
            events: JsonlWriter::open(&files.events, false)?,
            reconstructed: JsonlWriter::open(&files.reconstructed, false)?,
            rounds: JsonlWriter::open(&files.rounds, true)?,
            chain: ChainWriter::open(&files.results)?,
            fsync_each_record,
            buf: Vec::with_capacity(EVENT_BLOCK_BYTES + 1024),
            files,
        })
    }

    /// Writes one execution: events and answer first, then the record (fsynced), the commit point.
    pub fn append_execution(&mut self, execution: &Execution) -> Result<(), RunDirError> {
        self.append_executions([execution])
    }

    /// Writes several executions in one append per file: every event, then every answer, then
    /// every record (fsynced, the commit point) and its chain line, each file's lines in the
    /// executions' order. One write per file for a batch, not three per execution (the load
    /// phases' writer thread hands over everything that arrived while a commit waited).
    pub fn append_executions<'e>(
        &mut self,
        executions: impl IntoIterator<Item = &'e Execution> + Clone,
    ) -> Result<(), RunDirError> {
        // The buffer is kept between calls (64 KiB, allocated once, not per execution).
        let mut buf = std::mem::take(&mut self.buf);
        let written = self.append_with(&mut buf, executions);
        buf.clear();
        self.buf = buf;
        written
    }

    fn append_with<'e>(
        &mut self,
        buf: &mut Vec<u8>,
        executions: impl IntoIterator<Item = &'e Execution> + Clone,
    ) -> Result<(), RunDirError> {
        let committed = || {
            executions
                .clone()
                .into_iter()
                .filter(|e| e.record.outcome.is_committed())
        };
        buf.clear();
        // Appended in blocks of about 64 KiB, not as one buffer the size of the streams.
        for execution in committed() {
            for event in &execution.events {
                let line = EventLine {
                    request_id: &execution.record.request_id,
                    event,
                };
                push_line(buf, &self.files.events, &line)?;
                if buf.len() >= EVENT_BLOCK_BYTES {
                    flush(&mut self.events, buf)?;
                }
            }
        }
        flush(&mut self.events, buf)?;
        for execution in committed() {
            push_line(
                buf,
                &self.files.reconstructed,
                &reconstructed(&execution.record),
            )?;
        }
        flush(&mut self.reconstructed, buf)?;
        let mut starts = Vec::new();
        for execution in executions {
            starts.push(buf.len());
            push_line(buf, &self.files.results, &execution.record)?;
        }
        if buf.is_empty() {
            return Ok(());
        }
        self.results.append_raw(buf)?;
        starts.push(buf.len());
        for line in starts.windows(2) {
            self.chain.push(&buf[line[0]..line[1]]);
        }
        if self.fsync_each_record {
            self.chain.commit()?;
        }
        Ok(())
    }

    /// The group commit: fsyncs the events and answers appended so far, then the records, so a
    /// record on disk has its events on disk too, and last the records' chain lines, so the
    /// chain never covers a record that is not on disk. Every record appended before this call
    /// is committed when it returns.
    pub fn commit(&mut self) -> Result<(), RunDirError> {
        self.events.sync()?;
        self.reconstructed.sync()?;
        self.results.sync()?;
        self.chain.commit()
    }

    /// Appends a round line (fsynced).
    pub fn append_round(&mut self, line: &RoundLine) -> Result<(), RunDirError> {
        self.rounds.append(line)
    }

    /// Replaces the checkpoint atomically.
    pub fn checkpoint(&self, checkpoint: &Checkpoint) -> Result<(), RunDirError> {
        write_json_atomic(&self.files.checkpoint, checkpoint)
    }
}

/// Appends what `buf` holds to `file`, if anything, and empties it.
fn flush(file: &mut JsonlWriter, buf: &mut Vec<u8>) -> Result<(), RunDirError> {
    if !buf.is_empty() {
        file.append_raw(buf)?;
        buf.clear();
    }
    Ok(())
}

fn reconstructed(record: &TerminalRecord) -> Reconstructed {
    Reconstructed {
        request_id: record.request_id.clone(),
        provider: record.provider.clone(),
        lane: record.lane.clone(),
        item_id: record.item_id.clone(),
        task_family: record.task_family.clone(),
        answer_text: record.answer_text.clone(),
        reasoning_text: record.reasoning_text.clone(),
        finish_reason: record.finish_reason.clone(),
    }
}

/// Crash repair before a resume: drop half-written last lines of every raw file, then keep in the
/// events and answers files only lines of requests in `committed` (at most one answer per
/// request), so a request interrupted between its events and its record leaves nothing behind;
/// last, verifies the records chain and extends it over the committed lines past its end
/// ([`chain::extend`]): a records file changed since it was written is refused, naming the line.
pub fn repair(files: &RunFiles, committed: &BTreeSet<String>) -> Result<(), RunDirError> {
    for path in [
        &files.results,
        &files.events,
        &files.reconstructed,
        &files.rounds,
    ] {
        repair_jsonl(path)?;
    }
    keep_committed_lines(&files.events, committed, false)?;
    keep_committed_lines(&files.reconstructed, committed, true)?;
    chain::extend(&files.results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Classification, Outcome};

    fn execution(id: &str, outcome: Outcome, answers: &[&str]) -> Execution {
        let mut record = TerminalRecord::new("2026-12-07T00:00:00.000000Z".into(), outcome);
        record.request_id = id.into();
        record.answer_text = answers.concat();
        let events = (0u32..)
            .zip(answers)
            .map(|(index, answer)| StreamEvent {
                request_id: String::new(),
                index,
                offset_ms: 1.5 * f64::from(index + 1),
                classification: Classification::Answer,
                event: None,
                reasoning: String::new(),
                answer: (*answer).into(),
                finish_reason: None,
            })
            .collect();
        Execution { record, events }
    }

    fn read(path: &std::path::Path) -> String {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// A committed execution with two events, a harness record (no events, no answer line), a
    /// committed one with one event.
    fn three() -> [Execution; 3] {
        [
            execution("req-a", Outcome::Completed, &["{\"x\":", "1}"]),
            execution("req-b", Outcome::HarnessError, &[]),
            execution("req-c", Outcome::Completed, &["{}"]),
        ]
    }

    #[test]
    fn a_batch_writes_the_same_files_as_one_execution_at_a_time() {
        let (one, batch) = (tempfile::tempdir(), tempfile::tempdir());
        let (one, batch) = match (one, batch) {
            (Ok(a), Ok(b)) => (a, b),
            _ => panic!("temporary directories"),
        };
        let executions = three();
        let one_files = RunFiles::new(one.path(), 0);
        let mut writer =
            RunWriter::open_grouped(one_files.clone()).unwrap_or_else(|e| panic!("{e}"));
        for execution in &executions {
            writer
                .append_execution(execution)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        writer.commit().unwrap_or_else(|e| panic!("{e}"));
        let batch_files = RunFiles::new(batch.path(), 0);
        let mut writer =
            RunWriter::open_grouped(batch_files.clone()).unwrap_or_else(|e| panic!("{e}"));
        writer
            .append_executions(&executions)
            .unwrap_or_else(|e| panic!("{e}"));
        writer.commit().unwrap_or_else(|e| panic!("{e}"));

        // What each file must hold, written out by hand: events and answers of the committed
        // executions only, every record, one chain line per record.
        let events = read(&batch_files.events);
        let ids: Vec<_> = events
            .lines()
            .map(|l| l.split('"').nth(3).unwrap_or_default().to_owned())
            .collect();
        assert_eq!(ids, ["req-a", "req-a", "req-c"]);
        assert!(events.starts_with(
            "{\"request_id\":\"req-a\",\"index\":0,\"offset_ms\":1.5,\"classification\":\"answer\""
        ));
        let answers: Vec<_> = read(&batch_files.reconstructed)
            .lines()
            .map(|l| l.split('"').nth(3).unwrap_or_default().to_owned())
            .collect();
        assert_eq!(answers, ["req-a", "req-c"]);
        assert_eq!(read(&batch_files.results).lines().count(), 3);
        let chain = |files: &RunFiles| read(&chain::chain_path(&files.results));
        assert_eq!(chain(&batch_files).lines().count(), 3);
        for (name, path_one, path_batch) in [
            ("events", &one_files.events, &batch_files.events),
            (
                "answers",
                &one_files.reconstructed,
                &batch_files.reconstructed,
            ),
            ("records", &one_files.results, &batch_files.results),
        ] {
            assert_eq!(read(path_one), read(path_batch), "{name}");
        }
        assert_eq!(chain(&one_files), chain(&batch_files));
    }
}
