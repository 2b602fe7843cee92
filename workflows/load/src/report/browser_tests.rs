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
use browser::{CHROMIUM, check_report_page};
use std::path::Path;

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
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();

    for width in [1280u32, 1920] {
        let dom = check_report_page(page, &md, dir.path(), width);
        for heading in [
            "Throughput against offered load",
            "Latency against offered load",
        ] {
            assert!(dom.contains(&format!("<h2>{heading}</h2>")), "{heading}");
        }
        // Open and closed loops ran: 2 throughput + 3 latency charts each; 3 ITL and 3
        // goodput charts (one per step).
        assert_eq!(dom.matches("<svg class=\"chart\"").count(), 2 * 5 + 3 + 3);
        // The summary table's rows are on the page: 3 steps × (2 lanes + pooled).
        let summary = &dom[dom.find("<h2>Summary</h2>").unwrap()..];
        let summary = &summary[..summary.find("</section>").unwrap()];
        assert_eq!(summary.matches("<tr>").count(), 1 + 9);
    }
}
