#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A run directory written by the binary at commit 88810a0, before the run directory had one
//! owner: `smoke`, then a 6-round full run against the embedded simulator (4 providers, 2 items
//! per family), then `report`. Re-reporting a copy of its raw files must give byte-identical
//! derived artifacts: the proof that reading and writing through `openbench_common::rundir` did
//! not change the on-disk format.

use openbench_common::rundir as layout;
use openbench_micro_single_task::{gold_table, report};
use std::path::{Path, PathBuf};

const FIXTURE: &str = "tests/fixtures/run-88810a0";

/// What `report` derives; everything else in the fixture is its input.
const DERIVED: [&str; 6] = [
    layout::EVALUATIONS,
    layout::FAILURES,
    layout::METRICS,
    layout::PAIRED,
    layout::REPORT_MD,
    layout::REPORT_HTML,
];

fn copy_inputs(from: &Path, to: &Path, rel: &Path) {
    for entry in std::fs::read_dir(from.join(rel)).unwrap() {
        let entry = entry.unwrap();
        let rel = rel.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(to.join(&rel)).unwrap();
            copy_inputs(from, to, &rel);
        } else if !DERIVED.iter().any(|d| Path::new(d) == rel) {
            std::fs::copy(from.join(&rel), to.join(&rel)).unwrap();
        }
    }
}

#[test]
fn a_run_written_before_the_refactor_re_reports_byte_identically() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE);
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    copy_inputs(&fixture, &run, Path::new(""));
    for name in DERIVED {
        assert!(fixture.join(name).is_file(), "fixture lacks {name}");
        assert!(!run.join(name).exists(), "{name} was copied");
    }

    let lock = report::read_lock(&run).unwrap();
    // The lock records the absolute dataset folder of the machine that ran it; the gold is the
    // same release in this checkout (the release hash is checked by `gold_table`).
    let mut here = lock.clone();
    here.dataset_dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/micro-single-task")
        .display()
        .to_string();
    let gold = gold_table(&here).unwrap();
    report::write_all(&run, &lock, &gold).unwrap();

    for name in DERIVED {
        let expected = std::fs::read(fixture.join(name)).unwrap();
        let got = std::fs::read(run.join(name)).unwrap();
        if expected != got {
            let first = first_difference(&expected, &got);
            panic!("{name} differs from the fixture's; first differing line {first}");
        }
    }
    let leftovers: Vec<PathBuf> = walk(&run)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(".tmp"))
        })
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
}

fn first_difference(a: &[u8], b: &[u8]) -> String {
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    a.lines()
        .zip(b.lines())
        .enumerate()
        .find(|(_, (x, y))| x != y)
        .map(|(n, (x, y))| format!("{}:\n  fixture: {x}\n  now:     {y}", n + 1))
        .unwrap_or_else(|| "(one is a prefix of the other)".into())
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
