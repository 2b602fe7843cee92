//! Child processes of the real-target tests (llama-server, the OTLP collector): started with
//! their output in a log file, waited on until a log line says they are ready or they die, and
//! killed when dropped. A death is reported with its reason (the signal or the exit code) and
//! the log's last lines, so a failure says why without a rerun.

use std::net::SocketAddr;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Log lines quoted when a child dies or is not ready in time.
const QUOTED_LINES: usize = 20;
/// How often the log and the child's state are checked while waiting.
const POLL: Duration = Duration::from_millis(50);

/// Why a child did not become ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReady {
    /// It exited first; the message names the reason and quotes the log.
    Died(String),
    /// It was still running, silent about readiness, when the wait ended.
    TimedOut(String),
}

impl std::fmt::Display for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotReady::Died(message) | NotReady::TimedOut(message) => f.write_str(message),
        }
    }
}

/// A child process whose stdout and stderr go to one log file; killed and reaped on drop.
pub struct LoggedChild {
    child: Child,
    log: PathBuf,
    what: String,
}

impl LoggedChild {
    /// Spawns `command` (described as `what` in messages) with its output in the file `log`.
    pub fn spawn(what: &str, mut command: Command, log: &Path) -> Result<LoggedChild, String> {
        let file = std::fs::File::create(log)
            .map_err(|e| format!("{what}: cannot create the log {}: {e}", log.display()))?;
        let err = file
            .try_clone()
            .map_err(|e| format!("{what}: cannot share the log {}: {e}", log.display()))?;
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| format!("{what}: cannot start {:?}: {e}", command.get_program()))?;
        Ok(LoggedChild {
            child,
            log: log.to_path_buf(),
            what: what.to_string(),
        })
    }

    /// Waits until some log line gives `ready(line) == Some(value)` and returns the first such
    /// value. Fails when the child exits first (quoting why and the log's last lines) or when
    /// `limit` passes.
    pub fn wait_ready<T>(
        &mut self,
        limit: Duration,
        ready: impl Fn(&str) -> Option<T>,
    ) -> Result<T, NotReady> {
        let started = Instant::now();
        loop {
            // The state first, then the log: a line written just before an exit is still seen.
            let exited = self.child.try_wait().map_err(|e| {
                NotReady::Died(format!("{}: cannot query its state: {e}", self.what))
            })?;
            let text = self.log_text();
            // Whole lines only: stderr is unbuffered, so one `eprintln!` may reach the log in
            // several writes, and a line read half-way ("… on 127.0") would pass for a value.
            let whole = text.rfind('\n').map_or("", |end| &text[..end]);
            if let Some(value) = whole.lines().find_map(&ready) {
                return Ok(value);
            }
            if let Some(status) = exited {
                return Err(NotReady::Died(format!(
                    "{} died at start: {}; last lines of {}:\n{}",
                    self.what,
                    exit_reason(status),
                    self.log.display(),
                    last_lines(&text, QUOTED_LINES)
                )));
            }
            if started.elapsed() >= limit {
                return Err(NotReady::TimedOut(format!(
                    "{} not ready after {} ms; last lines of {}:\n{}",
                    self.what,
                    limit.as_millis(),
                    self.log.display(),
                    last_lines(&text, QUOTED_LINES)
                )));
            }
            std::thread::sleep(POLL);
        }
    }

    /// The child's process id (to signal it: SIGSTOP, SIGCONT, SIGKILL).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The child's process id while it runs (`None` once it has exited).
    pub fn pid(&mut self) -> Option<u32> {
        matches!(self.child.try_wait(), Ok(None)).then(|| self.child.id())
    }

    /// Everything the child has written so far (empty when the log cannot be read).
    pub fn log_text(&self) -> String {
        std::fs::read(&self.log)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    }
}

/// Starts `program` with `args` and `env` in `dir`, its output in `dir/<what>.log`, and returns
/// it with the value `ready` finds in its log within a minute; panics (quoting the log) otherwise.
pub fn start_ready<T>(
    program: &str,
    dir: &Path,
    what: &str,
    args: &[&str],
    env: &[(&str, &str)],
    ready: impl Fn(&str) -> Option<T>,
) -> (LoggedChild, T) {
    let mut command = Command::new(program);
    command.current_dir(dir).args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = LoggedChild::spawn(what, command, &dir.join(format!("{what}.log")))
        .unwrap_or_else(|e| panic!("{e}"));
    let value = child
        .wait_ready(Duration::from_secs(60), ready)
        .unwrap_or_else(|e| panic!("{e}"));
    (child, value)
}

impl Drop for LoggedChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Why a process ended, in words: `killed by SIGILL (signal 4)`, `exited with code 1`.
pub fn exit_reason(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with code {code}");
    }
    match status.signal() {
        Some(signal) => {
            let name = signal_name(signal).unwrap_or("an unnamed signal");
            let core = if status.core_dumped() {
                ", core dumped"
            } else {
                ""
            };
            format!("killed by {name} (signal {signal}{core})")
        }
        None => format!("ended without an exit code or a signal ({status})"),
    }
}

/// The name of a signal that can end a server at start.
fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}

/// The last `n` lines of `text` (all of it when shorter), or `(empty log)`.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return "(empty log)".to_string();
    }
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The loopback address a server printed after `marker` on `line` (for `listening on
/// http://127.0.0.1:41243`, the marker is `listening on http://`); trailing text is ignored.
pub fn address_after(line: &str, marker: &str) -> Option<SocketAddr> {
    let rest = line.split_once(marker)?.1;
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ':'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}
