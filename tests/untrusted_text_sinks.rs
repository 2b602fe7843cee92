#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Bytes from an upstream or a spec never reach a terminal line or a Markdown table raw (issue 36,
//! class 6). An upstream on loopback answers every request with a 500 whose body sets the window
//! title, writes the clipboard (`ESC]52`), clears the screen and moves the cursor up over the
//! line before; a provider's `display_name` carries a newline, a fake table row and the same
//! escapes, plus HTML. Through the binary: `smoke` and `watch --plain` show the body escaped;
//! `run`, `report`, `publish` and `history` print no escape and keep `report.md`'s and
//! `history.md`'s tables one row per lane; `report.html` escapes the HTML.

mod coordinator_support;

use coordinator_support::{Prov, printed_run_dir, run_bin, sample_dataset, write_spec};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Output;

/// Title, clipboard write, clear screen, cursor up + carriage return over the previous line.
const BODY: &str =
    "\u{1b}]0;pwned-title\u{7}\u{1b}]52;c;cGF3bmVk\u{7}\u{1b}[2J\u{1b}[1A\rFAKE: smoke passed";
/// How the body's start reads once escaped.
const BODY_SHOWN: &str = "\\u{1b}]0;pwned-title\\u{7}\\u{1b}]52;c;cGF3bmVk\\u{7}\\u{1b}[2J";
/// The display name, as YAML (double-quoted: `\n`, `\e`, `\a` are escapes there).
const NAME_YAML: &str = r#""Evil\n| fake | 1 |\e]0;owned\a\e[2J<b>x</b>""#;
/// The display name as a Markdown cell shows it.
const NAME_CELL: &str = "Evil\\n\\| fake \\| 1 \\|\\u{1b}]0;owned\\u{7}\\u{1b}[2J<b>x</b>";

/// Serves the hostile 500 to every connection on a loopback port; returns the port.
fn hostile_upstream() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n",
                    BODY.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(BODY.as_bytes());
            });
        }
    });
    port
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

/// No byte a terminal would act on: ESC, BEL, CSI (C1) or a carriage return.
fn assert_inert(what: &str, text: &str) {
    for c in ['\u{1b}', '\u{7}', '\u{9b}', '\r'] {
        assert!(!text.contains(c), "{what} holds {c:?} raw:\n{text:?}");
    }
}

/// Every line of `md`'s tables that names the lane: exactly one, the escaped cell in it.
fn assert_one_row(what: &str, md: &str) {
    assert_inert(what, md);
    assert!(md.contains(NAME_CELL), "{what}:\n{md}");
    assert!(
        !md.lines()
            .any(|l| l.starts_with("| fake") || l.starts_with("]0;")),
        "{what}: the name broke a table:\n{md}"
    );
}

#[test]
fn an_upstream_error_body_is_shown_escaped_by_smoke_and_watch() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 5);
    let hostile = Prov {
        key: "hostile".into(),
        profile: "hostile".into(),
        extra: String::new(),
    };
    let spec = write_spec(tmp.path(), &data, &[hostile], 1, 0.01, 5000);
    let yaml = std::fs::read_to_string(&spec).unwrap().replace(
        "sim://hostile",
        &format!(
            "http://127.0.0.1:{}/v1/chat/completions",
            hostile_upstream()
        ),
    );
    std::fs::write(&spec, yaml).unwrap();
    let o = run_bin(
        tmp.path(),
        &["smoke", "--spec", spec.to_str().unwrap()],
        &[],
    );
    assert!(!o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert_inert("smoke", &out);
    assert!(
        out.contains(BODY_SHOWN),
        "smoke does not show the body:\n{out}"
    );

    let dir = printed_run_dir(&o.stdout);
    let o = run_bin(
        tmp.path(),
        &[
            "watch",
            "--plain",
            "--run-dir",
            tmp.path().join(dir).to_str().unwrap(),
        ],
        &[],
    );
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert_inert("watch --plain", &out);
    assert!(
        out.contains("\\u{1b}]0;pwned-title"),
        "watch does not show the body:\n{out}"
    );
}

#[test]
fn a_display_name_stays_in_its_cell_in_every_table_and_terminal_line() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let data = sample_dataset(cwd, "data", 5);
    let evil = Prov {
        key: "zai".into(),
        profile: "zai".into(),
        extra: format!("    display_name: {NAME_YAML}\n"),
    };
    let spec = write_spec(cwd, &data, &[evil, Prov::sim("modal")], 1, 0.01, 5000);
    let o = run_bin(
        cwd,
        &[
            "run",
            "--spec",
            spec.to_str().unwrap(),
            "--full",
            "--approve-full",
            "--approval-id",
            "ESC",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert_inert("run", &out);
    assert!(out.contains("Evil\\n| fake | 1 |\\u{1b}]0;owned"), "{out}");
    let run_dir = cwd.join(printed_run_dir(&o.stdout));
    assert_one_row(
        "report.md",
        &std::fs::read_to_string(run_dir.join("report.md")).unwrap(),
    );
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains("&lt;b&gt;x&lt;/b&gt;") && !html.contains("<b>x</b>"));

    let o = run_bin(
        cwd,
        &["report", "--run-dir", run_dir.to_str().unwrap()],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_inert("report", &text(&o));

    let store = cwd.join("store.sqlite");
    let store = store.to_str().unwrap();
    for args in [
        vec![
            "publish",
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--store",
            store,
        ],
        vec!["history", "--out", "hist", "--store", store],
    ] {
        let o = run_bin(cwd, &args, &[]);
        assert!(o.status.success(), "{}", text(&o));
        assert_inert(args[0], &text(&o));
    }
    assert_one_row(
        "history.md",
        &std::fs::read_to_string(cwd.join("hist/history.md")).unwrap(),
    );
}
