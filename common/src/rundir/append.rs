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
            files,
        })
    }

    /// Writes one execution: events and answer first, then the record (fsynced), the commit point.
    pub fn append_execution(&mut self, execution: &Execution) -> Result<(), RunDirError> {
        let record = &execution.record;
        if record.outcome.is_committed() {
            // Appended in blocks of about 64 KiB, not as one buffer the size of the stream.
            let mut buf = Vec::with_capacity(EVENT_BLOCK_BYTES + 1024);
            for event in &execution.events {
                let line = EventLine {
                    request_id: &record.request_id,
                    event,
                };
                push_line(&mut buf, &self.files.events, &line)?;
                if buf.len() >= EVENT_BLOCK_BYTES {
                    self.events.append_raw(&buf)?;
                    buf.clear();
                }
            }
            if !buf.is_empty() {
                self.events.append_raw(&buf)?;
            }
            self.reconstructed.append(&reconstructed(record))?;
        }
        let mut line = Vec::new();
        push_line(&mut line, &self.files.results, record)?;
        self.results.append_raw(&line)?;
        self.chain.push(&line);
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
