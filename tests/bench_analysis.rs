#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `bench analysis --json` on a small synthetic run: the figures it prints describe the run it
//! wrote and reported (kept with `--run-dir`).

use std::process::Command;

#[test]
fn bench_analysis_reports_the_run_it_synthesised() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let output = Command::new(env!("CARGO_BIN_EXE_openbench-inference"))
        .args([
            "bench",
            "analysis",
            "--records",
            "130",
            "--lanes",
            "4",
            "--json",
        ])
        .arg("--run-dir")
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let figures: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    // 130 records over 4 lanes: 32 whole rounds, 128 records.
    assert_eq!(figures["rounds"], 32);
    assert_eq!(figures["records"], 128);
    assert!(figures["report_seconds"].as_f64().unwrap() > 0.0);
    assert!(figures["peak_rss_bytes"].as_u64().unwrap() > 0);
    let results = std::fs::read_to_string(run_dir.join("raw/results.jsonl")).unwrap();
    assert_eq!(results.lines().count(), 128);
    assert!(run_dir.join("report.md").is_file());
    assert!(run_dir.join("report.html").is_file());
}
