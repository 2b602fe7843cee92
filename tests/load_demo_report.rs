//! The load demo's own `report.html` in a real browser (issue 38 item 5): `demo --workflow load`
//! runs the bundled simulated saturation search exactly as the README says (only its run root
//! moved into a scratch directory), and headless Chromium screenshots the report it wrote at
//! 1,280 and 1,920 px. Every section of its report.md must be on the page, the charts against
//! offered load drawn, nothing clipped and no sideways scroll. About two minutes: the search's
//! steps run in real time. Without `/usr/bin/chromium` the test reports itself skipped (a failure
//! when real targets are required).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

#[path = "real_targets/chromium.rs"]
mod browser;
#[path = "real_targets/skip.rs"]
mod skip;

use browser::{CHROMIUM, check_report_page};
use coordinator_support::run_bin;
use std::path::{Path, PathBuf};

/// The bundled load demo spec with its run root in `dir`.
fn demo_spec(dir: &Path) -> PathBuf {
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("workflows/load/specs/simulated.yaml");
    let text = std::fs::read_to_string(bundled).unwrap();
    assert!(
        text.contains("run_root: ../../../runs\n"),
        "the bundled spec moved its run root"
    );
    let spec = dir.join("simulated.yaml");
    std::fs::write(
        &spec,
        text.replace("run_root: ../../../runs\n", "run_root: runs\n"),
    )
    .unwrap();
    spec
}

/// The path printed after `label` on a line of `stdout`.
fn printed_path(stdout: &str, label: &str) -> PathBuf {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{stdout}"));
    PathBuf::from(line.trim())
}

#[test]
fn the_load_demos_report_html_shows_every_section_at_1280_and_1920_px() {
    if !Path::new(CHROMIUM).is_file() {
        skip::skip_or_fail(
            "the_load_demos_report_html_shows_every_section_at_1280_and_1920_px",
            &format!("chromium is not installed ({CHROMIUM} missing; deploy/setup.sh installs it)"),
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let spec = demo_spec(tmp.path());
    let o = run_bin(
        tmp.path(),
        &[
            "demo",
            "--workflow",
            "load",
            "--spec",
            spec.to_str().unwrap(),
        ],
        &[],
    );
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let page = printed_path(&stdout, "report.html:");
    let md = std::fs::read_to_string(printed_path(&stdout, "report.md:")).unwrap();
    // The sections a saturation search's report has, by name (the check below also takes every
    // other `## ` heading of report.md).
    for heading in ["Summary", "Saturation", "Failures by step"] {
        assert!(
            md.lines().any(|l| l.starts_with(&format!("## {heading}"))),
            "report.md has no {heading} section:\n{md}"
        );
    }
    let work = tmp.path().join("browser");
    std::fs::create_dir_all(&work).unwrap();
    for width in [1280u32, 1920] {
        let dom = check_report_page(&page, &md, &work, width);
        for heading in [
            "Throughput against offered load",
            "Latency against offered load",
        ] {
            assert!(
                dom.contains(&format!("<h2>{heading}</h2>")),
                "{width} px: {heading}"
            );
        }
        assert!(
            dom.matches("<svg class=\"chart\"").count() >= 5,
            "{width} px: fewer than the throughput and latency charts"
        );
    }
}
