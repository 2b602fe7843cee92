//! `compare_runs` against hand-computed changes.

use super::compare::{Figure, comparison};
use super::compare_runs;
use super::fixture::{forty, results};
use openbench_common::workflow::CompareSettings;

#[test]
fn constant_populations_give_exact_changes_and_degenerate_intervals() {
    // SLO ttfa ≤ 250: A (100 ms) is all good, B (300 ms) none.
    let c = comparison(&forty("A", 100.0, &[]), &forty("B", 300.0, &[]), 200, 9);
    assert_eq!(c.steps.len(), 1);
    let lane = &c.steps[0].rows[0];
    assert_eq!(lane.name, "x");
    assert_eq!(lane.measured, (40, 40));
    let of = |f: Figure| lane.changes.iter().find(|ch| ch.figure == f).unwrap();
    let ttfa = of(Figure::TtfaP50);
    assert_eq!(
        (ttfa.a, ttfa.b, ttfa.delta),
        (Some(100.0), Some(300.0), Some(200.0))
    );
    assert_eq!(
        (ttfa.low, ttfa.high, ttfa.replicates),
        (Some(200.0), Some(200.0), 200)
    );
    assert_eq!(ttfa.verdict(), "worse");
    let good = of(Figure::GoodputFraction);
    assert_eq!(
        (good.delta, good.low, good.high),
        (Some(-1.0), Some(-1.0), Some(-1.0))
    );
    assert_eq!(good.verdict(), "worse");
    let itl = of(Figure::ItlP99);
    assert_eq!(
        (itl.delta, itl.low, itl.high),
        (Some(0.0), Some(0.0), Some(0.0))
    );
    assert_eq!(itl.verdict(), "—");
    assert_eq!(c.steps[0].rows[1].name, "pooled");
}

#[test]
fn intervals_are_seeded_and_bracket_the_change() {
    // B has 20 of its 40 TTFAs 100 ms slower (200 ms): its p50 is 100 or 200 in a resample.
    let slow: Vec<usize> = (0..20).collect();
    let (a, b) = (forty("A", 100.0, &[]), forty("B", 100.0, &slow));
    let first = comparison(&a, &b, 300, 5);
    assert_eq!(first, comparison(&a, &b, 300, 5));
    let ttfa = &first.steps[0].rows[0].changes[0];
    assert_eq!(ttfa.figure, Figure::TtfaP50);
    // 20 of 40 at 100 → the 20th value (rank ceil(.5·40)) is 100.
    assert_eq!(ttfa.delta, Some(0.0));
    let (low, high) = (ttfa.low.unwrap(), ttfa.high.unwrap());
    assert_eq!((low, high), (0.0, 100.0));
}

#[test]
fn small_rows_get_no_interval_and_steps_match_by_load() {
    let a = results();
    let mut b = results();
    b.run_id = "run-load-2".into();
    b.steps.remove(2);
    let c = comparison(&a, &b, 100, 1);
    assert_eq!(c.unmatched_steps, vec!["A: closed c=2".to_string()]);
    let labels: Vec<&str> = c.steps.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, vec!["constant 2/s", "constant 4/s"]);
    let names: Vec<&str> = c.steps[0].rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, vec!["a", "b", "pooled"]);
    for change in &c.steps[0].rows[0].changes {
        assert_eq!(
            (change.low, change.high, change.replicates),
            (None, None, 0)
        );
    }
    let ttfa = &c.steps[0].rows[0].changes[0];
    assert_eq!((ttfa.a, ttfa.delta), (Some(200.0), Some(0.0)));
}

#[test]
fn compare_runs_writes_markdown_html_and_json_deterministically() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cmp");
    let settings = CompareSettings {
        replicates: 100,
        seed: 3,
    };
    let (a, b) = (forty("A", 100.0, &[]), forty("B", 300.0, &[]));
    let paths = compare_runs(&a, &b, &out, settings).unwrap();
    assert_eq!(
        paths,
        vec![
            out.join("compare.md"),
            out.join("compare.html"),
            out.join("compare.json")
        ]
    );
    let md = std::fs::read_to_string(&paths[0]).unwrap();
    let html = std::fs::read_to_string(&paths[1]).unwrap();
    let json = std::fs::read(&paths[2]).unwrap();
    compare_runs(&a, &b, &out, settings).unwrap();
    assert_eq!(std::fs::read_to_string(&paths[0]).unwrap(), md);
    assert_eq!(std::fs::read_to_string(&paths[1]).unwrap(), html);
    assert_eq!(std::fs::read(&paths[2]).unwrap(), json);
    // The page: self-contained (no script, no external reference), the same rows as the
    // markdown, the verdict coloured.
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"));
    assert!(html.contains("<h2>constant 10/s (step 0 in A, 0 in B)</h2>"));
    assert!(html.contains(
        "<tr><th scope=\"row\">x</th><td>TTFA p50</td><td>100.0</td><td>300.0</td>\
         <td>+200.0</td><td>[+200.0, +200.0]</td><td class=\"worse\">worse</td></tr>"
    ));
    assert_eq!(
        html.matches("<table").count(),
        md.matches("| Lane |").count()
    );
    assert!(md.starts_with("# Load comparison: B (B) against A (A)\n"));
    assert!(md.contains("100 replicates per run, seed 3"));
    assert!(md.contains("## constant 10/s (step 0 in A, 0 in B)\n"));
    assert!(md.contains("| x | TTFA p50 | 100.0 | 300.0 | +200.0 | [+200.0, +200.0] | worse |\n"));
    assert!(md.contains(
        "| x | goodput | 100.00% | 0.00% | -100.00 pp | [-100.00 pp, -100.00 pp] | worse |\n"
    ));
    assert!(md.contains("| x | measured / achieved/s | 40 / 10.00 | 40 / 10.00 | — | — | — |\n"));
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["steps"][0]["rows"][0]["changes"][0]["figure"], "ttfa_p50");
    assert_eq!(v["replicates"], 100);
}

/// A run health whose one canary had p99 `p99_ms` and max `max_ms` (CPU unread).
fn health(p99_ms: f64, max_ms: f64) -> Option<super::validity::RunHealth> {
    use openbench_common::validity::{RuntimeHealth, SittingHealth};
    let canary = RuntimeHealth {
        runtime: "coordinator".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        period_ms: 10.0,
        ticks: 100,
        lateness_ms_p50: 1.0,
        lateness_ms_p99: p99_ms,
        lateness_ms_max: max_ms,
        worst: Vec::new(),
        cpu: None,
    };
    Some(super::validity::RunHealth {
        sittings: vec![SittingHealth {
            session: 1,
            attempt: 0,
            coordinator: vec![canary],
            probes: Default::default(),
        }],
        links: Default::default(),
    })
}

#[test]
fn a_latency_change_within_the_runs_measured_error_is_no_verdict() {
    // TTFA +3 ms with an interval of exactly +3: outside zero, but run B's canary p99 is 4 ms
    // (the larger error of the two): no verdict. Goodput is a fraction: its rule is unchanged.
    let (mut a, mut b) = (forty("A", 100.0, &[]), forty("B", 103.0, &[]));
    a.health = health(2.0, 3.0);
    b.health = health(4.0, 6.0);
    let c = comparison(&a, &b, 200, 9);
    let lane = &c.steps[0].rows[0];
    let ttfa = lane
        .changes
        .iter()
        .find(|ch| ch.figure == Figure::TtfaP50)
        .unwrap();
    assert_eq!(ttfa.error_floor_ms, 4.0);
    assert_eq!(ttfa.verdict(), "— (within measured error)");
    // +200 ms is far beyond it: worse, and labelled when run B's validity failed (a 150 ms
    // stall breaks the 100 ms canary max).
    let mut b = forty("B", 300.0, &[]);
    b.health = health(4.0, 150.0);
    let c = comparison(&a, &b, 200, 9);
    let ttfa = c.steps[0].rows[0].changes[0].clone();
    assert!(ttfa.validity_failed);
    assert_eq!(ttfa.verdict(), "worse (validity failed)");
}
