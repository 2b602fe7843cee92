//! `watch` for real: the terminal UI running in a tmux pane on the run directory of a `demo`
//! that another process is writing, asserted on `tmux capture-pane` text. The run progresses on
//! screen; a family filter and a sort key change what is shown; the demo is killed and resumed
//! while watch keeps reading (watch never holds the writer lock, so the resumed writer gets it);
//! `q` quits and gives the terminal back. Needs tmux (installed by `deploy/setup.sh`): skipped
//! visibly without it, a failure under `OPENBENCH_REQUIRE_REAL_TARGETS`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod real_targets;

use real_targets::child::LoggedChild;
use real_targets::skip::skip_or_fail;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The bundled simulated spec, relative to the repository root.
const SPEC: &str = "workflows/micro-single-task/specs/simulated.yaml";
/// Generous: the machine may be busy compiling; conditions are polled, never timed.
const LIMIT: Duration = Duration::from_secs(180);

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_openbench-inference")
}

/// A tmux server of this test only (its socket in the test's temporary directory), killed when
/// dropped.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux")
    }

    /// The pane's visible text.
    fn capture(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "watch"]).stdout)
            .into_owned()
    }

    fn keys(&self, keys: &str) {
        let o = self.run(&["send-keys", "-t", "watch", keys]);
        assert!(o.status.success(), "send-keys {keys}: {o:?}");
    }

    /// Polls the pane until `ready` holds; fails quoting the last screen after [`LIMIT`].
    fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let screen = self.capture();
            if ready(&screen) {
                return screen;
            }
            assert!(
                started.elapsed() < LIMIT,
                "watch never showed {what}; last screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// `N` of the header's `requests N/M`.
fn requests_done(screen: &str) -> Option<u64> {
    let rest = &screen[screen.find("requests ")? + "requests ".len()..];
    rest.split('/').next()?.trim().parse().ok()
}

/// The lanes-table row of `lane` (empty when not on screen).
fn lane_row<'a>(screen: &'a str, lane: &str) -> &'a str {
    let cell = format!("│{lane} ");
    screen
        .lines()
        .find(|l| l.starts_with(&cell))
        .unwrap_or_default()
}

fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The bundled simulated spec, copied into `dir` with its dataset path made absolute and its runs
/// kept under `dir` (not in the checkout).
fn demo_spec(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(SPEC)).unwrap();
    let data = root.join("data/micro-single-task");
    let runs = dir.join("runs");
    let text = text
        .replace(
            "source: ../../../data/micro-single-task",
            &format!("source: '{}'", data.display()),
        )
        .replace(
            "run_root: ../../../runs",
            &format!("run_root: '{}'", runs.display()),
        );
    assert!(
        text.contains(&*runs.to_string_lossy()),
        "the spec's run_root moved"
    );
    let spec = dir.join("simulated.yaml");
    std::fs::write(&spec, text).unwrap();
    spec
}

fn start_demo(cwd: &Path, log: &Path, run_dir: Option<&Path>) -> LoggedChild {
    let mut cmd = Command::new(bin());
    cmd.current_dir(cwd)
        .arg("demo")
        .arg("--spec")
        .arg(demo_spec(cwd))
        .env_remove("RUST_BACKTRACE");
    if let Some(dir) = run_dir {
        cmd.arg("--run-dir").arg(dir);
    }
    LoggedChild::spawn("demo", cmd, log).unwrap()
}

#[test]
fn watch_tui_follows_a_demo_run_in_tmux() {
    if !tmux_available() {
        skip_or_fail(
            "watch_tui_follows_a_demo_run_in_tmux",
            "tmux is not installed (deploy/setup.sh installs it)",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut demo = start_demo(tmp.path(), &tmp.path().join("demo-1.log"), None);
    let run_dir: PathBuf = demo
        .wait_ready(LIMIT, |line| {
            line.strip_prefix("run directory: ")
                .map(|p| tmp.path().join(p.trim()))
        })
        .unwrap();

    let tmux = Tmux {
        socket: tmp.path().join("tmux.sock"),
    };
    // The pane's command prints how watch ended, then stays so the text can be read.
    let command = format!(
        "'{}' watch --interval-ms 200 --run-dir '{}'; echo WATCH-EXITED $?; sleep 600",
        bin(),
        run_dir.display()
    );
    let o = tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "watch",
        "-x",
        "160",
        "-y",
        "50",
        &command,
    ]);
    assert!(o.status.success(), "tmux new-session: {o:?}");

    // The run progresses on screen while the demo (holding the writer lock) writes it.
    let first = tmux.wait_for("a full run with requests done", |s| {
        s.contains("[full, running]") && requests_done(s).is_some_and(|n| n > 0)
    });
    let n1 = requests_done(&first).unwrap();
    let later = tmux.wait_for("the request count growing", |s| {
        requests_done(s).is_some_and(|n| n > n1)
    });
    assert!(
        lane_row(&later, "zai").contains("/600 "),
        "each lane's progress is against its whole plan:\n{later}"
    );
    assert!(later.contains("TTFA p50/p95/p99"), "{later}");
    assert!(later.contains("launch skew per round"), "{later}");

    // `f` filters to the first family: each lane's plan is its 200 items of that family.
    tmux.keys("f");
    tmux.wait_for("the family filter", |s| {
        s.contains("family meeting-notes-lookup") && lane_row(s, "zai").contains("/200 ")
    });
    // `s` sorts by the next key (progress).
    tmux.keys("s");
    tmux.wait_for("the progress sort", |s| s.contains("sorted by progress"));
    tmux.keys("a");
    tmux.wait_for("the filters cleared", |s| s.contains("family all"));

    // The writer dies and a new one resumes the run while watch keeps reading: the new writer
    // gets the lock (watch holds none) and the count goes on growing past where it stopped.
    drop(demo);
    let at_kill = tmux.wait_for("the count after the kill", |s| requests_done(s).is_some());
    let n_kill = requests_done(&at_kill).unwrap();
    let resumed_log = tmp.path().join("demo-2.log");
    let resumed = start_demo(tmp.path(), &resumed_log, Some(&run_dir));
    tmux.wait_for("the resumed run's progress", |s| {
        requests_done(s).is_some_and(|n| n > n_kill + 10)
    });
    let log = resumed.log_text();
    assert!(!log.contains("refusing to open it"), "{log}");

    // `q` quits and gives the terminal back.
    tmux.keys("q");
    let end = tmux.wait_for("watch exiting", |s| s.contains("WATCH-EXITED"));
    assert!(end.contains("WATCH-EXITED 0"), "{end}");
    assert!(
        !end.contains("TTFA p50/p95/p99"),
        "the main screen is back:\n{end}"
    );
    drop(resumed);
}
