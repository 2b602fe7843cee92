//! Inline SVG bar charts: one row per provider, one or two bars per row (two series, e.g. p50
//! and p99), each bar labelled with its value. Colours come from the page's stylesheet, so the
//! chart follows the light or dark scheme; `<title>` and `<desc>` give the text alternative.

use crate::page::{Unit, escape, shown};

/// One series: its name (legend and description) and one value per row.
pub struct Series<'a> {
    /// Name, e.g. `E2E p99`.
    pub name: &'a str,
    /// Values, one per row (missing: no bar).
    pub values: Vec<Option<f64>>,
}

const WIDTH: f64 = 640.0;
const LABEL: f64 = 150.0;
const BAR: f64 = 14.0;
const GAP: f64 = 10.0;
const VALUE_ROOM: f64 = 80.0;

/// A horizontal bar chart of `series` over `rows` (provider names), values in `unit`; `id`
/// makes the title and description ids unique on the page.
pub fn bars(id: &str, title: &str, rows: &[String], series: &[Series], unit: Unit) -> String {
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .fold(0.0f64, |m, v| m.max(*v));
    let scale = |v: f64| {
        if max > 0.0 {
            v / max * (WIDTH - LABEL - VALUE_ROOM)
        } else {
            0.0
        }
    };
    let per_row = BAR * series.len() as f64 + GAP;
    let legend_h = 22.0;
    let height = legend_h + per_row * rows.len() as f64 + GAP;
    let mut desc = Vec::new();
    let mut body = String::new();
    for (k, s) in series.iter().enumerate() {
        body.push_str(&format!(
            "<rect class=\"b{}\" x=\"{}\" y=\"4\" width=\"12\" height=\"12\"/><text x=\"{}\" y=\"14\">{}</text>",
            k + 1,
            LABEL + k as f64 * 160.0,
            LABEL + k as f64 * 160.0 + 16.0,
            escape(s.name)
        ));
    }
    for (i, name) in rows.iter().enumerate() {
        let top = legend_h + i as f64 * per_row;
        body.push_str(&format!(
            "<text x=\"0\" y=\"{:.1}\">{}</text>",
            top + BAR * series.len() as f64 / 2.0 + 4.0,
            escape(name)
        ));
        let mut parts = Vec::new();
        for (k, s) in series.iter().enumerate() {
            let y = top + k as f64 * BAR;
            let value = s.values.get(i).copied().flatten();
            parts.push(format!("{} {}", s.name, shown(value, unit)));
            let Some(v) = value else { continue };
            let w = scale(v);
            body.push_str(&format!(
                "<rect class=\"b{}\" x=\"{LABEL}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                k + 1,
                BAR - 2.0,
                LABEL + w + 4.0,
                y + BAR - 4.0,
                escape(&shown(Some(v), unit))
            ));
        }
        desc.push(format!("{}: {}", name, parts.join(", ")));
    }
    format!(
        "<figure><svg class=\"chart\" viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" \
         aria-labelledby=\"{id}-t {id}-d\" xmlns=\"http://www.w3.org/2000/svg\">\
         <title id=\"{id}-t\">{}</title><desc id=\"{id}-d\">{}.</desc>{body}</svg>\
         <figcaption class=\"meta\">{}</figcaption></figure>\n",
        escape(title),
        escape(&desc.join("; ")),
        escape(title)
    )
}
