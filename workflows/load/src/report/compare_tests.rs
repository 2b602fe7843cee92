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
    // TTFA +3 ms with an interval of exactly +3: outside zero. The p99's change is held to the
    // runs' p99 error (run B's canary p99, 4 ms): no verdict. The median's is held to their
    // median error (both canaries' p50, 1 ms): worse. Goodput is a fraction: its rule is
    // unchanged.
    let (mut a, mut b) = (forty("A", 100.0, &[]), forty("B", 103.0, &[]));
    a.health = health(2.0, 3.0);
    b.health = health(4.0, 6.0);
    let c = comparison(&a, &b, 200, 9);
    let lane = &c.steps[0].rows[0];
    let change = |figure: Figure| {
        lane.changes
            .iter()
            .find(|ch| ch.figure == figure)
            .unwrap()
            .clone()
    };
    let tail = change(Figure::TtfaP99);
    assert_eq!(tail.error_floor_ms, 4.0);
    assert_eq!(tail.verdict(), "— (within measured error)");
    let median = change(Figure::TtfaP50);
    assert_eq!(median.error_floor_ms, 1.0);
    assert_eq!(median.verdict(), "worse");
    // +200 ms is far beyond it: worse, and labelled when run B's validity failed (a 150 ms
    // stall breaks the 100 ms canary max).
    let mut b = forty("B", 300.0, &[]);
    b.health = health(4.0, 150.0);
    let c = comparison(&a, &b, 200, 9);
    let ttfa = c.steps[0].rows[0].changes[0].clone();
    assert!(ttfa.validity_failed);
    assert_eq!(ttfa.verdict(), "worse (validity failed)");
}

/// A run of one written step repeated `ttfas.len()` times: repeat r is [`forty`]'s step with
/// every TTFA `ttfas[r]`, as the run's step r.
fn repeated(run_id: &str, ttfas: &[f64]) -> super::LoadResults {
    let mut run = forty(run_id, ttfas[0], &[]);
    let of = ttfas.len() as u32;
    run.steps = ttfas
        .iter()
        .enumerate()
        .map(|(r, &ttfa)| {
            let mut step = forty(run_id, ttfa, &[]).steps.remove(0);
            step.index = r;
            step.repeat = Some(crate::spec::RepeatOf {
                step: 0,
                repeat: r as u32,
                of,
            });
            step
        })
        .collect();
    run
}

#[test]
fn repeated_runs_are_called_only_when_their_repeat_intervals_are_separated() {
    // A's TTFA p50 per repeat: 100, 110, 120 → mean 110, s = 10, half-width
    // t(2) · s/√3 = 4.3027 · 5.773503 = 24.841607: [85.158393, 134.841607].
    let a = repeated("A", &[100.0, 110.0, 120.0]);
    // B: 115, 125, 135 → [100.158393, 149.841607]: overlaps A's. Every request of a repeat has
    // the same TTFA, so a bootstrap over requests would call each repeat's change; the repeats
    // say the runs' difference (15 ms) is within their run-to-run spread.
    let overlapping = comparison(&a, &repeated("B", &[115.0, 125.0, 135.0]), 200, 9);
    assert_eq!(overlapping.replicates, 0);
    assert_eq!(overlapping.steps.len(), 1, "one written step, not three");
    let step = &overlapping.steps[0];
    assert_eq!((step.steps, step.repeats), ((0, 0), Some((3, 3))));
    let lane = &step.rows[0];
    assert_eq!((lane.name.as_str(), lane.measured), ("x", (120, 120)));
    let ttfa = &lane.changes[0];
    assert_eq!(ttfa.figure, Figure::TtfaP50);
    assert_eq!(
        (ttfa.a, ttfa.b, ttfa.delta),
        (Some(110.0), Some(125.0), Some(15.0))
    );
    let (ia, ib) = ttfa.repeats.unwrap();
    let half = 4.3027 * 10.0 / 3f64.sqrt();
    assert!((ia.low - (110.0 - half)).abs() < 1e-9 && (ia.high - (110.0 + half)).abs() < 1e-9);
    assert!((ib.low - (125.0 - half)).abs() < 1e-9 && (ib.high - (125.0 + half)).abs() < 1e-9);
    assert_eq!(ttfa.verdict(), "— (repeat intervals overlap)");
    // B: 300, 310, 320 → [285.158393, 334.841607], above A's: worse.
    let separated = comparison(&a, &repeated("B", &[300.0, 310.0, 320.0]), 200, 9);
    let ttfa = &separated.steps[0].rows[0].changes[0];
    assert_eq!(ttfa.delta, Some(200.0));
    assert_eq!(ttfa.verdict(), "worse");
    // The same runs with a measured error of 250 ms: separated, but within it.
    let mut quiet = ttfa.clone();
    quiet.error_floor_ms = 250.0;
    assert_eq!(quiet.verdict(), "— (within measured error)");
    let md = super::compare_md::render(&separated);
    assert!(md.contains("over 3 repeats"), "{md}");
    assert!(!md.contains("percentile bootstrap"), "{md}");
    assert!(md.contains("A [85.2, 134.8] · B [285.2, 334.8]"), "{md}");
}
