#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `openbench-inference report` from the command line on a real run: a duplicate committed
//! record and a record outside the plan are refused with a non-zero exit that names them, and the
//! report already written stays as it was; `--accept-duplicates` / `--accept-unplanned` count them
//! and the report's header says so.

mod coordinator_support;

use coordinator_support::*;
use openbench_common::rundir as layout;
use std::io::Write;
use std::path::Path;

fn append(path: &Path, record: &serde_json::Value) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(f, "{record}").unwrap();
}

fn report(cwd: &Path, dir: &Path, flags: &[&str]) -> (bool, String) {
    let mut args = vec!["report", "--run-dir", dir.to_str().unwrap()];
    args.extend_from_slice(flags);
    let o = run_bin(cwd, &args, &[]);
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    (o.status.success(), text)
}

#[test]
fn report_refuses_duplicates_and_unplanned_records_unless_a_flag_accepts_them() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let providers = vec![Prov::sim("zai"), Prov::sim("together")];
    let spec = write_spec(tmp.path(), &data, &providers, 1, 0.01, 1000);
    let o = run_bin(
        tmp.path(),
        &[
            "run",
            "--spec",
            spec.to_str().unwrap(),
            "--full",
            "--approve-full",
            "--approval-id",
            "CLI-1",
        ],
        &[],
    );
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}");
    let dir = printed_run_dir(&o.stdout);
    let results = dir.join(layout::FULL_RESULTS);
    let report_md = dir.join(layout::REPORT_MD);
    let written = std::fs::read(&report_md).unwrap();
    // 2 lanes × 3 rounds (one item per family).
    let records = lines(&results);
    assert_eq!(records.len(), 6);

    // A second committed record of the first request.
    let mut again = records[0].clone();
    let id = again["request_id"].as_str().unwrap().to_string();
    again["outcome"] = "transport_error".into();
    again["error_type"] = "transport".into();
    append(&results, &again);
    let (ok, text) = report(tmp.path(), &dir, &[]);
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!("1 extra committed record(s) for request(s) {id}")),
        "{text}"
    );
    assert!(text.contains("--accept-duplicates"), "{text}");
    assert_eq!(
        std::fs::read(&report_md).unwrap(),
        written,
        "a refused report leaves the one written before"
    );
    let (ok, text) = report(tmp.path(), &dir, &["--accept-duplicates"]);
    assert!(ok, "{text}");
    let md = std::fs::read_to_string(&report_md).unwrap();
    let header = md.split("## ").next().unwrap();
    assert!(
        header.contains(&format!(
            "**Accepted records.** 1 extra committed record(s) were found for request(s) {id}"
        )),
        "{header}"
    );

    // A record of a request the plan does not have: refused even with duplicates accepted.
    let mut stray = records[1].clone();
    stray["request_id"] = "req-not-planned".into();
    append(&results, &stray);
    let (ok, text) = report(tmp.path(), &dir, &["--accept-duplicates"]);
    assert!(!ok, "{text}");
    // Named with its line: after the 6 records and the duplicate.
    assert!(
        text.contains("line 8: req-not-planned (round 0: not a planned request)"),
        "{text}"
    );
    assert!(text.contains("--accept-unplanned"), "{text}");
    let (ok, text) = report(
        tmp.path(),
        &dir,
        &["--accept-duplicates", "--accept-unplanned"],
    );
    assert!(ok, "{text}");
    let md = std::fs::read_to_string(&report_md).unwrap();
    let header = md.split("## ").next().unwrap();
    assert!(
        header.contains(
            "1 record(s) outside the plan or the run lock are counted (--accept-unplanned): \
             line 8: req-not-planned (round 0: not a planned request)."
        ),
        "{header}"
    );
    assert!(header.contains("1 extra committed record(s)"), "{header}");
    // Nothing is left behind by the refused attempts.
    let temps: Vec<_> = files_under(&dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "tmp"))
        .collect();
    assert!(temps.is_empty(), "{temps:?}");
}
