//! The validity section as report text: a one-line verdict for the top of a report and a table
//! of every check, in Markdown or HTML (the caller's escape function, so `common` carries no HTML
//! code of its own).

use super::assess::{Check, ValiditySection};

/// The line at the top of a report: passed, or which checks failed.
pub fn banner(section: &ValiditySection) -> String {
    let failures = section.failures();
    if failures.is_empty() {
        format!(
            "Validity: passed ({} checks; measured timing error {:.2} ms).",
            section.checks.len(),
            section.measured_error_ms()
        )
    } else {
        let named: Vec<String> = failures.iter().map(|c| describe(c)).collect();
        format!(
            "**Validity: FAILED** — this run's own measurement broke {} of {} checks: {}. \
             Figures that rest on it may reflect the machine, not the provider.",
            failures.len(),
            section.checks.len(),
            named.join("; ")
        )
    }
}

/// `item (scope): value > threshold unit`.
pub fn describe(check: &Check) -> String {
    let relation = if check.passed { "within" } else { "against" };
    format!(
        "{} ({}): {} {relation} {} {}",
        check.item,
        check.scope,
        number(check.value),
        number(check.threshold),
        check.unit
    )
}

fn number(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if v.abs() >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.2e}")
    }
}

/// One row per check: item, scope, value, threshold, unit, verdict.
fn rows(section: &ValiditySection) -> Vec<[String; 6]> {
    section
        .checks
        .iter()
        .map(|c| {
            [
                c.item.clone(),
                c.scope.clone(),
                number(c.value),
                number(c.threshold),
                c.unit.clone(),
                c.verdict().to_string(),
            ]
        })
        .collect()
}

const HEADER: [&str; 6] = ["Check", "Where", "Measured", "Threshold", "Unit", "Verdict"];

/// The worst canary moments, one line each (time-located stalls).
fn worst_lines(section: &ValiditySection) -> Vec<String> {
    let mut lines = Vec::new();
    for r in &section.runtimes {
        for m in r.health.worst.iter().filter(|m| m.lateness_ms >= 1.0) {
            lines.push(format!(
                "{}: {:.1} ms late at {} ({:.0}–{:.0} ms after its start)",
                r.scope, m.lateness_ms, m.at, m.from_offset_ms, m.to_offset_ms
            ));
        }
    }
    lines
}

/// One line per probe replica: its send lag and its clock offset with the offset's bound
/// (docs/load.md, "Probe replicas"); none without replicas.
fn replica_lines(section: &ValiditySection) -> Vec<String> {
    let mut replicas: Vec<&String> = section.replica_send_lag_ms.keys().collect();
    let clocked = section
        .clock
        .keys()
        .filter(|k| k.contains(crate::spec::REPLICA_SEPARATOR));
    replicas.extend(clocked);
    replicas.extend(section.replica_harness_failures.keys());
    replicas.sort();
    replicas.dedup();
    replicas
        .into_iter()
        .map(|replica| {
            let lag = section.replica_send_lag_ms.get(replica).map_or_else(
                || "no timed releases".to_string(),
                |s| {
                    format!(
                        "send lag p50 {} / p99 {} / max {} ms over {} releases",
                        number(s.p50),
                        number(s.p99),
                        number(s.max),
                        s.n
                    )
                },
            );
            let clock = section.clock.get(replica).map_or_else(
                || "clock offset not measured".to_string(),
                |l| {
                    format!(
                        "clock offset {} ms (± {} ms)",
                        number(l.clock_offset_ms),
                        number(l.clock_offset_error_ms)
                    )
                },
            );
            let lost = match section.replica_harness_failures.get(replica) {
                Some(n) if *n > 0 => {
                    format!("; FAILED: {n} of its requests are harness failures (probe lost)")
                }
                _ => String::new(),
            };
            format!("replica {replica}: {lag}; {clock}{lost}")
        })
        .collect()
}

/// The section in Markdown (`## Validity`); names from a spec (lanes, regions) are escaped as
/// table cells (`untrusted_text::markdown_cell`).
pub fn markdown(section: &ValiditySection) -> String {
    let escape = crate::untrusted_text::markdown_cell;
    let mut out = String::from("## Validity\n\n");
    out.push_str(&escape(&banner(section)));
    out.push_str(" Thresholds and their reasons: docs/validity.md.\n\n");
    out.push_str(&format!("| {} |\n", HEADER.join(" | ")));
    out.push_str(&format!("|{}\n", "---|".repeat(HEADER.len())));
    for row in rows(section) {
        let cells: Vec<String> = row.iter().map(|c| escape(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    let replicas = replica_lines(section);
    if !replicas.is_empty() {
        out.push_str("\nProbe replicas (each times its share on its own clock):\n\n");
        for line in replicas {
            out.push_str(&format!("- {}\n", escape(&line)));
        }
    }
    let worst = worst_lines(section);
    if !worst.is_empty() {
        out.push_str("\nWorst runtime stalls (≥ 1 ms):\n\n");
        for line in worst {
            out.push_str(&format!("- {}\n", escape(&line)));
        }
    }
    out.push('\n');
    out
}

/// The section in HTML (`<h2>Validity</h2>`), text escaped by `escape`.
pub fn html(section: &ValiditySection, escape: impl Fn(&str) -> String) -> String {
    let class = if section.passed() { "valid" } else { "invalid" };
    let mut out = format!(
        "<h2>Validity</h2>\n<p class=\"{class}\">{}</p>\n<table>\n<tr>",
        escape(&banner(section).replace("**", ""))
    );
    for h in HEADER {
        out.push_str(&format!("<th>{h}</th>"));
    }
    out.push_str("</tr>\n");
    for row in rows(section) {
        out.push_str("<tr>");
        for cell in row {
            out.push_str(&format!("<td>{}</td>", escape(&cell)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    let replicas = replica_lines(section);
    if !replicas.is_empty() {
        out.push_str("<p>Probe replicas (each times its share on its own clock):</p>\n<ul>\n");
        for line in replicas {
            out.push_str(&format!("<li>{}</li>\n", escape(&line)));
        }
        out.push_str("</ul>\n");
    }
    let worst = worst_lines(section);
    if !worst.is_empty() {
        out.push_str("<ul>\n");
        for line in worst {
            out.push_str(&format!("<li>{}</li>\n", escape(&line)));
        }
        out.push_str("</ul>\n");
    }
    out
}
