//! `report.html` of the hand-built run in a real browser: headless Chromium screenshots it (the
//! PNG has the window's size and is far from blank) and dumps the DOM it built, which must hold
//! every section and chart and log no console error. Without `/usr/bin/chromium` the test
//! reports itself skipped (`tests/real_targets/skip.rs`: a failure when real targets are
//! required).

#[path = "../../../../tests/real_targets/skip.rs"]
mod skip;

#[path = "../../../../tests/real_targets/chromium.rs"]
#[allow(clippy::expect_used)]
mod browser;

use super::fixture::results;
use super::write_reports;
use browser::{CHROMIUM, console_errors, dump_dom};
use std::path::Path;

const SIZE: (u32, u32) = (1280, 2400);

/// Width and height from a PNG's IHDR chunk (bytes 16..24, big-endian).
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
    (be(16), be(20))
}

#[test]
fn load_report_html_renders_in_headless_chromium() {
    if !Path::new(CHROMIUM).is_file() {
        skip::skip_or_fail(
            "report::browser_tests::load_report_html_renders_in_headless_chromium",
            &format!("chromium is not installed ({CHROMIUM} missing; deploy/setup.sh installs it)"),
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let outcome = write_reports(dir.path(), &results()).unwrap();
    let page = &outcome.written[1];
    assert_eq!(*page, dir.path().join("report.html"));

    let png_path = dir.path().join("report.png");
    let out = browser::run(
        page,
        &dir.path().join("profile-1"),
        SIZE,
        &[format!("--screenshot={}", png_path.display())],
    );
    assert!(
        out.status.success(),
        "chromium --screenshot failed: {out:?}"
    );
    let png = std::fs::read(&png_path).unwrap();
    assert_eq!(png_size(&png), SIZE);
    // A blank 1280×2400 page compresses to a few kilobytes; charts and tables do not.
    assert!(
        png.len() > 60_000,
        "screenshot of {} bytes looks blank",
        png.len()
    );

    let (dom, stderr) = dump_dom(page, &dir.path().join("profile-2"), SIZE);
    assert_eq!(console_errors(&stderr), Vec::<String>::new());
    for heading in [
        "Latency against achieved load",
        "Inter-token latency by step",
        "Goodput per step",
        "Failures by step",
    ] {
        assert!(dom.contains(&format!("<h2>{heading}</h2>")), "{heading}");
    }
    // Two curve charts, three ITL charts, three goodput charts.
    assert_eq!(dom.matches("<svg class=\"chart\"").count(), 8);
}
