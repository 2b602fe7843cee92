//! SIGKILL and resume machinery of the crash tests (`coordinator_kill`, `fault_soak`): a seeded
//! generator for kill moments, a full run killed once a number of new records is on disk, and the
//! invariants a killed or resumed run directory must hold.

use super::{bin, committed_counts, lines, planned};
use openbench_common::record::TerminalRecord;
use openbench_common::rundir as layout;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A tiny seeded generator for kill delays (no dependency needed for this).
pub struct Lcg(pub u64);

impl Lcg {
    /// A number in `lo..hi`.
    pub fn next_in(&mut self, lo: u64, hi: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (self.0 >> 33) % (hi - lo)
    }
}

/// The arguments of `run --full` on `dir` with approval id `K-1`.
pub fn full_args<'a>(spec: &'a str, dir: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--spec",
        spec,
        "--run-dir",
        dir,
        "--full",
        "--approve-full",
        "--approval-id",
        "K-1",
    ]
}

/// Newline-terminated lines of the run's full results file (0 when absent).
pub fn result_lines(dir: &Path) -> usize {
    std::fs::read(dir.join(layout::FULL_RESULTS))
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}

/// Starts `run --full` in `cwd` and SIGKILLs it once `target` result lines are on disk plus
/// `extra` (or after 30 s without them); with no target it lets the run end by itself. `sample`
/// is called with the child's pid every poll while it runs (to read its memory, or to act at a
/// moment of the run). Returns true when a kill landed before the run ended by itself.
pub fn run_until_killed(
    cwd: &Path,
    spec: &str,
    dir: &Path,
    target: Option<usize>,
    extra: Duration,
    mut sample: impl FnMut(u32),
) -> bool {
    let dir_s = dir.to_str().unwrap_or_default();
    let mut child = Command::new(bin())
        .current_dir(cwd)
        .args(full_args(spec, dir_s))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let waiting = |started: Instant| match target {
        Some(target) => result_lines(dir) < target && started.elapsed() < Duration::from_secs(30),
        None => true,
    };
    while waiting(started) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        sample(child.id());
        std::thread::sleep(Duration::from_millis(2));
    }
    if target.is_none() {
        child.wait().unwrap();
        return false;
    }
    std::thread::sleep(extra);
    let killed = child.try_wait().unwrap().is_none();
    if killed {
        child.kill().unwrap(); // SIGKILL
    }
    child.wait().unwrap();
    killed
}

/// Resident memory of a live process in bytes (`VmRSS`), `None` once it is gone.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The lines of a JSON-lines file right after a SIGKILL: a kill inside a `write` can leave a torn
/// last line (no newline; seen once in a CI run, in `raw/stream-events.jsonl`), which the next
/// resume drops. Every complete line must parse; a missing file has no lines.
fn lines_after_kill(path: &Path) -> Vec<serde_json::Value> {
    let bytes = std::fs::read(path).unwrap_or_default();
    let whole = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(end) => &bytes[..=end],
        None => &[][..],
    };
    std::str::from_utf8(whole)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `after_kill`: the state right after a SIGKILL, before any resume repaired it. Events and answers
/// are written just before their record (the record is the commit), so a kill can leave those of
/// the in-flight round's requests (at most one per lane, `lanes` lanes) without a record, and a
/// torn last line in any raw file; the next resume drops them. After a resume, nothing uncommitted
/// and no torn line may remain (every line is parsed).
pub fn check_invariants(dir: &Path, after_kill: bool, lanes: usize) {
    let read = |name: &str| {
        if after_kill {
            lines_after_kill(&dir.join(name))
        } else {
            lines(&dir.join(name))
        }
    };
    let plan = planned(&dir.join(layout::FULL_PLAN));
    let planned_ids: BTreeSet<String> = plan.iter().map(|(id, _, _)| id.clone()).collect();
    let recs: Vec<TerminalRecord> = read(layout::FULL_RESULTS)
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    let counts = committed_counts(&recs);
    for (id, n) in &counts {
        assert_eq!(*n, 1, "{id} committed {n} times");
        assert!(planned_ids.contains(id), "{id} is not planned");
    }
    let mut keys = BTreeSet::new();
    let mut uncommitted = BTreeSet::new();
    for e in read(layout::STREAM_EVENTS) {
        let id = e["request_id"].as_str().unwrap().to_string();
        if !counts.contains_key(&id) {
            assert!(after_kill, "events of uncommitted {id} after a resume");
            assert!(planned_ids.contains(&id), "events of unplanned {id}");
            uncommitted.insert(id.clone());
        }
        assert!(
            keys.insert((id, e["index"].as_u64().unwrap())),
            "duplicated event"
        );
    }
    let mut answered = BTreeSet::new();
    for a in read(layout::RECONSTRUCTED) {
        let id = a["request_id"].as_str().unwrap().to_string();
        if !counts.contains_key(&id) {
            assert!(after_kill, "answer of uncommitted {id} after a resume");
            uncommitted.insert(id.clone());
        }
        assert!(answered.insert(id), "duplicated answer");
    }
    // One round in flight: at most one uncommitted request per lane.
    assert!(
        uncommitted.len() <= lanes,
        "{} uncommitted requests",
        uncommitted.len()
    );
}

/// Sends SIGINT to `child`, as Ctrl-C in its terminal would: the run finishes its round,
/// checkpoints and exits 130, resumable.
pub fn interrupt(child: &std::process::Child) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
}
