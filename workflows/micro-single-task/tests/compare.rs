//! `compare` against a known truth: two synthetic runs with the same seeded jitter, run B with
//! lane P0 made exactly 150 ms slower (TTFO, TTFA, E2E) and lane P1 timing out on every tenth
//! round, lane P2 unchanged. The truth is exact, so the reported changes are checked for
//! direction and size, and the intervals for containing the truth.

use openbench_micro_single_task::compare::{
    self, Change, CompareOptions, Comparison, Metric, RunInput,
};
use openbench_micro_single_task::report::read_lock;
use openbench_micro_single_task::synthetic::{
    Perturbation, SyntheticOutput, SyntheticRun, write_perturbed_run,
};
use std::path::Path;

const SHIFT_MS: f64 = 150.0;
/// 600 rounds (300 meeting notes, 300 ticket triage), three lanes.
const RUN: SyntheticRun = SyntheticRun {
    records: 1800,
    lanes: 3,
    seed: 7,
};

fn write(dir: &Path, perturbations: &[Perturbation]) -> SyntheticOutput {
    write_perturbed_run(dir, &RUN, perturbations).unwrap_or_else(|e| panic!("{e}"))
}

fn planted() -> Vec<Perturbation> {
    vec![
        Perturbation {
            lane: 0,
            latency_shift_ms: SHIFT_MS,
            fail_every: 0,
        },
        Perturbation {
            lane: 1,
            latency_shift_ms: 0.0,
            fail_every: 10,
        },
    ]
}

fn run_compare(a: &Path, out_a: &SyntheticOutput, b: &Path, out_b: &SyntheticOutput) -> Comparison {
    let (lock_a, lock_b) = (
        read_lock(a).unwrap_or_else(|e| panic!("{e}")),
        read_lock(b).unwrap_or_else(|e| panic!("{e}")),
    );
    let options = CompareOptions {
        replicates: 200,
        seed: 11,
    };
    compare::compare(
        &RunInput {
            dir: a,
            lock: &lock_a,
            gold: &out_a.gold,
        },
        &RunInput {
            dir: b,
            lock: &lock_b,
            gold: &out_b.gold,
        },
        options,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn change<'a>(c: &'a Comparison, lane: &str, cell: &str, metric: Metric) -> &'a Change {
    c.lanes
        .iter()
        .find(|l| l.display_name == lane)
        .and_then(|l| l.cells.iter().find(|x| x.family == cell))
        .and_then(|x| x.changes.iter().find(|ch| ch.metric == metric))
        .unwrap_or_else(|| panic!("no {lane} {cell} {metric:?}"))
}

fn contains(ch: &Change, truth: f64) -> bool {
    matches!((ch.low, ch.high), (Some(l), Some(h)) if l <= truth + 1e-9 && truth - 1e-9 <= h)
}

fn near(x: Option<f64>, want: f64) -> bool {
    x.is_some_and(|v| (v - want).abs() < 1e-9)
}

const LATENCY: [Metric; 6] = [
    Metric::E2eP50,
    Metric::E2eP95,
    Metric::E2eP99,
    Metric::TtfaP50,
    Metric::TtfaP95,
    Metric::TtfaP99,
];

#[test]
fn a_known_slowdown_and_failure_rate_are_reported_with_their_size_direction_and_interval() {
    let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    let out_a = write(&a, &[]);
    let out_b = write(&b, &planted());
    let c = run_compare(&a, &out_a, &b, &out_b);
    assert!(c.differences.is_empty(), "{:?}", c.differences);
    assert_eq!(c.lanes.len(), 3);

    // P0: every latency percentile, pooled and per family, is exactly 150 ms slower.
    for cell in ["pooled", "meeting-notes-lookup", "ticket-triage"] {
        for m in LATENCY {
            let ch = change(&c, "P0", cell, m);
            assert!(near(ch.delta, SHIFT_MS), "P0 {cell} {m:?}: {ch:?}");
            assert!(
                contains(ch, SHIFT_MS),
                "P0 {cell} {m:?} interval misses the truth: {ch:?}"
            );
            assert!(
                ch.excludes_zero() && !ch.is_better(),
                "P0 {cell} {m:?}: {ch:?}"
            );
        }
    }
    let v = compare::render::verdict(change(&c, "P0", "pooled", Metric::E2eP99));
    assert_eq!(
        v.as_deref(),
        Some("E2E p99 slower in B by 150.0 ms (worse)")
    );
    // ... and nothing else about P0 changed, so nothing else gets a verdict.
    for m in [
        Metric::TpsP95Floor,
        Metric::TaskSuccess,
        Metric::FailureRate,
    ] {
        let ch = change(&c, "P0", "pooled", m);
        assert!(near(ch.delta, 0.0) && contains(ch, 0.0), "P0 {m:?}: {ch:?}");
        assert_eq!(compare::render::verdict(ch), None);
    }

    // P1: rounds 0, 10, 20 … time out: 60 of 600, all meeting-notes rounds (even indexes).
    let pooled_failures = change(&c, "P1", "pooled", Metric::FailureRate);
    assert!(near(pooled_failures.delta, 0.10), "{pooled_failures:?}");
    assert!(contains(pooled_failures, 0.10) && pooled_failures.excludes_zero());
    assert_eq!(
        compare::render::verdict(pooled_failures).as_deref(),
        Some("failure rate higher in B by 10.00 pp (worse)")
    );
    let meeting_failures = change(&c, "P1", "meeting-notes-lookup", Metric::FailureRate);
    assert!(near(meeting_failures.delta, 0.20) && contains(meeting_failures, 0.20));
    let ticket_failures = change(&c, "P1", "ticket-triage", Metric::FailureRate);
    assert!(
        near(ticket_failures.delta, 0.0) && compare::render::verdict(ticket_failures).is_none()
    );
    // Meeting notes were answered right, tickets wrong: the timeouts cost 60 correct answers.
    let success = change(&c, "P1", "pooled", Metric::TaskSuccess);
    assert!(near(success.delta, -0.10) && contains(success, -0.10) && success.excludes_zero());
    assert_eq!(
        compare::render::verdict(success).as_deref(),
        Some("task success lower in B by 10.00 pp (worse)")
    );

    // P2: unchanged; every change is zero and no interval excludes it.
    for cell in &c
        .lanes
        .iter()
        .find(|l| l.display_name == "P2")
        .map(|l| l.cells.clone())
        .unwrap_or_default()
    {
        for ch in &cell.changes {
            assert!(
                near(ch.delta, 0.0) && contains(ch, 0.0),
                "P2 {}: {ch:?}",
                cell.family
            );
        }
    }

    // The files: differences first, the verdicts, deterministic bytes.
    let out = root.path().join("out");
    let written = compare::write(&out, &c).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        written,
        vec![out.join("compare.md"), out.join("compare.html")]
    );
    let md = std::fs::read_to_string(out.join("compare.md")).unwrap_or_default();
    let at = |needle: &str| {
        md.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in:\n{md}"))
    };
    assert!(at("## Configuration and dataset differences") < at("## Verdicts"));
    assert!(at("None: the same spec") < at("## Verdicts"));
    at("- **P0**, pooled: E2E p99 slower in B by 150.0 ms (worse).");
    at("- **P1**, pooled: failure rate higher in B by 10.00 pp (worse).");
    assert!(
        !md.contains("- **P2**"),
        "an unchanged lane got a verdict:\n{md}"
    );
    at("| E2E p99 |");
    let html = std::fs::read_to_string(out.join("compare.html")).unwrap_or_default();
    assert!(html.contains("<td class=\"worse\">E2E p99 slower in B by 150.0 ms (worse)</td>"));
    let again = run_compare(&a, &out_a, &b, &out_b);
    assert_eq!(
        compare::render::markdown(&again),
        md,
        "same seed, same bytes"
    );
}

#[test]
fn runs_under_different_locks_are_compared_but_said_so_loudly_first() {
    let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    let out_a = write(&a, &[]);
    let out_b = write(&b, &planted());
    let lock_path = b.join("run-lock.json");
    let mut lock = read_lock(&b).unwrap_or_else(|e| panic!("{e}"));
    lock.code_sha256 = "c0de".into();
    lock.dataset_release_hash = "da7a".into();
    lock.timeout_ms = 30_000;
    std::fs::write(&lock_path, serde_json::to_vec(&lock).unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}"));
    let c = run_compare(&a, &out_a, &b, &out_b);
    assert!(c.locks_differ());
    let whats: Vec<(&str, bool)> = c
        .differences
        .iter()
        .map(|d| (d.what.as_str(), d.loud))
        .collect();
    assert_eq!(
        whats,
        vec![
            ("dataset release hash", true),
            ("code (sha256)", true),
            ("client deadline (ms)", false)
        ]
    );
    let md = compare::render::markdown(&c);
    let banner = md
        .find("WARNING: THE TWO RUNS WERE MADE UNDER DIFFERENT LOCKS (dataset release hash, code (sha256))")
        .unwrap_or_else(|| panic!("no banner:\n{md}"));
    assert!(banner < md.find("## Verdicts").unwrap_or(0));
    assert!(md.contains("| **code (sha256)** |  | c0de |"), "{md}");
    // Still compared.
    assert!(md.contains("- **P0**, pooled: E2E p99 slower in B by 150.0 ms (worse)."));
    assert!(compare::render::html(&c).contains("<p class=\"loud\">WARNING: THE TWO RUNS"));
}

#[test]
fn a_cell_with_fewer_than_thirty_rounds_gets_no_interval_and_no_verdict() {
    // 40 rounds: 20 per family (too few), 40 pooled (enough).
    let small = SyntheticRun {
        records: 120,
        lanes: 3,
        seed: 7,
    };
    let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    let out_a = write_perturbed_run(&a, &small, &[]).unwrap_or_else(|e| panic!("{e}"));
    let out_b = write_perturbed_run(&b, &small, &planted()).unwrap_or_else(|e| panic!("{e}"));
    let c = run_compare(&a, &out_a, &b, &out_b);
    let family = change(&c, "P0", "meeting-notes-lookup", Metric::E2eP50);
    assert!(near(family.delta, SHIFT_MS), "{family:?}");
    assert_eq!((family.low, family.high), (None, None), "{family:?}");
    assert_eq!(compare::render::verdict(family), None);
    let pooled = change(&c, "P0", "pooled", Metric::E2eP50);
    // 40 rounds of a 1,000 ms jitter: an interval, wide enough to hold both 0 and the truth.
    assert!(
        pooled.low.is_some() && contains(pooled, SHIFT_MS),
        "{pooled:?}"
    );
    let md = compare::render::markdown(&c);
    assert!(md.contains(
        "### meeting-notes-lookup (rounds: A 20, B 20; submitted: A 20, B 20; fewer than 30 rounds, so no interval)"
    ), "{md}");
}
