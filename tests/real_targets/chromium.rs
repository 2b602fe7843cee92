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

/// Width and height from a PNG's IHDR chunk (bytes 16..24, big-endian).
#[allow(dead_code)]
pub fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
    (be(16), be(20))
}

/// Appended to a copy of a page (our reports have no script): lists, into the DOM that
/// `--dump-dom` prints, every element whose content is wider than its box and not a scroll
/// container's child that fits, and whether the page scrolls sideways.
#[allow(dead_code)]
pub const LAYOUT_PROBE: &str = r#"<script>
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

/// The layout probe's report from a dumped DOM.
#[allow(dead_code)]
pub fn layout_report(dom: &str) -> String {
    let start = dom
        .find("<pre id=\"layout-probe\">")
        .expect("the probe ran");
    let rest = &dom[start..];
    rest[..rest.find("</pre>").expect("probe end")].to_string()
}

/// A report page checked at `width` px (2,400 px tall): the screenshot has the window's size and
/// is far from blank, the console is clean, every `## ` heading of the report's Markdown twin
/// `md` is an `<h2>` of the page, and with [`LAYOUT_PROBE`] nothing is clipped and the page
/// never scrolls sideways. Scratch files go to `work`. Returns the DOM Chromium built.
#[allow(dead_code)]
pub fn check_report_page(page: &Path, md: &str, work: &Path, width: u32) -> String {
    let size = (width, 2400);
    let png_path = work.join(format!("report-{width}.png"));
    let out = run(
        page,
        &work.join(format!("profile-{width}")),
        size,
        &[format!("--screenshot={}", png_path.display())],
    );
    assert!(
        out.status.success(),
        "chromium --screenshot failed: {out:?}"
    );
    let png = std::fs::read(&png_path).expect("the screenshot");
    assert_eq!(png_size(&png), size);
    // A blank page of this size compresses to a few kilobytes; charts and tables do not.
    assert!(
        png.len() > 60_000,
        "{width} px: screenshot of {} bytes looks blank",
        png.len()
    );

    let (dom, stderr) = dump_dom(page, &work.join(format!("dom-{width}")), size);
    assert_eq!(console_errors(&stderr), Vec::<String>::new());
    for heading in md.lines().filter_map(|l| l.strip_prefix("## ")) {
        let heading = heading.replace('&', "&amp;");
        assert!(
            dom.contains(&format!("<h2>{heading}</h2>")),
            "{width} px: {heading}"
        );
    }

    let html = std::fs::read_to_string(page).expect("the page");
    let probed = work.join(format!("probed-{width}.html"));
    std::fs::write(
        &probed,
        html.replace("</body>", &format!("{LAYOUT_PROBE}</body>")),
    )
    .expect("write the probed copy");
    let (probed_dom, _) = dump_dom(&probed, &work.join(format!("probe-{width}")), size);
    let report = layout_report(&probed_dom);
    assert!(
        report.contains("\"clipped\":[]") && report.contains("\"page_scrolls_sideways\":false"),
        "{width} px: {report}"
    );
    dom
}
