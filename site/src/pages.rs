//! Where each page of a benchmark lives (one flat folder, so every link is relative and the site
//! works from `file://`), the links between them, and the front page listing the benchmarks.

use crate::model::SnapshotResults;
use crate::page::{Page, date, escape};

/// The leaderboard's file.
pub fn leaderboard_file(s: &SnapshotResults) -> String {
    format!("{}.html", s.benchmark)
}

/// An analysis page's file (`latency`, `speed`, `accuracy`, `history`, `load`).
pub fn file(s: &SnapshotResults, page: &str) -> String {
    format!("{}-{page}.html", s.benchmark)
}

/// The snapshot's results file, from the site's root.
pub fn results_file(s: &SnapshotResults) -> String {
    format!("results/{}.json", anchor(&s.run_id))
}

/// `text` as an id or file stem: ASCII letters, digits, `-`, `_` and `.` kept, the rest `-`.
pub fn anchor(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The pages a snapshot has besides its leaderboard: (file, title).
pub fn analyses(s: &SnapshotResults) -> Vec<(String, &'static str)> {
    if s.load.is_some() {
        return vec![
            (
                file(s, "load"),
                "Load: saturation, goodput, TTFA and ITL against load",
            ),
            (file(s, "history"), "History per provider"),
        ];
    }
    vec![
        (file(s, "latency"), "Lowest latency: p99 tail analysis"),
        (file(s, "speed"), "Fastest by tokens per second"),
        (file(s, "accuracy"), "Same model, different accuracy"),
        (file(s, "history"), "History per provider"),
    ]
}

/// Links from each figure's name to its definition on the methodology page.
pub fn definitions() -> String {
    "<p class=\"meta\">Definitions: <a href=\"methodology.html#3-streams-and-timings\">E2E \
     and TTFA</a>, <a href=\"methodology.html#6-statistics\">tokens/s and percentiles</a>, \
     <a href=\"methodology.html#5-scoring-no-partial-credit\">task success</a>, \
     <a href=\"methodology.html#4-outcomes\">operational failures</a>.</p>\n"
        .to_string()
}

/// The "more on this snapshot" links every page of a benchmark ends with.
pub fn related(s: &SnapshotResults) -> String {
    let mut out = String::from("<h2>More on this snapshot</h2>\n<ul>");
    out.push_str(&format!(
        "<li><a href=\"{}\">Leaderboard</a></li>",
        leaderboard_file(s)
    ));
    for (f, title) in analyses(s) {
        out.push_str(&format!("<li><a href=\"{f}\">{title}</a></li>"));
    }
    out.push_str(&format!(
        "<li><a href=\"{}\">Results JSON of run {}</a></li>",
        results_file(s),
        escape(&s.run_id)
    ));
    out.push_str("<li><a href=\"methodology.html\">Methodology</a></li></ul>\n");
    out
}

/// The front page: each benchmark's latest snapshot.
pub fn index(latest: &[&SnapshotResults]) -> String {
    let simulated = latest.iter().any(|s| s.simulated);
    let mut p = Page::new(
        "Inference provider benchmarks",
        "Leaderboards of LLM inference providers serving the same model",
        simulated,
    );
    p.para(
        "Open, reproducible measurements of LLM inference providers serving the same model: \
         latency, tokens per second and exact task success, from paired rounds. Each \
         leaderboard shows the latest published snapshot of one benchmark (one workflow, one \
         model) and names the run it came from.",
    );
    if latest.is_empty() {
        p.para("No snapshot has been published yet.");
    }
    p.push("<ul>");
    for s in latest {
        p.push(&format!(
            "<li><a href=\"{}\">{} — {}</a>: run <code>{}</code>, started {}{}</li>",
            leaderboard_file(s),
            escape(s.model_title()),
            escape(&s.workflow),
            escape(&s.run_id),
            escape(&date(s.started_at.as_deref())),
            if s.simulated { " (simulated)" } else { "" }
        ));
    }
    p.push("</ul>\n");
    p.finish(false)
}
