//! `compare.md` and `compare.html`: differences first, then the verdicts, then per lane one
//! table per cell (pooled, then each family). Deterministic: same comparison, same bytes.

use super::{CellComparison, Change, Comparison, LEVEL, Unit};
use openbench_report_kit::format::{MISSING, grouped, one, pct};
use openbench_report_kit::html::{escape, page_end, page_start};
use openbench_report_kit::table::markdown as table;
use std::fmt::Write;

/// Column headers of a cell's table.
const HEADERS: [&str; 6] = [
    "metric",
    "run A",
    "run B",
    "change (B − A)",
    "95% interval",
    "verdict",
];

/// A value in the metric's unit.
pub fn value(unit: Unit, v: Option<f64>) -> String {
    match unit {
        Unit::Rate => pct(v),
        _ => one(v),
    }
}

/// A signed change in the metric's unit (`+150.0 ms`, `-10.00 pp`).
pub fn signed(unit: Unit, v: Option<f64>) -> String {
    let Some(v) = v else {
        return MISSING.to_string();
    };
    let (x, decimals, suffix) = match unit {
        Unit::Ms => (v, 1, " ms"),
        Unit::TokensPerSecond => (v, 1, " tok/s"),
        Unit::Rate => (v * 100.0, 2, " pp"),
    };
    let text = grouped(x, decimals);
    let sign = if text.starts_with('-') || text.trim_start_matches(['0', '.', ',']).is_empty() {
        ""
    } else {
        "+"
    };
    format!("{sign}{text}{suffix}")
}

/// A change's 95% interval (`+12.0 ms to +40.5 ms`), or the missing mark; for two repeated
/// runs, each run's t interval across its repeats (`A 10.0 – 12.0; B 13.0 – 15.0`).
pub fn interval(c: &Change) -> String {
    if let Some((a, b)) = &c.repeats {
        let unit = c.metric.unit();
        return format!(
            "t: A {} – {}; B {} – {}",
            value(unit, Some(a.low)),
            value(unit, Some(a.high)),
            value(unit, Some(b.low)),
            value(unit, Some(b.high))
        );
    }
    match (c.low, c.high) {
        (Some(_), Some(_)) => format!(
            "{} to {}",
            signed(c.metric.unit(), c.low),
            signed(c.metric.unit(), c.high)
        ),
        _ => MISSING.to_string(),
    }
}

/// The plain-words verdict of a change, only when its interval excludes zero.
pub fn verdict(c: &Change) -> Option<String> {
    if !c.is_difference() {
        return c.excludes_zero().then(|| {
            format!(
                "within the runs' measured error ({:.2} ms)",
                c.error_floor_ms
            )
        });
    }
    let up = c.delta? > 0.0;
    let word = match (c.metric.unit(), up) {
        (Unit::Ms, true) => "slower",
        (Unit::Ms, false) => "faster",
        (Unit::TokensPerSecond, true) => "higher (faster)",
        (Unit::TokensPerSecond, false) => "lower (slower)",
        (Unit::Rate, true) => "higher",
        (Unit::Rate, false) => "lower",
    };
    let judgement = match (c.is_better(), c.validity_failed) {
        (true, false) => "better",
        (false, false) => "worse",
        (true, true) => "better; rests on a run whose validity failed",
        (false, true) => "worse; rests on a run whose validity failed",
    };
    let size = signed(c.metric.unit(), c.delta.map(f64::abs));
    Some(format!(
        "{} {word} in B by {} ({judgement})",
        c.metric.label(),
        size.trim_start_matches('+')
    ))
}

fn row(c: &Change) -> Vec<String> {
    vec![
        c.metric.label().to_string(),
        value(c.metric.unit(), c.a),
        value(c.metric.unit(), c.b),
        signed(c.metric.unit(), c.delta),
        interval(c),
        verdict(c).unwrap_or_else(|| {
            let overlap = c.repeats.is_some() && !c.excludes_zero();
            if overlap {
                "— (repeat intervals overlap)".to_string()
            } else {
                String::new()
            }
        }),
    ]
}

fn cell_title(cell: &CellComparison) -> String {
    // Two repeated runs compare across their repeats, whatever their round counts.
    let repeated = cell.changes.iter().any(|c| c.repeats.is_some());
    let few = if !repeated && cell.rounds.0.min(cell.rounds.1) < super::bootstrap::MIN_ROUNDS {
        format!(
            "; fewer than {} rounds, so no interval",
            super::bootstrap::MIN_ROUNDS
        )
    } else {
        String::new()
    };
    format!(
        "{} (rounds: A {}, B {}; submitted: A {}, B {}{few})",
        cell.family, cell.rounds.0, cell.rounds.1, cell.submitted.0, cell.submitted.1
    )
}

fn method_note(c: &Comparison) -> String {
    if let Some((a, b)) = c.repeats {
        return format!(
            "Every change is run B minus run A. Both runs repeated their round set (A {a} times, \
             B {b} times): each figure is the mean over a run's repeats, with its {:.0}% Student \
             t interval, and a verdict is given only where the two runs' intervals are separated \
             (docs/methodology.md, \"Repeats of paired rounds\"); no bootstrap is drawn.",
            LEVEL * 100.0
        );
    }
    format!(
        "Every change is run B minus run A. Its interval is a {:.0}% percentile bootstrap over \
         rounds ({} replicates per run, seed {}; docs/methodology.md, \"Comparing two runs\"). A \
         verdict is given only where the interval excludes zero.",
        LEVEL * 100.0,
        c.options.replicates,
        c.options.seed
    )
}

fn loud_banner(c: &Comparison) -> Option<String> {
    c.locks_differ().then(|| {
        let what: Vec<&str> = c
            .differences
            .iter()
            .filter(|d| d.loud)
            .map(|d| d.what.as_str())
            .collect();
        format!(
            "WARNING: THE TWO RUNS WERE MADE UNDER DIFFERENT LOCKS ({}). They are compared \
             anyway; a change may come from the configuration or the dataset, not the providers.",
            what.join(", ")
        )
    })
}

/// Every verdict: (lane name, cell, sentence).
fn verdicts(c: &Comparison) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for lane in &c.lanes {
        for cell in &lane.cells {
            for change in &cell.changes {
                if let Some(v) = verdict(change) {
                    out.push((lane.display_name.clone(), cell.family.clone(), v));
                }
            }
        }
    }
    out
}

/// Renders `compare.md`.
pub fn markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Comparison: {} against {}\n", c.run_b.0, c.run_a.0);
    let _ = writeln!(
        out,
        "- Run A: `{}` ({})\n- Run B: `{}` ({})\n",
        c.run_a.0,
        c.run_a.1.display(),
        c.run_b.0,
        c.run_b.1.display()
    );
    out.push_str("## Configuration and dataset differences\n\n");
    if let Some(banner) = loud_banner(c) {
        let _ = writeln!(out, "> **{banner}**\n");
    }
    if c.differences.is_empty() {
        out.push_str(
            "None: the same spec, dataset release, adapters, tokenizer and code, and the same \
             plan.\n\n",
        );
    } else {
        let rows: Vec<Vec<String>> = c
            .differences
            .iter()
            .map(|d| {
                let what = if d.loud {
                    format!("**{}**", d.what)
                } else {
                    d.what.clone()
                };
                vec![what, d.a.clone(), d.b.clone()]
            })
            .collect();
        table(&mut out, &["what", "run A", "run B"], &rows);
    }
    for (label, lanes) in [
        ("only in run A", &c.only_in_a),
        ("only in run B", &c.only_in_b),
    ] {
        if !lanes.is_empty() {
            let _ = writeln!(out, "Lanes {label} (not compared): {}\n", lanes.join(", "));
        }
    }
    out.push_str("## Verdicts\n\n");
    let _ = writeln!(out, "{}\n", method_note(c));
    let found = verdicts(c);
    if found.is_empty() {
        out.push_str("No change has an interval that excludes zero.\n\n");
    }
    for (lane, cell, v) in &found {
        let _ = writeln!(out, "- **{lane}**, {cell}: {v}.");
    }
    if !found.is_empty() {
        out.push('\n');
    }
    for lane in &c.lanes {
        let _ = writeln!(out, "## {}\n", lane.display_name);
        for cell in &lane.cells {
            let _ = writeln!(out, "### {}\n", cell_title(cell));
            let rows: Vec<Vec<String>> = cell.changes.iter().map(row).collect();
            table(&mut out, &HEADERS, &rows);
        }
    }
    out
}

/// Styles only the comparison page needs, after the report's stylesheet.
const EXTRA_CSS: &str = ".loud { background: #fff4e5; border: 2px solid #c62828; color: #8a1c1c; \
     font-weight: 700; padding: 10px 14px; border-radius: 6px; }\n\
     td.better { color: #1a7f37; font-weight: 600; text-align: left; }\n\
     td.worse { color: #c62828; font-weight: 600; text-align: left; }\n";

fn html_table(out: &mut String, headers: &[&str], rows: &[(Vec<String>, &str)]) {
    out.push_str("<table class=\"summary\">\n<thead><tr>");
    for h in headers {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (cells, last_class) in rows {
        out.push_str("<tr>");
        for (i, text) in cells.iter().enumerate() {
            if i == 0 {
                let _ = write!(out, "<th scope=\"row\">{}</th>", escape(text));
            } else if i + 1 == cells.len() && !last_class.is_empty() {
                let _ = write!(out, "<td class=\"{last_class}\">{}</td>", escape(text));
            } else {
                let _ = write!(out, "<td>{}</td>", escape(text));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// Renders `compare.html` with the report page's building blocks.
pub fn html(c: &Comparison) -> String {
    let mut out = String::new();
    let title = format!("Comparison: {} against {}", c.run_b.0, c.run_a.0);
    let subtitle = format!(
        "Run A {} · Run B {}",
        c.run_a.1.display(),
        c.run_b.1.display()
    );
    page_start(&mut out, &title, &subtitle, EXTRA_CSS);
    out.push_str("<section id=\"differences\">\n<h2>Configuration and dataset differences</h2>\n");
    if let Some(banner) = loud_banner(c) {
        let _ = writeln!(out, "<p class=\"loud\">{}</p>", escape(&banner));
    }
    if c.differences.is_empty() {
        out.push_str(
            "<p class=\"note\">None: the same spec, dataset release, adapters, tokenizer and \
             code, and the same plan.</p>\n",
        );
    } else {
        let rows: Vec<(Vec<String>, &str)> = c
            .differences
            .iter()
            .map(|d| (vec![d.what.clone(), d.a.clone(), d.b.clone()], ""))
            .collect();
        html_table(&mut out, &["what", "run A", "run B"], &rows);
    }
    for (label, lanes) in [
        ("only in run A", &c.only_in_a),
        ("only in run B", &c.only_in_b),
    ] {
        if !lanes.is_empty() {
            let _ = writeln!(
                out,
                "<p class=\"note\">Lanes {label} (not compared): {}</p>",
                escape(&lanes.join(", "))
            );
        }
    }
    out.push_str("</section>\n<section id=\"verdicts\">\n<h2>Verdicts</h2>\n");
    let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(&method_note(c)));
    let found = verdicts(c);
    if found.is_empty() {
        out.push_str("<p class=\"empty\">No change has an interval that excludes zero.</p>\n");
    } else {
        out.push_str("<ul>\n");
        for (lane, cell, v) in &found {
            let _ = writeln!(
                out,
                "<li><strong>{}</strong>, {}: {}</li>",
                escape(lane),
                escape(cell),
                escape(v)
            );
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
    for lane in &c.lanes {
        let _ = writeln!(out, "<section>\n<h2>{}</h2>", escape(&lane.display_name));
        for cell in &lane.cells {
            let _ = writeln!(out, "<h3>{}</h3>", escape(&cell_title(cell)));
            let rows: Vec<(Vec<String>, &str)> = cell
                .changes
                .iter()
                .map(|ch| {
                    let class = match (ch.is_difference(), ch.is_better()) {
                        (false, _) => "",
                        (true, true) => "better",
                        (true, false) => "worse",
                    };
                    (row(ch), class)
                })
                .collect();
            html_table(&mut out, &HEADERS, &rows);
        }
        out.push_str("</section>\n");
    }
    page_end(&mut out);
    out
}
