//! `compare.md`: the comparison of two load runs as tables, one per matched step.

use super::compare::{Change, Comparison, Figure, LEVEL, StepComparison};
use openbench_report_kit::format::{MISSING, grouped};
use openbench_report_kit::table::markdown_names;
use std::fmt::Write;

/// A value of `figure`: ms with one decimal, a fraction as a percentage.
pub(super) fn value(figure: Figure, x: Option<f64>) -> String {
    match x {
        None => MISSING.to_string(),
        Some(v) if figure.is_fraction() => format!("{}%", grouped(v * 100.0, 2)),
        Some(v) => grouped(v, 1),
    }
}

/// A change of `figure`, signed: ms, or percentage points for a fraction.
pub(super) fn signed(figure: Figure, x: Option<f64>) -> String {
    let Some(v) = x else {
        return MISSING.to_string();
    };
    let (v, unit) = if figure.is_fraction() {
        (v * 100.0, " pp")
    } else {
        (v, "")
    };
    let text = grouped(v, if figure.is_fraction() { 2 } else { 1 });
    let sign = if text.starts_with('-') || text.chars().all(|c| !c.is_ascii_digit() || c == '0') {
        ""
    } else {
        "+"
    };
    format!("{sign}{text}{unit}")
}

pub(super) fn interval(c: &Change) -> String {
    if let Some((a, b)) = &c.repeats {
        return format!(
            "A [{}, {}] · B [{}, {}]",
            value(c.figure, Some(a.low)),
            value(c.figure, Some(a.high)),
            value(c.figure, Some(b.low)),
            value(c.figure, Some(b.high))
        );
    }
    match (c.low, c.high) {
        (Some(l), Some(h)) => format!(
            "[{}, {}]",
            signed(c.figure, Some(l)),
            signed(c.figure, Some(h))
        ),
        _ => MISSING.to_string(),
    }
}

/// Renders `compare.md`.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Load comparison: {} (B) against {} (A)\n",
        c.run_b, c.run_a
    );
    if c.steps.iter().any(|s| s.repeats.is_some()) {
        out.push_str(
            "- Both runs repeated their sweep: each figure is the mean across a run's repeats, \
             the interval each run's 95% Student t interval across its repeats, and a verdict \
             needs the two intervals separated.\n",
        );
    } else {
        let _ = writeln!(
            out,
            "- Intervals: {}% percentile bootstrap of B − A over each step's measured requests, {} \
             replicates per run, seed {}; none when either run has under 30 measured requests in the \
             row. A verdict needs an interval that excludes zero.",
            LEVEL * 100.0,
            c.replicates,
            c.seed
        );
    }
    out.push_str("- Steps are matched by their load in run order, lanes by label.\n");
    if !c.unmatched_steps.is_empty() {
        let _ = writeln!(
            out,
            "- Steps in one run only: {}.",
            c.unmatched_steps.join(", ")
        );
    }
    out.push('\n');
    if c.steps.is_empty() {
        out.push_str("No step ran at the same load in both runs.\n");
    }
    for step in &c.steps {
        match step.repeats {
            Some((na, nb)) => {
                let _ = writeln!(
                    out,
                    "## {} (step {} in A over {na} repeats, {} in B over {nb})\n",
                    step.label, step.steps.0, step.steps.1
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "## {} (step {} in A, {} in B)\n",
                    step.label, step.steps.0, step.steps.1
                );
            }
        }
        if !step.unmatched_lanes.is_empty() {
            let _ = writeln!(
                out,
                "Lanes in one run only: {}.\n",
                step.unmatched_lanes.join(", ")
            );
        }
        let rows = step_rows(step);
        markdown_names(&mut out, &HEADERS, &rows, 2);
    }
    out.push_str("Latencies in ms; shares in percent, their changes in percentage points. Definitions: docs/load.md, \"Reports\".\n");
    out
}

/// The comparison table's headers (`compare.md` and `compare.html`).
pub(super) const HEADERS: [&str; 7] = [
    "Lane",
    "Figure",
    "A",
    "B",
    "B − A",
    "95% interval",
    "Verdict",
];

/// The comparison table's rows of one matched step: per lane its measured count and achieved
/// rate, whether it sustained the step, then every figure's change.
pub(super) fn step_rows(step: &StepComparison) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for row in &step.rows {
        rows.push(vec![
            row.name.clone(),
            "measured / achieved/s".to_string(),
            format!("{} / {}", row.measured.0, grouped(row.achieved_per_s.0, 2)),
            format!("{} / {}", row.measured.1, grouped(row.achieved_per_s.1, 2)),
            MISSING.to_string(),
            MISSING.to_string(),
            MISSING.to_string(),
        ]);
        rows.push(vec![
            row.name.clone(),
            "sustained".to_string(),
            super::tables::yes_no(row.sustained.0),
            super::tables::yes_no(row.sustained.1),
            MISSING.to_string(),
            MISSING.to_string(),
            MISSING.to_string(),
        ]);
        for ch in &row.changes {
            rows.push(vec![
                row.name.clone(),
                ch.figure.label().to_string(),
                value(ch.figure, ch.a),
                value(ch.figure, ch.b),
                signed(ch.figure, ch.delta),
                interval(ch),
                ch.verdict().to_string(),
            ]);
        }
    }
    rows
}
