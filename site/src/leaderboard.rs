//! A benchmark's leaderboard: its latest published snapshot in the reference layout — providers
//! alphabetical, E2E p50 and p99, TTFA p50, tokens/s p50 and p95 floor, task success and
//! operational failures, each header linked to its definition — with the snapshot's run,
//! date, request counts and contract, and the note that no single metric picks a winner.

use crate::model::{LaneResults, SnapshotResults};
use crate::page::{Page, Unit, date, escape, figure};
use crate::pages;

/// One leaderboard column: header, metric path, unit, methodology anchor.
pub struct Column {
    /// Header text.
    pub header: &'static str,
    /// The metric's path in `metrics` (pooled row).
    pub metric: &'static str,
    /// How it is shown.
    pub unit: Unit,
    /// Its definition on the methodology page.
    pub anchor: &'static str,
}

/// The reference layout's columns.
pub const COLUMNS: [Column; 7] = [
    Column {
        header: "E2E p50 (ms)",
        metric: "e2e_latency_p50",
        unit: Unit::Ms,
        anchor: "3-streams-and-timings",
    },
    Column {
        header: "E2E p99 (ms)",
        metric: "e2e_latency_p99",
        unit: Unit::Ms,
        anchor: "3-streams-and-timings",
    },
    Column {
        header: "TTFA p50 (ms)",
        metric: "ttfa_p50",
        unit: Unit::Ms,
        anchor: "3-streams-and-timings",
    },
    Column {
        header: "Tokens/s p50",
        metric: "output_tokens_per_second_p50",
        unit: Unit::Tps,
        anchor: "6-statistics",
    },
    Column {
        header: "Tokens/s p95 floor",
        metric: "output_tokens_per_second_p95",
        unit: Unit::Tps,
        anchor: "6-statistics",
    },
    Column {
        header: "Task success",
        metric: "task_success_rate",
        unit: Unit::Rate,
        anchor: "5-scoring-no-partial-credit",
    },
    Column {
        header: "Operational failures",
        metric: "failure_rate",
        unit: Unit::Rate,
        anchor: "4-outcomes",
    },
];

/// The note under every leaderboard, as the reference words it.
pub const NO_WINNER: &str = "Providers are alphabetical; no single metric determines an overall \
    winner. Lower latency is better. Higher generation speed and task success are better. TTFA \
    measures the wait for the first visible answer token. The tokens/s p95 floor is the speed at \
    least 95% of eligible responses achieved, not an upper-tail speed. Latency and speed require \
    valid timing samples; failed requests are excluded from latency calculations but remain in \
    the task-success denominator. Percentiles describe the observed distribution, not \
    confidence intervals.";

/// Lanes alphabetical by display name (then lane label), as the leaderboard lists them.
pub fn alphabetical(s: &SnapshotResults) -> Vec<&LaneResults> {
    let mut lanes: Vec<&LaneResults> = s.lanes.iter().collect();
    lanes.sort_by(|a, b| {
        (a.display_name.to_lowercase(), &a.lane).cmp(&(b.display_name.to_lowercase(), &b.lane))
    });
    lanes
}

/// The sentence naming the snapshot: run, dates, requests, contract.
pub fn provenance(s: &SnapshotResults) -> String {
    let per_lane: Vec<String> = {
        let mut counts: Vec<String> = s
            .lanes
            .iter()
            .filter_map(|l| l.pooled.get("submitted_count").copied().flatten())
            .map(|c| crate::page::shown(Some(c), Unit::Count))
            .collect();
        counts.dedup();
        counts
    };
    let requests = match per_lane.as_slice() {
        [one] => format!("Each provider received {one} requests"),
        _ => "Providers received different numbers of requests (see the table)".to_string(),
    };
    let concurrency = s
        .contract
        .concurrency_per_provider
        .map_or("set per load step".to_string(), |c| c.to_string());
    let effort = s
        .contract
        .reasoning_effort
        .clone()
        .unwrap_or_else(|| "not recorded in the store".to_string());
    format!(
        "Snapshot from run <code>{}</code>, started {} and published {} under approval \
         <code>{}</code> ({} rounds, {} requests stored). {requests} across {}, with streaming \
         {}, reasoning effort {}, concurrency {concurrency} per provider and a {} ms timeout per \
         request.",
        escape(&s.run_id),
        escape(&date(s.started_at.as_deref())),
        escape(&date(Some(&s.published_at))),
        escape(&s.approval_id),
        crate::page::shown(Some(s.rounds as f64), Unit::Count),
        crate::page::shown(Some(s.requests as f64), Unit::Count),
        escape(&s.families.join(", ")),
        if s.contract.streaming { "on" } else { "off" },
        escape(&effort),
        crate::page::shown(Some(s.contract.timeout_ms as f64), Unit::Count),
    )
}

/// The leaderboard table (sortable with the page's script; plain table without it).
pub fn table(s: &SnapshotResults) -> String {
    let mut out = String::from(
        "<div class=\"table-wrap\"><table class=\"sortable\" id=\"leaderboard\">\
         <caption class=\"meta\">Click a column header to sort.</caption>\n<thead><tr>\
         <th scope=\"col\" aria-sort=\"ascending\"><button type=\"button\">Provider</button></th>",
    );
    for c in &COLUMNS {
        out.push_str(&format!(
            "<th scope=\"col\"><button type=\"button\">{}</button> \
             <a href=\"methodology.html#{}\" aria-label=\"Definition of {}\">def.</a></th>",
            escape(c.header),
            c.anchor,
            escape(c.header)
        ));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for lane in alphabetical(s) {
        out.push_str(&format!(
            "<tr><th scope=\"row\">{}</th>",
            escape(&lane.display_name)
        ));
        for c in &COLUMNS {
            let value = lane.pooled.get(c.metric).copied().flatten();
            out.push_str(&format!(
                "<td>{}</td>",
                figure(value, c.unit, &lane.lane, c.metric, "")
            ));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// Regions and the probes that served them, when the run had several of either.
pub fn placement(s: &SnapshotResults) -> Option<String> {
    let probes: usize = s.probes.values().map(Vec::len).sum();
    if s.regions.len() < 2 && probes < 2 {
        return None;
    }
    let items: Vec<String> = s
        .regions
        .iter()
        .map(|r| {
            let ids = s.probes.get(r).map(|p| p.join(", ")).unwrap_or_default();
            format!(
                "<li>{}: probes {}</li>",
                escape(r),
                escape(if ids.is_empty() { "—" } else { &ids })
            )
        })
        .collect();
    Some(format!(
        "<h2>Regions and probes</h2>\n<p>Rows name their region where a provider was measured \
         from several.</p>\n<ul>{}</ul>\n",
        items.concat()
    ))
}

/// The leaderboard page of `s`.
pub fn page(s: &SnapshotResults) -> String {
    let title = if s.model.trim().is_empty() {
        format!("{}: providers compared", s.workflow)
    } else {
        format!("{}: providers compared ({})", s.model, s.workflow)
    };
    let mut p = Page::new(
        &title,
        &format!("Leaderboard of run {}", s.run_id),
        s.simulated,
    );
    p.para(&provenance(s));
    if s.load.is_some() {
        p.para(&format!(
            "A load run: its figures are per step, on the <a href=\"{}\">load results</a> page.",
            pages::file(s, "load")
        ));
    } else {
        p.push(&table(s));
        p.para(&escape(NO_WINNER));
    }
    if let Some(html) = placement(s) {
        p.push(&html);
    }
    p.push(&pages::related(s));
    p.finish(true)
}
