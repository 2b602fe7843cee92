//! `history.md` and `history.html`, rendered from one list of blocks so the two always say the
//! same thing. Nothing here names the store or reads the clock: the same stored runs give
//! byte-identical files from SQLite and PostgreSQL.

use super::History;
use crate::cost::CostRow;
use openbench_common::untrusted_text::terminal;
use openbench_report_kit::format::{MISSING, grouped, pct, usd};
use openbench_report_kit::html::{escape, page_end, page_start};
use openbench_report_kit::table::markdown as table;
use openbench_task_metrics::compare::{Change, Metric, render as fmt};

/// One piece of the page (shared with the load history's page, `load_render`).
pub(super) enum Block {
    Heading(u8, String),
    Para(String),
    List(Vec<String>),
    Table(Vec<String>, Vec<Vec<String>>),
}

/// Metrics shown in the trend tables (every compared metric).
const TREND: [Metric; 10] = Metric::ALL;

pub(super) fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}

/// The "Runs" table both histories print: every stored run, oldest first, unfinished ones
/// marked as not compared.
pub(super) fn runs_table(runs: &[super::RunRow]) -> Block {
    Block::Table(
        [
            "#",
            "run",
            "status",
            "started",
            "requests",
            "lock sha256",
            "code sha256",
        ]
        .map(String::from)
        .to_vec(),
        runs.iter()
            .enumerate()
            .map(|(i, r)| {
                vec![
                    (i + 1).to_string(),
                    r.run_id.clone(),
                    if super::is_compared(r) {
                        r.status.clone()
                    } else {
                        format!("{} (unfinished: not compared)", r.status)
                    },
                    r.started_at.clone().unwrap_or_else(|| MISSING.into()),
                    r.requests.to_string(),
                    short(&r.lock_sha256),
                    short(&r.code_sha256),
                ]
            })
            .collect(),
    )
}

fn run_label(h: &History, i: usize) -> String {
    h.runs
        .get(i)
        .map_or_else(|| format!("#{i}"), |r| format!("#{} {}", i + 1, r.run_id))
}

fn change_text(c: &Change) -> String {
    let unit = c.metric.unit();
    let relative = match (c.a, c.delta) {
        (Some(a), Some(d)) if a != 0.0 && unit != openbench_task_metrics::compare::Unit::Rate => {
            let text = grouped(d / a.abs() * 100.0, 1);
            let sign = if text.starts_with('-') { "" } else { "+" };
            format!(", {sign}{text}%")
        }
        _ => String::new(),
    };
    format!(
        "{}: {} → {} ({}{relative}; 95% interval {})",
        c.metric.label(),
        fmt::value(unit, c.a),
        fmt::value(unit, c.b),
        fmt::signed(unit, c.delta),
        fmt::interval(c)
    )
}

fn blocks(h: &History) -> Vec<Block> {
    let mut out = Vec::new();
    let rule = h.options.rule;
    out.push(Block::Para(format!(
        "Workflow `{}`: {} stored run(s), oldest first. Only complete runs are trended and \
         compared; an unfinished run (failed, interrupted, incomplete) is listed but not \
         measured, since its missing requests would read as changes. {} lane by lane \
         (provider and region) and family by family, with the 95% paired bootstrap interval of \
         `compare` ({} replicates, seed {}). A **regression** is a change for the worse whose \
         interval excludes zero and whose size is at least {}% of the earlier value (latencies, \
         tokens/s) or {} percentage points (task success, failure rate).",
        h.workflow,
        h.runs.len(),
        match &h.options.baseline {
            Some(id) =>
                format!("Each change is from the baseline run {id} to the latest complete run,"),
            None => "Each change is from one complete run to the next,".to_string(),
        },
        h.options.compare.replicates,
        h.options.compare.seed,
        grouped(rule.min_relative_change_pct, 1),
        grouped(rule.min_rate_change_points, 1),
    )));
    out.push(Block::Heading(2, "Runs".into()));
    out.push(runs_table(&h.runs));
    out.push(Block::Para(if h.steps.is_empty() {
        "Compared: none (fewer than two complete runs).".to_string()
    } else {
        format!(
            "Compared: {}.",
            h.steps
                .iter()
                .map(|s| format!("#{} → #{}", s.from + 1, s.to + 1))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }));
    out.push(Block::Heading(2, "Regressions".into()));
    if h.regressions.is_empty() {
        out.push(Block::Para("None.".into()));
    } else {
        out.push(Block::List(
            h.regressions
                .iter()
                .map(|r| {
                    format!(
                        "{} → {}: {}, {}: {}",
                        run_label(h, r.from),
                        run_label(h, r.to),
                        r.lane,
                        r.family,
                        fmt::verdict(&r.change).map_or_else(
                            || change_text(&r.change),
                            |v| { format!("{v}; {}", change_text(&r.change)) }
                        )
                    )
                })
                .collect(),
        ));
    }
    out.push(Block::Heading(
        2,
        "Changes whose interval excludes zero".into(),
    ));
    let mut lines = Vec::new();
    for step in &h.steps {
        for lane in &step.lanes {
            for cell in &lane.cells {
                for c in cell.changes.iter().filter(|c| c.is_difference()) {
                    lines.push(format!(
                        "{} → {}: {}, {}: {}",
                        run_label(h, step.from),
                        run_label(h, step.to),
                        lane.display_name,
                        cell.family,
                        change_text(c)
                    ));
                }
            }
        }
    }
    if lines.is_empty() {
        out.push(Block::Para("None.".into()));
    } else {
        out.push(Block::List(lines));
    }
    out.push(Block::Heading(2, "Trends".into()));
    let families: Vec<String> = std::iter::once("pooled".to_string())
        .chain(h.families.iter().cloned())
        .collect();
    for lane in &h.lanes {
        out.push(Block::Heading(3, lane.display_name.clone()));
        let mut headers = vec!["run".to_string(), "family".to_string()];
        headers.extend(TREND.iter().map(|m| m.label().to_string()));
        let mut rows = Vec::new();
        for family in &families {
            for point in &lane.points {
                let Some(s) = point.cells.iter().find(|s| &s.task_family == family) else {
                    continue;
                };
                let mut row = vec![run_label(h, point.run), family.clone()];
                row.extend(TREND.iter().map(|m| fmt::value(m.unit(), m.of(s))));
                rows.push(row);
            }
        }
        out.push(Block::Table(headers, rows));
    }
    out.push(Block::Heading(
        2,
        "Cost and token reconciliation (latest run)".into(),
    ));
    out.push(Block::Para(
        "Cost uses the spec's list prices and provider-reported usage, over the completed \
         responses that reported usage. The discrepancy compares the provider's visible \
         completion tokens (completion − reasoning) with our o200k count of the same answers; \
         it is shown, never used in place of either."
            .into(),
    ));
    out.push(Block::Table(
        [
            "lane",
            "responses with usage",
            "completion tokens (provider)",
            "reasoning tokens (provider)",
            "answer tokens (o200k)",
            "discrepancy",
            "cached tokens (provider)",
            "cached-token cost",
            "cache-write tokens (provider)",
            "cache-write cost",
            "cost",
            "per 1M output tokens",
            "per correct answer",
        ]
        .map(String::from)
        .to_vec(),
        h.costs.iter().map(cost_row).collect(),
    ));
    out
}

fn cost_row(c: &CostRow) -> Vec<String> {
    vec![
        c.lane.clone(),
        format!("{} / {}", c.responses_with_usage, c.completed),
        grouped(c.completion_tokens as f64, 0),
        grouped(c.reasoning_tokens as f64, 0),
        grouped(c.o200k_answer_tokens as f64, 0),
        c.answer_token_discrepancy.map_or_else(
            || MISSING.to_string(),
            |d| {
                let text = pct(Some(d));
                if text.starts_with('-') {
                    text
                } else {
                    format!("+{text}")
                }
            },
        ),
        grouped(c.cached_tokens as f64, 0),
        usd(c.cached_cost_usd),
        grouped(c.cache_write_tokens as f64, 0),
        usd(c.cache_write_cost_usd),
        usd(c.cost_usd),
        usd(c.cost_per_million_output_tokens),
        usd(c.cost_per_correct_answer),
    ]
}

/// `history.md`.
pub fn markdown(h: &History) -> String {
    blocks_markdown(blocks(h))
}

/// `history.md` of `blocks`.
pub(super) fn blocks_markdown(blocks: Vec<Block>) -> String {
    let mut out = String::from("# Results history\n\n");
    for block in blocks {
        match block {
            // Headings, paragraphs and list items are one line each: a stored name cannot end
            // one early (its newlines and terminal escapes are shown, not obeyed).
            Block::Heading(level, text) => {
                let text = terminal(&text);
                out.push_str(&format!("{} {text}\n\n", "#".repeat(usize::from(level))));
            }
            Block::Para(text) => out.push_str(&format!("{}\n\n", terminal(&text))),
            Block::List(items) => {
                for item in items {
                    out.push_str(&format!("- {}\n", terminal(&item)));
                }
                out.push('\n');
            }
            Block::Table(headers, rows) => {
                let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
                table(&mut out, &headers, &rows);
            }
        }
    }
    out
}

/// `history.html`: the same blocks as a self-contained page in the report's style.
pub fn html(h: &History) -> String {
    blocks_html(
        &format!("{} · {} run(s)", h.workflow, h.runs.len()),
        blocks(h),
    )
}

/// `history.html` of `blocks`, under `subtitle`.
pub(super) fn blocks_html(subtitle: &str, blocks: Vec<Block>) -> String {
    let mut out = String::new();
    page_start(&mut out, "Results history", subtitle, "");
    for block in blocks {
        match block {
            Block::Heading(level, text) => {
                out.push_str(&format!("<h{level}>{}</h{level}>\n", escape(&text)));
            }
            Block::Para(text) => out.push_str(&format!("<p>{}</p>\n", escape(&text))),
            Block::List(items) => {
                out.push_str("<ul>\n");
                for item in items {
                    out.push_str(&format!("<li>{}</li>\n", escape(&item)));
                }
                out.push_str("</ul>\n");
            }
            Block::Table(headers, rows) => {
                out.push_str("<table>\n<thead><tr>");
                for h in &headers {
                    out.push_str(&format!("<th>{}</th>", escape(h)));
                }
                out.push_str("</tr></thead>\n<tbody>\n");
                for row in &rows {
                    out.push_str("<tr>");
                    for cell in row {
                        out.push_str(&format!("<td>{}</td>", escape(cell)));
                    }
                    out.push_str("</tr>\n");
                }
                out.push_str("</tbody>\n</table>\n");
            }
        }
    }
    page_end(&mut out);
    out
}
