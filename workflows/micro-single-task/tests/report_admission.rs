#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `report` refuses records the plan or the run lock does not account for, and a second committed
//! record of one request, naming them; an explicit option accepts them and the report's header
//! (report.md and report.html) then says what was accepted.

use openbench_common::rundir as layout;
use openbench_common::workflow::ReportOptions;
use openbench_micro_single_task::report;
use openbench_micro_single_task::synthetic::{self, SyntheticOutput, SyntheticRun};
use serde_json::Value;
use std::io::Write;
use std::path::Path;

/// A synthetic run of 3 lanes × 4 rounds (plan and lock included).
fn run(dir: &Path) -> SyntheticOutput {
    let spec = SyntheticRun {
        records: 12,
        lanes: 3,
        seed: 5,
    };
    synthetic::write_run(dir, &spec).unwrap()
}

/// The first record of the run, as JSON.
fn first_record(dir: &Path) -> Value {
    let text = std::fs::read_to_string(layout::path(dir, layout::FULL_RESULTS)).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

/// Appends one record line to the run's results.
fn append(dir: &Path, record: &Value) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(layout::path(dir, layout::FULL_RESULTS))
        .unwrap();
    writeln!(f, "{record}").unwrap();
}

fn refusal(dir: &Path, out: &SyntheticOutput) -> String {
    match report::write_all(dir, &out.lock, &out.gold) {
        Ok(_) => panic!("the report was written"),
        Err(e) => e.to_string(),
    }
}

/// report.md and report.html of an accepted report.
fn accepted_report(dir: &Path, out: &SyntheticOutput, options: ReportOptions) -> (String, String) {
    report::write_all_with(dir, &out.lock, &out.gold, &options).unwrap();
    (
        std::fs::read_to_string(layout::path(dir, layout::REPORT_MD)).unwrap(),
        std::fs::read_to_string(layout::path(dir, layout::REPORT_HTML)).unwrap(),
    )
}

fn submitted(dir: &Path) -> u64 {
    let metrics: Value =
        serde_json::from_slice(&std::fs::read(layout::path(dir, layout::METRICS)).unwrap())
            .unwrap();
    metrics["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pooled"]["submitted_count"].as_u64().unwrap())
        .sum()
}

#[test]
fn a_clean_run_is_reported_with_no_accepted_records() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path());
    let (md, html) = accepted_report(dir.path(), &out, ReportOptions::default());
    assert!(!md.contains("Accepted records"), "{md}");
    assert!(!html.contains("Accepted records"));
    assert_eq!(submitted(dir.path()), 12);
}

#[test]
fn a_record_outside_the_plan_or_the_lock_is_refused_by_name_unless_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path());
    let mut stray = first_record(dir.path());
    stray["request_id"] = "req-not-planned".into();
    append(dir.path(), &stray);
    let mut intruder = first_record(dir.path());
    intruder["request_id"] = "req-intruder".into();
    intruder["provider"] = "intruder".into();
    intruder["lane"] = "intruder".into();
    append(dir.path(), &intruder);

    let message = refusal(dir.path(), &out);
    for part in [
        "raw/results.jsonl",
        "2 record(s) outside the plan (artifacts/full-plan.json)",
        "line 13: req-not-planned (round 0: not a planned request)",
        "line 14: req-intruder (provider \"intruder\" is not in run-lock.json)",
        "--accept-unplanned",
    ] {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
    assert!(!dir.path().join(layout::REPORT_MD).exists());
    // Accepting duplicates does not accept these.
    let only_duplicates = ReportOptions {
        accept_duplicates: true,
        ..ReportOptions::default()
    };
    assert!(report::write_all_with(dir.path(), &out.lock, &out.gold, &only_duplicates).is_err());

    let accept = ReportOptions {
        accept_unplanned: true,
        ..ReportOptions::default()
    };
    let (md, html) = accepted_report(dir.path(), &out, accept);
    let header = md.split("## ").next().unwrap();
    // Named in report order (round, lane, request id): lane "intruder" sorts before "p0".
    assert!(
        header.contains(
            "> **Accepted records.** 2 record(s) outside the plan or the run lock are counted \
             (--accept-unplanned): line 14: req-intruder (provider \"intruder\" is not in \
             run-lock.json); line 13: req-not-planned (round 0: not a planned request)."
        ),
        "{header}"
    );
    assert!(html.contains("<strong>Accepted records.</strong> 2 record(s) outside the plan"));
    assert_eq!(submitted(dir.path()), 14, "accepted records are counted");
}

#[test]
fn a_second_committed_record_of_a_request_is_refused_unless_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path());
    let mut again = first_record(dir.path());
    let id = again["request_id"].as_str().unwrap().to_string();
    again["outcome"] = "transport_error".into();
    again["error_type"] = "transport".into();
    append(dir.path(), &again);

    let message = refusal(dir.path(), &out);
    assert!(
        message.contains(&format!("1 extra committed record(s) for request(s) {id}")),
        "{message}"
    );
    assert!(message.contains("--accept-duplicates"), "{message}");

    let accept = ReportOptions {
        accept_duplicates: true,
        ..ReportOptions::default()
    };
    let (md, html) = accepted_report(dir.path(), &out, accept);
    let header = md.split("## ").next().unwrap();
    assert!(
        header.contains(&format!(
            "**Accepted records.** 1 extra committed record(s) were found for request(s) {id}"
        )),
        "{header}"
    );
    assert!(html.contains("Accepted records."));
    assert_eq!(
        submitted(dir.path()),
        12,
        "one record per request is counted"
    );
}

#[test]
fn records_of_another_run_are_refused_naming_their_line_and_request() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path());
    // Another run of the same spec: the same planned request ids, another run id.
    let mut foreign = first_record(dir.path());
    let id = foreign["request_id"].as_str().unwrap().to_string();
    foreign["run_id"] = "run-other".into();
    append(dir.path(), &foreign);

    let message = refusal(dir.path(), &out);
    let named = format!("line 1, 13: {id} (run_id \"run-other\", this run is \"run-synthetic\")");
    assert!(message.contains("raw/results.jsonl"), "{message}");
    assert!(
        message.contains("1 record(s) outside the plan"),
        "{message}"
    );
    assert!(message.contains(&named), "{message}");
    assert!(!dir.path().join(layout::REPORT_MD).exists());
}

#[test]
fn a_torn_last_line_is_named_by_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path());
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(layout::path(dir.path(), layout::FULL_RESULTS))
        .unwrap();
    f.write_all(b"{\"schema_version\":1,\"run_id\":\"run-synth")
        .unwrap();
    let (summary, _) = report::write_all(dir.path(), &out.lock, &out.gold).unwrap();
    assert!(
        summary.contains(
            "raw/results.jsonl:13: half-written last line, not counted (12 complete record \
             line(s) read)"
        ),
        "{summary}"
    );
    let md = std::fs::read_to_string(layout::path(dir.path(), layout::REPORT_MD)).unwrap();
    assert!(
        md.contains("the half-written last line 13 was ignored"),
        "{md}"
    );
    assert_eq!(submitted(dir.path()), 12);
}

#[test]
fn a_lock_edited_after_the_manifest_recorded_it_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path());
    let mut manifest = layout::RunManifest::new("run-synthetic", "micro-single-task");
    manifest.save(dir.path()).unwrap();
    assert!(report::read_lock(dir.path()).is_ok());
    let path = layout::path(dir.path(), layout::RUN_LOCK);
    let mut lock: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    lock["timeout_ms"] = 60_000.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&lock).unwrap()).unwrap();
    let message = report::read_lock(dir.path()).unwrap_err().to_string();
    assert!(
        message.contains("run-lock.json was changed after it was written"),
        "{message}"
    );
}
