//! Durable writes off the async runtime: one thread owns the run writer, so no
//! `fdatasync` blocks the two worker threads that also poll the in-process probes' sockets.
//!
//! The actor hands over each terminal execution as it arrives (appended at once, not fsynced)
//! and, when its round is complete, the round's line and checkpoint. The thread then commits the
//! round as a group — events, answers, then records fsynced ([`RunWriter::commit`]) — before it
//! appends the round line (fsynced) and replaces the checkpoint. So, as before, every record is
//! on disk before its round's checkpoint, and a record's commit point is the fsync that covers
//! its line; a record appended but not yet covered when the machine (not just the process) dies
//! is lost and its lane re-runs on resume. Load phases have no rounds: there a commit is asked
//! for after each record and runs at most every [`COMMIT_EVERY`], and the records that arrive
//! while it waits are written with it (held in memory until then, so the thread is not woken by
//! each). Closing the writer commits whatever is left.

use openbench_common::record::Execution;
use openbench_common::rundir::{Checkpoint, RoundLine, RunDirError, RunWriter};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

enum Command {
    Execution(Box<Execution>),
    Round(Box<(RoundLine, Checkpoint)>),
    Commit,
}

/// The shortest time between two group commits asked for by [`DurableWriter::commit`] (load
/// phases): under a steady stream of records a commit (four `fdatasync`s) runs at most this
/// often, each covering everything appended since the last. Committing as often as the disk
/// allowed cost a fifth of the load generator's CPU at 2,000 requests/s and pushed its send lag
/// past 1 ms (docs/performance.md). A lone record after a quiet spell is still committed at
/// once; a record waits at most this long, in memory, to be written and committed together with
/// the others, and a crash of the process or the machine in that window loses it, as it loses a
/// record in flight (its lane re-runs on resume). Writing each record as it came woke the
/// writer thread once per record, a tenth of the process's context switches at 500/s.
pub const COMMIT_EVERY: Duration = Duration::from_millis(100);

/// The handle of the writer thread.
pub struct DurableWriter {
    tx: Option<Sender<Command>>,
    thread: Option<JoinHandle<()>>,
    failure: Arc<Mutex<Option<String>>>,
    /// Set by [`DurableWriter::close`], so a thread asleep until a commit is due wakes now.
    closing: Arc<AtomicBool>,
}

impl DurableWriter {
    /// Starts the writer thread; `writer` should be opened with [`RunWriter::open_grouped`]
    /// (with [`RunWriter::open`] every record is also fsynced on its own).
    pub fn spawn(writer: RunWriter) -> Result<DurableWriter, RunDirError> {
        DurableWriter::spawn_committing_every(writer, COMMIT_EVERY)
    }

    /// [`DurableWriter::spawn`] with group commits at most every `interval`.
    pub fn spawn_committing_every(
        writer: RunWriter,
        interval: Duration,
    ) -> Result<DurableWriter, RunDirError> {
        let (tx, rx) = channel();
        let failure = Arc::new(Mutex::new(None));
        let seen = failure.clone();
        let closing = Arc::new(AtomicBool::new(false));
        let told = closing.clone();
        let thread = std::thread::Builder::new()
            .name("openbench-writer".into())
            .spawn(move || {
                if let Err(e) = write_loop(writer, rx, interval, &told)
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
            closing,
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

    /// Asks for a group commit of the records queued so far (load phases, which have no
    /// rounds): at once when the last one is at least [`COMMIT_EVERY`] old, else when it is, so
    /// one commit covers every record appended meanwhile.
    pub fn commit(&self) {
        self.send(Command::Commit);
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
        self.closing.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            if thread.join().is_err() {
                return Err("the writer thread panicked".into());
            }
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

/// The writer thread's state: what is appended but not yet durable, and when the last group
/// commit ran.
struct Committer {
    writer: RunWriter,
    uncommitted: bool,
    last_commit: Option<Instant>,
}

impl Committer {
    /// Appends executions together, one append per file.
    fn append_all(&mut self, executions: &[Box<Execution>]) -> Result<(), RunDirError> {
        if !executions.is_empty() {
            self.writer
                .append_executions(executions.iter().map(|e| &**e))?;
            self.uncommitted = true;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), RunDirError> {
        if self.uncommitted {
            self.writer.commit()?;
            self.uncommitted = false;
            self.last_commit = Some(Instant::now());
        }
        Ok(())
    }

    /// Writes one command's lines (a commit asked for among queued commands is covered by the
    /// one that drains them).
    fn apply(&mut self, command: Command) -> Result<(), RunDirError> {
        match command {
            Command::Execution(execution) => self.append_all(std::slice::from_ref(&execution)),
            Command::Round(round) => self.round(*round),
            Command::Commit => Ok(()),
        }
    }

    /// A round's records committed, then its line and checkpoint written.
    fn round(&mut self, round: (RoundLine, Checkpoint)) -> Result<(), RunDirError> {
        self.commit()?;
        let (line, checkpoint) = round;
        self.writer.append_round(&line)?;
        self.writer.checkpoint(&checkpoint)
    }
}

/// Writes commands in order until the channel closes, then commits what is left. While an
/// asked-for commit waits for `interval` since the last one, the thread sleeps (`closing` and an
/// unpark end the sleep early) and the records sent meanwhile wait in the channel: at the
/// commit they are appended and made durable together, so a steady stream of records wakes the
/// thread twice an interval, not once per record.
fn write_loop(
    writer: RunWriter,
    rx: Receiver<Command>,
    interval: Duration,
    closing: &AtomicBool,
) -> Result<(), RunDirError> {
    let mut state = Committer {
        writer,
        uncommitted: false,
        last_commit: None,
    };
    // When a commit that was asked for is due (`None`: none is waiting).
    let mut due: Option<Instant> = None;
    loop {
        if let Some(at) = due {
            let now = Instant::now();
            if now < at && !closing.load(Ordering::Acquire) {
                std::thread::park_timeout(at - now);
                continue;
            }
            // Append everything queued (each run of executions in one append per file), then
            // one commit for all.
            let mut batch = Vec::new();
            while let Ok(next) = rx.try_recv() {
                match next {
                    Command::Execution(execution) => batch.push(execution),
                    // This commit covers it.
                    Command::Commit => {}
                    other => {
                        state.append_all(&batch)?;
                        batch.clear();
                        state.apply(other)?;
                    }
                }
            }
            state.append_all(&batch)?;
            state.commit()?;
            due = None;
            continue;
        }
        let Ok(command) = rx.recv() else { break };
        if let Command::Commit = command {
            // At once when the last commit is `interval` old, else when it is.
            let now = Instant::now();
            due = Some(state.last_commit.map_or(now, |t| (t + interval).max(now)));
        } else {
            state.apply(command)?;
        }
    }
    state.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use openbench_common::record::{Outcome, TerminalRecord};
    use openbench_common::rundir::RunFiles;

    fn execution(id: &str) -> Execution {
        let mut record =
            TerminalRecord::new("2026-12-01T00:00:00.000000Z".into(), Outcome::Completed);
        record.request_id = id.into();
        Execution {
            record,
            events: Vec::new(),
        }
    }

    fn round(index: u64) -> (RoundLine, Checkpoint) {
        let line = RoundLine {
            round_index: index,
            round_id: format!("round-{index}"),
            released_at: String::new(),
            released_offset_ms: 0.0,
            launch_skew_ms: 0.0,
            coordinator_overhead_ms: None,
            round_ms: 0.0,
            lanes_dispatched: 2,
            harness_errors: 0,
            launch_order: vec!["a".into(), "b".into()],
            probe_launch_skew_ms: None,
            link_rtt_ms: Default::default(),
            out_of_round: false,
        };
        let checkpoint = Checkpoint {
            rounds_done: index as usize + 1,
            rounds_total: 2,
            last_round_index: Some(index),
            requests_done: 2 * (index as usize + 1),
            updated_at: String::new(),
        };
        (line, checkpoint)
    }

    fn ids(path: &std::path::Path, field: &str) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .map(|v| v[field].to_string())
            .collect()
    }

    #[test]
    fn records_rounds_and_checkpoints_land_in_order_and_close_commits_the_rest() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let files = RunFiles::new(dir.path(), 0);
        let writer = RunWriter::open_grouped(files.clone()).unwrap_or_else(|e| panic!("{e}"));
        let mut durable = DurableWriter::spawn(writer).unwrap_or_else(|e| panic!("{e}"));
        durable.execution(execution("req-1"));
        durable.execution(execution("req-2"));
        let (line, checkpoint) = round(0);
        durable.round(line, checkpoint);
        // The next round's first record, not yet covered by a round: close commits it.
        durable.execution(execution("req-3"));
        assert_eq!(durable.close(), Ok(()));
        assert_eq!(
            ids(&files.results, "request_id"),
            ["\"req-1\"", "\"req-2\"", "\"req-3\""]
        );
        assert_eq!(ids(&files.rounds, "round_index"), ["0"]);
        let saved: Checkpoint = openbench_common::rundir::read_json(&files.checkpoint)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((saved.rounds_done, saved.requests_done), (1, 2));
        // Closing again does nothing.
        assert_eq!(durable.close(), Ok(()));
    }

    /// Lines in `path` (0 when it does not exist yet).
    fn lines(path: &std::path::Path) -> usize {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .count()
    }

    /// Waits (up to 10 s) until `path` holds `n` lines.
    fn wait_for_lines(path: &std::path::Path, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while lines(path) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(lines(path), n, "{}", path.display());
    }

    /// Two records, each followed by a commit: the first commit runs at once, the second waits
    /// for `interval` (the second record written as it came, no commit waiting then) (chain lines are written only by a commit, after its records are fsynced).
    /// Returns the writer, its directory, results and chain files, and when the first record was
    /// sent.
    fn two_commits(interval: Duration) -> TwoCommits {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let files = RunFiles::new(dir.path(), 0);
        let chain = openbench_common::rundir::chain::chain_path(&files.results);
        let writer = RunWriter::open_grouped(files.clone()).unwrap_or_else(|e| panic!("{e}"));
        let durable = DurableWriter::spawn_committing_every(writer, interval)
            .unwrap_or_else(|e| panic!("{e}"));
        let started = Instant::now();
        durable.execution(execution("req-1"));
        durable.commit();
        wait_for_lines(&chain, 1);
        durable.execution(execution("req-2"));
        durable.commit();
        (durable, dir, files.results, chain, started)
    }

    type TwoCommits = (
        DurableWriter,
        tempfile::TempDir,
        std::path::PathBuf,
        std::path::PathBuf,
        Instant,
    );

    #[test]
    fn a_commit_asked_for_within_the_interval_waits_for_it_and_close_commits_it() {
        let (durable, _dir, results, chain, _) = two_commits(Duration::from_secs(3600));
        // The second record came while no commit waited: written at once, committed later.
        wait_for_lines(&results, 2);
        // The third comes while the second's commit waits: held in memory until it runs.
        durable.execution(execution("req-3"));
        durable.commit();
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(lines(&chain), 1);
        assert_eq!(lines(&results), 2);
        // Closing wakes the thread asleep until its commit (an hour away): it commits now.
        let (closed_tx, closed) = channel();
        let closing = std::thread::spawn(move || {
            let mut durable = durable;
            let _ = closed_tx.send(durable.close());
        });
        let closed = closed.recv_timeout(Duration::from_secs(60));
        assert_eq!(closed, Ok(Ok(())), "close did not wake the writer thread");
        let _ = closing.join();
        assert_eq!(lines(&chain), 3);
        assert_eq!(
            ids(&results, "request_id"),
            ["\"req-1\"", "\"req-2\"", "\"req-3\""]
        );
    }

    #[test]
    fn a_waiting_commit_runs_by_itself_once_the_interval_has_passed() {
        let interval = Duration::from_millis(300);
        let (mut durable, _dir, results, chain, started) = two_commits(interval);
        // No further command: the thread commits when the interval is up, not before.
        wait_for_lines(&chain, 2);
        assert!(started.elapsed() >= interval, "{:?}", started.elapsed());
        assert_eq!(lines(&results), 2);
        assert_eq!(durable.close(), Ok(()));
    }

    #[test]
    fn a_write_failure_stops_the_thread_and_names_the_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let files = RunFiles::new(dir.path(), 0);
        let writer = RunWriter::open_grouped(files.clone()).unwrap_or_else(|e| panic!("{e}"));
        // The checkpoint's place is taken by a non-empty directory: replacing it must fail.
        std::fs::create_dir_all(files.checkpoint.join("blocked")).unwrap_or_else(|e| panic!("{e}"));
        let mut durable = DurableWriter::spawn(writer).unwrap_or_else(|e| panic!("{e}"));
        durable.execution(execution("req-1"));
        let (line, checkpoint) = round(0);
        durable.round(line, checkpoint);
        durable.execution(execution("req-2"));
        let err = durable.close().err().unwrap_or_default();
        let name = files
            .checkpoint
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        assert!(err.contains(&name), "{err}");
        assert_eq!(durable.failed(), Some(err));
        // Nothing queued after the failure was written.
        assert_eq!(ids(&files.results, "request_id"), ["\"req-1\""]);
    }
}
