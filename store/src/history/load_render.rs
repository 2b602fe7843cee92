//! `history.md` and `history.html` of load runs, from the same blocks and page as the paired
//! history ([`super::render`]).

use super::load_history::{LoadHistory, LoadRegression};
use super::render::{Block, blocks_html, blocks_markdown, runs_table};
use openbench_report_kit::format::{MISSING, grouped};

fn run_label(h: &LoadHistory, i: usize) -> String {
    h.runs
        .get(i)
        .map_or_else(|| format!("#{i}"), |r| format!("#{} {}", i + 1, r.run_id))
}

fn num(x: Option<f64>, decimals: usize) -> String {
    x.map_or_else(|| MISSING.to_string(), |v| grouped(v, decimals))
}

fn pct(x: f64) -> String {
    format!("{}%", grouped(x * 100.0, 2))
}

/// `1 user`, `4 users`.
fn users(n: f64) -> String {
    let s = if n == 1.0 { "" } else { "s" };
    format!("{} user{s}", grouped(n, 0))
}

/// A load with its unit: `4 users` (closed loop) or `8.00/s` (open loop).
fn load_text(kind: &str, load: Option<f64>) -> String {
    match load {
        None => "none sustained".to_string(),
        Some(v) if kind == "closed" => users(v),
        Some(v) => format!("{}/s", grouped(v, 2)),
    }
}

fn regression_text(h: &LoadHistory, r: &LoadRegression) -> String {
    let value = |x: Option<f64>| match (r.unit, x) {
        (_, None) => "none sustained".to_string(),
        ("users", Some(v)) => users(v),
        ("%", Some(v)) => format!("{}%", grouped(v, 2)),
        (_, Some(v)) => format!("{}/s", grouped(v, 2)),
    };
    let change = match (r.a, r.b, r.unit) {
        (Some(a), Some(b), "%") => format!(" ({} points)", grouped(b - a, 2)),
        (Some(a), b, _) if a != 0.0 => {
            format!(" ({}%)", grouped((b.unwrap_or(0.0) - a) / a * 100.0, 1))
        }
        _ => String::new(),
    };
    let label = if r.validity_failed {
        " (rests on a run whose validity failed)"
    } else {
        ""
    };
    format!(
        "{} → {}: {}, {}: {} → {}{change}{label}",
        run_label(h, r.from),
        run_label(h, r.to),
        r.row,
        r.figure,
        value(r.a),
        value(r.b)
    )
}

fn blocks(h: &LoadHistory) -> Vec<Block> {
    let mut out = Vec::new();
    out.push(Block::Para(format!(
        "Workflow `{}` (load runs): {} stored run(s), oldest first. Only complete runs are \
         trended and compared; an unfinished run is listed but not measured. {} lane by lane \
         (and provider over its regions), with the figures the load report computed. A \
         **regression** is a saturation point that falls by at least {}% (or is lost), or a \
         step run in both whose goodput falls by at least {} percentage points or whose \
         goodput per second falls by at least {}%. A step's figures are one measurement each: \
         no interval.",
        h.workflow,
        h.runs.len(),
        match &h.baseline {
            Some(id) =>
                format!("Each change is from the baseline run {id} to the latest complete run,"),
            None => "Each change is from one complete run to the next,".to_string(),
        },
        grouped(h.rule.min_relative_change_pct, 1),
        grouped(h.rule.min_rate_change_points, 1),
        grouped(h.rule.min_relative_change_pct, 1),
    )));
    out.push(Block::Heading(2, "Runs".into()));
    out.push(runs_table(&h.runs));
    out.push(Block::Para(if h.compared.is_empty() {
        "Compared: none (fewer than two complete runs).".to_string()
    } else {
        let pairs: Vec<String> = h
            .compared
            .iter()
            .map(|(a, b)| format!("#{} → #{}", a + 1, b + 1))
            .collect();
        format!("Compared: {}.", pairs.join(", "))
    }));
    out.push(Block::Heading(2, "Regressions".into()));
    if h.regressions.is_empty() {
        out.push(Block::Para("None.".into()));
    } else {
        out.push(Block::List(
            h.regressions
                .iter()
                .map(|r| regression_text(h, r))
                .collect(),
        ));
    }
    out.push(Block::Heading(2, "Saturation points".into()));
    out.push(Block::Table(
        [
            "lane",
            "kind",
            "run",
            "step",
            "saturation point",
            "achieved/s",
        ]
        .map(String::from)
        .to_vec(),
        h.saturation
            .iter()
            .map(|p| {
                vec![
                    p.row.clone(),
                    p.kind.clone(),
                    run_label(h, p.run),
                    p.label.clone().unwrap_or_else(|| MISSING.into()),
                    load_text(&p.kind, p.load),
                    num(p.achieved_per_s, 2),
                ]
            })
            .collect(),
    ));
    out.push(Block::Heading(2, "Steps".into()));
    out.push(Block::Table(
        [
            "lane",
            "step",
            "run",
            "load",
            "achieved/s",
            "requests/s",
            "output tokens/s",
            "TTFA p50",
            "TTFA p99",
            "ITL p99",
            "E2E p99",
            "goodput",
            "goodput/s",
            "failures",
            "sustained",
        ]
        .map(String::from)
        .to_vec(),
        h.steps
            .iter()
            .map(|s| {
                vec![
                    s.row.clone(),
                    s.label.clone(),
                    run_label(h, s.run),
                    grouped(s.load, 2),
                    grouped(s.achieved_per_s, 2),
                    num(s.request_throughput_per_s, 2),
                    num(s.output_tokens_per_s, 1),
                    num(s.ttfa_ms.0, 1),
                    num(s.ttfa_ms.1, 1),
                    num(s.itl_p99_ms, 1),
                    num(s.e2e_p99_ms, 1),
                    pct(s.goodput_fraction),
                    num(s.goodput_per_s, 2),
                    s.failures.to_string(),
                    if s.sustained { "yes" } else { "no" }.to_string(),
                ]
            })
            .collect(),
    ));
    out.push(Block::Para(
        "Latencies in ms from the actual send; requests/s and output tokens/s are completions \
         inside the measured window ÷ its length (docs/load.md)."
            .into(),
    ));
    out
}

/// `history.md` of load runs.
pub fn markdown(h: &LoadHistory) -> String {
    blocks_markdown(blocks(h))
}

/// `history.html` of load runs.
pub fn html(h: &LoadHistory) -> String {
    blocks_html(
        &format!("{} · {} run(s) · load", h.workflow, h.runs.len()),
        blocks(h),
    )
}
