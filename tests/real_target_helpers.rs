#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The helpers of the real-target tests, against real child processes: a server that dies at
//! start is reported with its signal or exit code and its last log lines; a ready line is
//! found and its address parsed; a skip leaves its marker.

mod real_targets;

use real_targets::child::{LoggedChild, NotReady, address_after, exit_reason, last_lines};
use real_targets::skip::record_skip;
use std::process::Command;
use std::time::Duration;

/// `sh -c script` in `dir` (so a core file, if the machine writes one, lands in a tempdir).
fn sh(script: &str, dir: &std::path::Path) -> Command {
    let mut command = Command::new("sh");
    command.arg("-c").arg(script).current_dir(dir);
    command
}

#[test]
fn a_child_killed_by_sigill_at_start_is_reported_with_the_signal_and_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let script =
        "echo 'load_tensors: loading model'; echo 'ggml: using AMX kernels' >&2; kill -ILL $$";
    let mut child = LoggedChild::spawn("fake server", sh(script, dir.path()), &log).unwrap();
    let err = child
        .wait_ready(Duration::from_secs(60), |l| {
            address_after(l, "listening on http://")
        })
        .unwrap_err();
    let NotReady::Died(message) = err else {
        panic!("expected a death, got {err:?}");
    };
    assert!(
        message.starts_with("fake server died at start: killed by SIGILL (signal 4"),
        "{message}"
    );
    assert!(
        message.ends_with(":\nload_tensors: loading model\nggml: using AMX kernels"),
        "{message}"
    );
    assert!(message.contains(&log.display().to_string()), "{message}");
}

#[test]
fn a_child_that_exits_is_reported_with_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let script = "echo 'error: unknown argument --bogus' >&2; exit 3";
    let mut child = LoggedChild::spawn("fake server", sh(script, dir.path()), &log).unwrap();
    let err = child
        .wait_ready(Duration::from_secs(60), |l| {
            address_after(l, "listening on http://")
        })
        .unwrap_err();
    assert_eq!(
        err,
        NotReady::Died(format!(
            "fake server died at start: exited with code 3; last lines of {}:\nerror: unknown argument --bogus",
            log.display()
        ))
    );
}

#[test]
fn a_ready_line_gives_the_address_the_child_chose() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    // llama-server's line, with the colour codes a terminal would get.
    let script = "echo 'main: model loaded'; \
                  printf 'srv          main: listening on http://127.0.0.1:41243\\033[0m\\n'; \
                  exec sleep 60";
    let mut child = LoggedChild::spawn("fake server", sh(script, dir.path()), &log).unwrap();
    let addr = child
        .wait_ready(Duration::from_secs(60), |l| {
            address_after(l, "listening on http://")
        })
        .unwrap();
    assert_eq!(addr, "127.0.0.1:41243".parse().unwrap());
    // A child that stays silent is reported as not ready, with what it did print.
    let quiet_log = dir.path().join("quiet.log");
    let mut silent = LoggedChild::spawn(
        "quiet server",
        sh("echo starting; exec sleep 60", dir.path()),
        &quiet_log,
    )
    .unwrap();
    // Once it has printed its first line, it is given 200 ms to print an address.
    silent
        .wait_ready(Duration::from_secs(60), |l| (l == "starting").then_some(()))
        .unwrap();
    let err = silent
        .wait_ready(Duration::from_millis(200), |l| {
            address_after(l, "listening on http://")
        })
        .unwrap_err();
    assert_eq!(
        err,
        NotReady::TimedOut(format!(
            "quiet server not ready after 200 ms; last lines of {}:\nstarting",
            quiet_log.display()
        ))
    );
}

#[test]
fn a_line_read_half_written_is_not_ready_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("probe.log");
    // `probe serve`'s line reached the log in two writes, 300 ms apart (stderr is unbuffered):
    // a reader between them must not take "127.0" for the address.
    let script = "printf 'probe: region west serving no credentials on 127.0'; sleep 0.3; \
                  printf '.0.1:46539 (plaintext, no token)\\n'; exec sleep 60";
    let mut child = LoggedChild::spawn("fake probe", sh(script, dir.path()), &log).unwrap();
    let value = child
        .wait_ready(Duration::from_secs(60), |l| {
            let rest = l.split_once(" on ")?.1;
            rest.split_whitespace().next().map(str::to_string)
        })
        .unwrap();
    assert_eq!(value, "127.0.0.1:46539");
}

#[test]
fn exit_reasons_and_log_tails_read_as_words() {
    let status = |script: &str| {
        let dir = tempfile::tempdir().unwrap();
        sh(script, dir.path()).status().unwrap()
    };
    assert_eq!(exit_reason(status("exit 0")), "exited with code 0");
    assert_eq!(exit_reason(status("exit 101")), "exited with code 101");
    // "…, core dumped)" follows where the machine writes core files.
    let segv = exit_reason(status("kill -SEGV $$"));
    assert!(segv.starts_with("killed by SIGSEGV (signal 11"), "{segv}");
    assert_eq!(
        exit_reason(status("kill -TERM $$")),
        "killed by SIGTERM (signal 15)"
    );
    assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc");
    assert_eq!(last_lines("a\n", 5), "a");
    assert_eq!(last_lines("", 5), "(empty log)");
    assert_eq!(
        address_after("listening on http://[::1]:80", "listening on http://"),
        None
    );
    assert_eq!(
        address_after("no address here", "listening on http://"),
        None
    );
}

#[test]
fn a_skip_leaves_a_marker_named_after_the_test() {
    let dir = tempfile::tempdir().unwrap();
    let path = record_skip(
        dir.path(),
        "otlp_traces::probe_spans_join",
        "rotel-agent is not installed",
    )
    .unwrap();
    assert_eq!(path, dir.path().join("otlp_traces--probe_spans_join"));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "rotel-agent is not installed\n"
    );
}
