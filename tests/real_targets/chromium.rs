//! Headless Chromium (Debian's `chromium`) for the HTML report tests: run it on a page with a
//! fresh profile and extra flags, read its console problems. Included by path from each test
//! that checks a report in a real browser.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Where Debian installs it.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Runs Chromium headless on `page` at `size` (width, height) with `extra` flags and a fresh
/// profile in `profile`; kills it after 60 s.
pub fn run(page: &Path, profile: &Path, size: (u32, u32), extra: &[String]) -> Output {
    let mut cmd = Command::new(CHROMIUM);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("--window-size={},{}", size.0, size.1))
    .args(extra)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start chromium");
    // Drain both pipes while waiting, so a chatty Chromium never blocks on a full pipe.
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn std::io::Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn std::io::Read + Send>),
    );
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait chromium") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("chromium did not finish within 60 s on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// Console problems in Chromium's log: uncaught exceptions and console errors.
pub fn console_errors(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| {
            l.contains("Uncaught") || l.contains("ERROR:CONSOLE") || l.contains(":CONSOLE(")
        })
        .map(str::to_string)
        .collect()
}

/// The page's DOM as Chromium built it, and its log (stderr, with console output).
pub fn dump_dom(page: &Path, profile: &Path, size: (u32, u32)) -> (String, String) {
    let out = run(
        page,
        profile,
        size,
        &[
            "--enable-logging=stderr".to_string(),
            "--v=0".to_string(),
            "--dump-dom".to_string(),
        ],
    );
    assert!(out.status.success(), "chromium --dump-dom failed: {out:?}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
