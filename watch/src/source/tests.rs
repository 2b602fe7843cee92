use super::*;
use crate::state::tests::{plan, records, round_lines};
use crate::view::{View, ViewOptions};
use openbench_common::record::Outcome;
use openbench_common::rundir::{LockedProvider, WriterLock, counting_records, write_json_atomic};
use std::io::Write;

/// A run directory with a lock, a running full-run manifest and the worked example's plan.
fn run_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let provider = |key: &str| LockedProvider {
        key: key.into(),
        display_name: key.into(),
        model: "m".into(),
        input_price_per_mtok: None,
        output_price_per_mtok: None,
        cached_input_price_per_mtok: None,
        cache_write_input_price_per_mtok: None,
    };
    let lock = RunLock {
        lock_version: 1,
        run_id: "run-t".into(),
        workflow: "micro-single-task".into(),
        benchmark_slug: "s".into(),
        schedule_version: "v".into(),
        model_label: "m".into(),
        families: vec!["f1".into(), "f2".into()],
        spec_path: "spec.yaml".into(),
        spec_sha256: String::new(),
        spec_inputs_sha256: None,
        dataset_dir: String::new(),
        dataset_manifest: String::new(),
        dataset_release_hash: "h".into(),
        input_files_sha256: Default::default(),
        adapters_sha256: String::new(),
        tokenizer: String::new(),
        tokenizer_ranks_sha256: String::new(),
        code_sha256: String::new(),
        program_version: String::new(),
        providers: vec![provider("a"), provider("b")],
        regions: vec!["eu".into(), "us".into()],
        simulator_time_scale: None,
        timeout_ms: 1000,
        approval_id: None,
        created_at: String::new(),
    };
    let at = |name: &str| layout::path(dir.path(), name);
    write_json_atomic(&at(layout::RUN_LOCK), &lock).unwrap_or_else(|e| panic!("{e}"));
    set_status(dir.path(), RunMode::Full, RunStatus::Running);
    write_json_atomic(&at(layout::FULL_PLAN), &plan()).unwrap_or_else(|e| panic!("{e}"));
    dir
}

fn set_status(dir: &Path, mode: RunMode, status: RunStatus) {
    let mut m = RunManifest::new("run-t", "micro-single-task");
    m.mode = mode;
    m.status = status;
    m.save(dir).unwrap_or_else(|e| panic!("{e}"));
}

fn append(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap_or(path)).unwrap_or_else(|e| panic!("{e}"));
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{e}"));
    f.write_all(bytes).unwrap_or_else(|e| panic!("{e}"));
}

fn view(source: &RunSource) -> View {
    View::build(source.header(), source.state(), &ViewOptions::default())
}

#[test]
fn following_by_offset_equals_a_fresh_read_of_the_whole_file() {
    let dir = run_dir();
    let results = layout::path(dir.path(), layout::FULL_RESULTS);
    let rounds = layout::path(dir.path(), layout::ROUNDS);
    let mut source = RunSource::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(view(&source).requests_total, 6);
    assert_eq!(view(&source).requests_done, 0);
    // Each record arrives in two writes: the first leaves a torn line for a refresh to see.
    for r in records() {
        let line = serde_json::to_string(&r).unwrap_or_default() + "\n";
        let (head, tail) = line.as_bytes().split_at(line.len() / 2);
        append(&results, head);
        assert!(source.refresh().is_ok());
        append(&results, tail);
        let refresh = source.refresh().unwrap_or_else(|e| panic!("{e}"));
        assert!(refresh.changed);
    }
    for l in round_lines() {
        append(&rounds, format!("{l}\n").as_bytes());
    }
    assert!(source.refresh().is_ok_and(|r| r.changed));
    assert!(source.refresh().is_ok_and(|r| !r.changed), "nothing new");
    let fresh = RunSource::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(view(&source), view(&fresh));
    // The independent reader of the records that count agrees on the committed count.
    let counting = counting_records(&results).unwrap_or_else(|e| panic!("{e}"));
    let committed = counting
        .values()
        .filter(|r| r.outcome.is_committed())
        .count();
    assert_eq!(view(&source).requests_done, committed);
    assert_eq!(committed, 5);
    assert_eq!(view(&source).rounds.lines, 2);

    // The results file replaced by a shorter one (a run directory re-synced): starts over.
    let first = serde_json::to_string(&records()[0]).unwrap_or_default() + "\n";
    let tmp = dir.path().join("raw/replacement");
    std::fs::write(&tmp, first).unwrap_or_else(|e| panic!("{e}"));
    std::fs::rename(&tmp, &results).unwrap_or_else(|e| panic!("{e}"));
    assert!(source.refresh().is_ok_and(|r| r.changed));
    assert_eq!(view(&source).requests_done, 1);
    assert_eq!(view(&source).rounds_done, 0);
}

#[test]
fn never_takes_the_writer_lock_nor_waits_for_it() {
    let dir = run_dir();
    let lock_file = layout::path(dir.path(), layout::WRITER_LOCK);
    let results = layout::path(dir.path(), layout::FULL_RESULTS);
    // A reader on a directory no writer ever opened leaves no lock file behind.
    let mut source = RunSource::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert!(source.refresh().is_ok());
    assert!(!lock_file.exists(), "watch created the writer lock");
    // A writer that starts while watch follows the run gets the lock at once …
    let writer = WriterLock::acquire(dir.path(), "run").unwrap_or_else(|e| panic!("{e}"));
    let line = serde_json::to_string(&records()[0]).unwrap_or_default() + "\n";
    append(&results, line.as_bytes());
    // … and watch, opened or refreshing while it holds it, still reads.
    assert!(source.refresh().is_ok_and(|r| r.changed));
    let second = RunSource::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(view(&second).requests_done, 1);
    drop(writer);
    // Nothing of watch's holds the lock after the writer let go: a new writer gets it.
    assert!(WriterLock::acquire(dir.path(), "report").is_ok());
    drop((source, second));
}

#[test]
fn a_new_smoke_attempt_or_the_full_run_switches_files() {
    let dir = run_dir();
    set_status(dir.path(), RunMode::Smoke, RunStatus::Running);
    let mut smoke1 = plan();
    smoke1.attempt = 1;
    smoke1.rounds.truncate(1);
    let at = |name: &str| layout::path(dir.path(), name);
    write_json_atomic(&at(&layout::smoke_plan(1)), &smoke1).unwrap_or_else(|e| panic!("{e}"));
    let mut source = RunSource::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(source.header().attempt, 1);
    assert_eq!(view(&source).requests_total, 2);
    let line = serde_json::to_string(&records()[0]).unwrap_or_default() + "\n";
    append(&at(&layout::smoke_results(1)), line.as_bytes());
    assert!(source.refresh().is_ok());
    assert_eq!(view(&source).requests_done, 1);
    // Attempt 2 appears: a fresh state on its files.
    smoke1.attempt = 2;
    write_json_atomic(&at(&layout::smoke_plan(2)), &smoke1).unwrap_or_else(|e| panic!("{e}"));
    assert!(source.refresh().is_ok_and(|r| r.changed));
    assert_eq!(source.header().attempt, 2);
    assert_eq!(view(&source).requests_done, 0);
    // Then the full run.
    set_status(dir.path(), RunMode::Full, RunStatus::Running);
    assert!(source.refresh().is_ok());
    assert_eq!(source.header().attempt, 0);
    assert_eq!(view(&source).requests_total, 6);
    assert_eq!(plain_title(&source), "run run-t  [full, running]");
}

fn plain_title(source: &RunSource) -> String {
    crate::plain::title(&view(source))
}

#[test]
fn plain_text_prints_the_view_until_the_run_stops() {
    let dir = run_dir();
    let results = layout::path(dir.path(), layout::FULL_RESULTS);
    let path = dir.path().to_path_buf();
    // Another thread plays the writer: one record, then the run completes.
    let writer = std::thread::spawn(move || {
        let line = serde_json::to_string(&records()[0]).unwrap_or_default() + "\n";
        append(&results, line.as_bytes());
        set_status(&path, RunMode::Full, RunStatus::Complete);
    });
    let mut out = Vec::new();
    let done = crate::run_plain(dir.path(), std::time::Duration::from_millis(10), &mut out);
    assert!(done.is_ok(), "{done:?}");
    assert!(writer.join().is_ok());
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("run run-t  [full, "), "{text}");
    assert!(
        text.contains("requests 1/6"),
        "the last view before the end:\n{text}"
    );
    assert!(text.ends_with("run is complete; watch ends.\n"), "{text}");
    assert!(!text.contains('\u{1b}'), "no escape codes in plain text");
    let a = text
        .lines()
        .rev()
        .find(|l| l.starts_with("a@eu"))
        .unwrap_or_default();
    assert!(a.contains("1/3 33%") && a.contains("10.0/10.0/10.0"), "{a}");
}

mod load;
