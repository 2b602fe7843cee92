//! Durable writes off the async runtime (issue 12): one thread owns the run writer, so no
//! `fdatasync` blocks the two worker threads that also poll the in-process probes' sockets.
//!
//! The actor hands over each terminal execution as it arrives (appended at once, not fsynced)
//! and, when its round is complete, the round's line and checkpoint. The thread then commits the
//! round as a group — events, answers, then records fsynced ([`RunWriter::commit`]) — before it
//! appends the round line (fsynced) and replaces the checkpoint. So, as before, every record is
//! on disk before its round's checkpoint, and a record's commit point is the fsync that covers
//! its line; a record appended but not yet covered when the machine (not just the process) dies
//! is lost and its lane re-runs on resume. Closing the writer commits whatever is left.

use openbench_common::record::Execution;
use openbench_common::rundir::{Checkpoint, RoundLine, RunDirError, RunWriter};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

enum Command {
    Execution(Box<Execution>),
    Round(Box<(RoundLine, Checkpoint)>),
}

/// The handle of the writer thread.
pub struct DurableWriter {
    tx: Option<Sender<Command>>,
    thread: Option<JoinHandle<()>>,
    failure: Arc<Mutex<Option<String>>>,
}

impl DurableWriter {
    /// Starts the writer thread; `writer` should be opened with [`RunWriter::open_grouped`]
    /// (with [`RunWriter::open`] every record is also fsynced on its own).
    pub fn spawn(writer: RunWriter) -> Result<DurableWriter, RunDirError> {
        let (tx, rx) = channel();
        let failure = Arc::new(Mutex::new(None));
        let seen = failure.clone();
        let thread = std::thread::Builder::new()
            .name("openbench-writer".into())
            .spawn(move || {
                if let Err(e) = write_loop(writer, rx)
                    && let Ok(mut slot) = seen.lock()
                {
                    *slot = Some(e.to_string());
                }
            })
            .map_err(|source| RunDirError::Io {
                path: "writer thread".into(),
                source,
            })?;
        Ok(DurableWriter {
            tx: Some(tx),
            thread: Some(thread),
            failure,
        })
    }

    /// Queues a terminal execution (its events, answer and record).
    pub fn execution(&self, execution: Execution) {
        self.send(Command::Execution(Box::new(execution)));
    }

    /// Queues a finished round: its records are committed, then `line` and `checkpoint` written.
    pub fn round(&self, line: RoundLine, checkpoint: Checkpoint) {
        self.send(Command::Round(Box::new((line, checkpoint))));
    }

    fn send(&self, command: Command) {
        if let Some(tx) = &self.tx {
            // A closed channel means the thread stopped on an error, which `failed` reports.
            let _ = tx.send(command);
        }
    }

    /// The error that stopped the writer thread, if one did (nothing queued after it is written).
    pub fn failed(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }

    /// Commits everything queued and stops the thread (blocking until it has); returns the error
    /// that stopped it, if any. Later calls do nothing.
    pub fn close(&mut self) -> Result<(), String> {
        self.tx = None;
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            return Err("the writer thread panicked".into());
        }
        match self.failed() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for DurableWriter {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Writes commands in order until the channel closes, then commits what is left.
fn write_loop(mut writer: RunWriter, rx: Receiver<Command>) -> Result<(), RunDirError> {
    let mut uncommitted = false;
    for command in rx {
        match command {
            Command::Execution(execution) => {
                writer.append_execution(&execution)?;
                uncommitted = true;
            }
            Command::Round(round) => {
                if uncommitted {
                    writer.commit()?;
                    uncommitted = false;
                }
                let (line, checkpoint) = *round;
                writer.append_round(&line)?;
                writer.checkpoint(&checkpoint)?;
            }
        }
    }
    if uncommitted {
        writer.commit()?;
    }
    Ok(())
}
