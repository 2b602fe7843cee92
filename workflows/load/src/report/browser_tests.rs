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

/// Width and height from a PNG's IHDR chunk (bytes 16..24, big-endian).
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
    (be(16), be(20))
}

/// Appended to a copy of the page (the report itself has no script): lists, into the DOM that
/// `--dump-dom` prints, every element whose content is wider than its box and not a scroll
/// container's child that fits, and whether the page scrolls sideways.
const LAYOUT_PROBE: &str = r#"<script>
window.addEventListener('load', () => {
  const clipped = [];
  for (const el of document.querySelectorAll('main *')) {
    const style = getComputedStyle(el);
    const hides = ['hidden', 'clip', 'auto', 'scroll'].includes(style.overflowX);
    if (hides && el.scrollWidth > el.clientWidth + 1) {
      clipped.push(el.tagName + '.' + el.className + ' ' + el.scrollWidth + '>' + el.clientWidth);
    }
  }
  const page = document.documentElement.scrollWidth > window.innerWidth + 1;
  const out = document.createElement('pre');
  out.id = 'layout-probe';
  out.textContent = JSON.stringify({clipped, page_scrolls_sideways: page,
    width: window.innerWidth});
  document.body.appendChild(out);
});
</script>"#;

/// The probe's report from a dumped DOM.
fn layout_report(dom: &str) -> String {
    let start = dom
        .find("<pre id=\"layout-probe\">")
        .expect("the probe ran");
    let rest = &dom[start..];
    rest[..rest.find("</pre>").expect("probe end")].to_string()
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
    let html = std::fs::read_to_string(page).unwrap();
    let probed = dir.path().join("probed.html");
    std::fs::write(
        &probed,
        html.replace("</body>", &format!("{LAYOUT_PROBE}</body>")),
    )
    .unwrap();

    for width in [1280u32, 1920] {
        let size = (width, 2400);
        let png_path = dir.path().join(format!("report-{width}.png"));
        let out = browser::run(
            page,
            &dir.path().join(format!("profile-{width}")),
            size,
            &[format!("--screenshot={}", png_path.display())],
        );
        assert!(
            out.status.success(),
            "chromium --screenshot failed: {out:?}"
        );
        let png = std::fs::read(&png_path).unwrap();
        assert_eq!(png_size(&png), size);
        // A blank page of this size compresses to a few kilobytes; charts and tables do not.
        assert!(
            png.len() > 60_000,
            "{width} px: screenshot of {} bytes looks blank",
            png.len()
        );

        let (dom, stderr) = dump_dom(page, &dir.path().join(format!("dom-{width}")), size);
        assert_eq!(console_errors(&stderr), Vec::<String>::new());
        // Every section report.md has, and the charts against offered load.
        let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
        for heading in md.lines().filter_map(|l| l.strip_prefix("## ")) {
            let heading = heading.replace('&', "&amp;");
            assert!(
                dom.contains(&format!("<h2>{heading}</h2>")),
                "{width} px: {heading}"
            );
        }
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

        // Nothing is clipped at this width and the page never scrolls sideways.
        let (dom, _) = dump_dom(&probed, &dir.path().join(format!("probe-{width}")), size);
        let report = layout_report(&dom);
        assert!(
            report.contains("\"clipped\":[]") && report.contains("\"page_scrolls_sideways\":false"),
            "{width} px: {report}"
        );
    }
}
