//! `compare.html`: the comparison of two load runs as a self-contained page (the report kit's
//! shell and escaping) with the same tables as `compare.md`, one per matched step, verdicts
//! coloured.

use super::compare::{Comparison, LEVEL};
use super::compare_md::{HEADERS, step_rows};
use openbench_report_kit::html::{escape, page_end, page_start};
use std::fmt::Write;

/// Styles only the comparison page needs, after the report's stylesheet.
const EXTRA_CSS: &str = "td.better { color: #1a7f37; font-weight: 600; }\n\
     td.worse { color: #c62828; font-weight: 600; }\n";

/// One table: the first cell of a row is its header; the verdict (last cell) is coloured.
fn table(out: &mut String, rows: &[Vec<String>]) {
    out.push_str("<div class=\"scroll\"><table class=\"summary\">\n<thead><tr>");
    for h in HEADERS {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for cells in rows {
        out.push_str("<tr>");
        for (i, text) in cells.iter().enumerate() {
            if i == 0 {
                let _ = write!(out, "<th scope=\"row\">{}</th>", escape(text));
            } else if i + 1 == cells.len()
                && let Some(class) = ["better", "worse"].iter().find(|w| text.starts_with(*w))
            {
                let _ = write!(out, "<td class=\"{class}\">{}</td>", escape(text));
            } else {
                let _ = write!(out, "<td>{}</td>", escape(text));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}

/// Renders `compare.html`.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let title = format!("Load comparison: {} (B) against {} (A)", c.run_b, c.run_a);
    let subtitle = format!(
        "{}% percentile bootstrap of B − A over each step's measured requests, {} replicates per \
         run, seed {}; none under 30 measured requests in the row. Steps matched by their load \
         in run order, lanes by label.",
        LEVEL * 100.0,
        c.replicates,
        c.seed
    );
    page_start(&mut out, &title, &subtitle, EXTRA_CSS);
    if !c.unmatched_steps.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"note\">Steps in one run only: {}.</p>",
            escape(&c.unmatched_steps.join(", "))
        );
    }
    if c.steps.is_empty() {
        out.push_str("<p class=\"note\">No step ran at the same load in both runs.</p>\n");
    }
    for step in &c.steps {
        let _ = writeln!(
            out,
            "<section><h2>{} (step {} in A, {} in B)</h2>",
            escape(&step.label),
            step.steps.0,
            step.steps.1
        );
        if !step.unmatched_lanes.is_empty() {
            let _ = writeln!(
                out,
                "<p class=\"note\">Lanes in one run only: {}.</p>",
                escape(&step.unmatched_lanes.join(", "))
            );
        }
        table(&mut out, &step_rows(step));
        out.push_str("</section>\n");
    }
    out.push_str(
        "<p class=\"note\">Latencies in ms; shares in percent, their changes in percentage \
         points. Definitions: docs/load.md, \"Reports\".</p>\n",
    );
    page_end(&mut out);
    out
}
