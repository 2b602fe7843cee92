//! The "Repeats" section of `report.md` and `report.html` (`plans.repeats`,
//! docs/methodology.md, "Repeats of paired rounds"): per lane and headline figure, each
//! repeat's value, then their mean and 95% Student t interval. A run made once has none.

use super::format::{MISSING, grouped, pct};
use super::markdown::table;
use crate::html::escape;
use openbench_report_kit::repeats::cells;
use openbench_task_metrics::repeats::{PairedRepeats, RepeatFigure};
use std::fmt::Write;

/// A figure's value as the tables print it (a rate as a percentage).
fn cell(figure: RepeatFigure, v: Option<f64>) -> String {
    match figure {
        RepeatFigure::TaskSuccessRate => pct(v),
        _ => v.map_or(MISSING.to_string(), |x| grouped(x, 1)),
    }
}

/// The sentence above the table.
fn intro(r: &PairedRepeats) -> String {
    format!(
        "The round set ran {} times ({} rounds each), each repeat asking every selected item \
         again in its own seeded order with its own request ids; each figure as that repeat's \
         submitted records give it (the summary's own definitions), then the mean over the \
         repeats and its 95% Student t interval (mean ± t·s/√n).",
        r.repeats,
        r.rounds / u64::from(r.repeats.max(1))
    )
}

/// The table's headers and rows: one row per lane × figure.
pub fn rows(r: &PairedRepeats) -> (Vec<String>, Vec<Vec<String>>) {
    let mut headers = vec!["Provider".to_string(), "Figure".into()];
    headers.extend((1..=r.repeats).map(|i| format!("Repeat {i}")));
    headers.extend(["Mean".into(), "95% t interval".into()]);
    let mut out = Vec::new();
    for lane in &r.lanes {
        for f in &lane.figures {
            let mut line = vec![lane.display_name.clone(), f.figure.name().to_string()];
            line.extend(cells(
                &f.per_repeat,
                r.repeats as usize,
                f.across.as_ref(),
                |v| cell(f.figure, v),
            ));
            out.push(line);
        }
    }
    (headers, out)
}

/// Appends the markdown section (nothing for a run made once).
pub(super) fn markdown(out: &mut String, r: Option<&PairedRepeats>) {
    let Some(r) = r else { return };
    out.push_str("## Repeats\n\n");
    let _ = writeln!(out, "{}\n", intro(r));
    let (headers, rows) = rows(r);
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    table(out, &headers, &rows);
}

/// Appends the HTML section (nothing for a run made once).
pub fn html(out: &mut String, r: Option<&PairedRepeats>) {
    let Some(r) = r else { return };
    out.push_str("<section id=\"repeats\">\n<h2>Repeats</h2>\n");
    let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(&intro(r)));
    let (headers, rows) = rows(r);
    out.push_str("<table class=\"summary\">\n<thead><tr>");
    for h in &headers {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &rows {
        out.push_str("<tr>");
        for (i, text) in row.iter().enumerate() {
            let tag = if i == 0 { "th scope=\"row\"" } else { "td" };
            let close = if i == 0 { "th" } else { "td" };
            let _ = write!(out, "<{tag}>{}</{close}>", escape(text));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}
