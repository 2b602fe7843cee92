//! The analysis pages of a snapshot, each a chart and a short text whose every number is a
//! stored figure of the snapshot (a `<data>` element naming lane and metric): the p99 tail read
//! with answer yield, median speed against the p95 floor, and task success with the failure
//! classes behind it.

use crate::chart::{Series, bars};
use crate::leaderboard::alphabetical;
use crate::model::{LaneResults, SnapshotResults};
use crate::page::{Page, Unit, escape, figure};
use crate::pages;

/// A lane's pooled figure.
fn get(lane: &LaneResults, metric: &str) -> Option<f64> {
    lane.pooled.get(metric).copied().flatten()
}

/// `lane`'s `metric` as an inline figure with its unit.
fn fig(lane: &LaneResults, metric: &str, unit: Unit) -> String {
    let suffix = match unit {
        Unit::Ms => " ms",
        Unit::Tps => " tokens/s",
        _ => "",
    };
    figure(get(lane, metric), unit, &lane.lane, metric, suffix)
}

fn name(lane: &LaneResults) -> String {
    escape(&lane.display_name)
}

/// Lanes with a value of `metric`, best first (`lower`: ascending), ties by name.
fn ranked<'a>(s: &'a SnapshotResults, metric: &str, lower: bool) -> Vec<&'a LaneResults> {
    let mut lanes: Vec<&LaneResults> = alphabetical(s)
        .into_iter()
        .filter(|l| get(l, metric).is_some())
        .collect();
    lanes.sort_by(|a, b| {
        let (x, y) = (get(a, metric).unwrap_or(0.0), get(b, metric).unwrap_or(0.0));
        if lower {
            x.total_cmp(&y)
        } else {
            y.total_cmp(&x)
        }
    });
    lanes
}

fn names(s: &SnapshotResults) -> Vec<String> {
    alphabetical(s)
        .iter()
        .map(|l| l.display_name.clone())
        .collect()
}

fn series<'a>(s: &SnapshotResults, name: &'a str, metric: &str) -> Series<'a> {
    Series {
        name,
        values: alphabetical(s).iter().map(|l| get(l, metric)).collect(),
    }
}

/// The text of the p99 tail analysis.
pub fn latency_text(s: &SnapshotResults) -> String {
    let order = ranked(s, "e2e_latency_p99", true);
    let Some(first) = order.first() else {
        return "No provider has an E2E p99 in this snapshot.".into();
    };
    let mut text = format!(
        "{} had the lowest E2E p99 in this snapshot at {}",
        name(first),
        fig(first, "e2e_latency_p99", Unit::Ms)
    );
    match order.get(1) {
        Some(second) => text.push_str(&format!(
            ", followed by {} at {}. {} returned exact-correct answers on {} of submitted \
             requests, compared with {}'s {}.",
            name(second),
            fig(second, "e2e_latency_p99", Unit::Ms),
            name(second),
            fig(second, "task_success_rate", Unit::Rate),
            name(first),
            fig(first, "task_success_rate", Unit::Rate)
        )),
        None => text.push_str(&format!(
            ", with exact-correct answers on {} of submitted requests.",
            fig(first, "task_success_rate", Unit::Rate)
        )),
    }
    text.push_str(" Tail latency and usable answer yield therefore need to be read together.");
    text
}

/// The text of the speed analysis.
pub fn speed_text(s: &SnapshotResults) -> String {
    let median = ranked(s, "output_tokens_per_second_p50", false);
    let floor = ranked(s, "output_tokens_per_second_p95", false);
    let (Some(m), Some(f)) = (median.first(), floor.first()) else {
        return "No provider has an eligible tokens/s sample in this snapshot.".into();
    };
    let with = |l: &LaneResults| {
        format!(
            "with {} task success and {} operational failures",
            fig(l, "task_success_rate", Unit::Rate),
            fig(l, "failure_rate", Unit::Rate)
        )
    };
    format!(
        "{} had the highest median visible-answer speed at {}, {}. {} had the highest p95 speed \
         floor at {}, {}. Median speed describes a different experience from the slow tail.",
        name(m),
        fig(m, "output_tokens_per_second_p50", Unit::Tps),
        with(m),
        name(f),
        fig(f, "output_tokens_per_second_p95", Unit::Tps),
        with(f)
    )
}

/// The text of the accuracy analysis: the best task success (ties named together).
pub fn accuracy_text(s: &SnapshotResults) -> String {
    let order = ranked(s, "task_success_rate", false);
    let Some(best) = order.first().and_then(|l| get(l, "task_success_rate")) else {
        return "No provider has a task-success figure in this snapshot.".into();
    };
    let top: Vec<&LaneResults> = order
        .iter()
        .copied()
        .filter(|l| get(l, "task_success_rate") == Some(best))
        .collect();
    let list = |f: &dyn Fn(&LaneResults) -> String| {
        top.iter().map(|l| f(l)).collect::<Vec<_>>().join(", ")
    };
    let rate = fig(top[0], "task_success_rate", Unit::Rate);
    let definition = "Task success counts schema-valid, exact-correct answers across all \
        submitted requests, including timeouts, HTTP errors, malformed output, and incorrect \
        answers in the denominator.";
    if let [one] = top.as_slice() {
        return format!(
            "{} had the highest task success at {rate}, with operational failures of {} over {} \
             submitted requests; its E2E p99 was {}. {definition}",
            name(one),
            fig(one, "failure_rate", Unit::Rate),
            fig(one, "submitted_count", Unit::Count),
            fig(one, "e2e_latency_p99", Unit::Ms),
        );
    }
    format!(
        "{} tied at {rate} task success, with operational failures of {} over {} submitted \
         requests respectively; their E2E p99 values were {}. {definition}",
        list(&|l| name(l)),
        list(&|l| fig(l, "failure_rate", Unit::Rate)),
        list(&|l| fig(l, "submitted_count", Unit::Count)),
        list(&|l| fig(l, "e2e_latency_p99", Unit::Ms)),
    )
}

/// The failure classes of every lane: counts by outcome (`*_count`) and by failure kind
/// (`failure_breakdown.*`), as stored.
fn failure_table(s: &SnapshotResults) -> String {
    let classes: Vec<&str> = {
        let mut c: Vec<&str> = s
            .lanes
            .iter()
            .flat_map(|l| l.pooled.keys())
            .map(String::as_str)
            .filter(|k| k.starts_with("failure_breakdown."))
            .collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    let counts = [
        ("valid_result_count", "Correct"),
        ("incorrect_result_count", "Incorrect"),
        ("invalid_result_count", "Invalid"),
        ("failed_request_count", "Failed"),
    ];
    let mut out = String::from(
        "<div class=\"table-wrap\"><table id=\"failure-classes\"><thead><tr><th scope=\"col\">Provider</th>",
    );
    for (_, h) in counts {
        out.push_str(&format!("<th scope=\"col\">{h}</th>"));
    }
    for c in &classes {
        let short = c.trim_start_matches("failure_breakdown.");
        out.push_str(&format!(
            "<th scope=\"col\">{}</th>",
            escape(&short.replace('_', " "))
        ));
    }
    out.push_str("</tr></thead><tbody>\n");
    for lane in alphabetical(s) {
        out.push_str(&format!("<tr><th scope=\"row\">{}</th>", name(lane)));
        for metric in counts
            .iter()
            .map(|(m, _)| *m)
            .chain(classes.iter().copied())
        {
            out.push_str(&format!("<td>{}</td>", fig(lane, metric, Unit::Count)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    out
}

fn analysis_page(s: &SnapshotResults, title: &str, text: &str, body: &str) -> String {
    let mut p = Page::new(title, &format!("Analysis of run {}", s.run_id), s.simulated);
    p.push(&format!(
        "<p class=\"meta\">From run <code>{}</code> (published snapshot of {}). \
         <a href=\"{}\">Leaderboard</a>.</p>\n",
        escape(&s.run_id),
        escape(s.model_title()),
        pages::leaderboard_file(s)
    ));
    p.push(&format!("<p class=\"analysis\">{text}</p>\n"));
    p.push(body);
    p.push(&pages::definitions());
    p.push(&pages::related(s));
    p.finish(false)
}

/// The p99 tail analysis page.
pub fn latency_page(s: &SnapshotResults) -> String {
    let chart = bars(
        "latency",
        "E2E latency p50 and p99 per provider (ms, lower is better)",
        &names(s),
        &[
            series(s, "E2E p50", "e2e_latency_p50"),
            series(s, "E2E p99", "e2e_latency_p99"),
        ],
        Unit::Ms,
    );
    analysis_page(
        s,
        &format!(
            "Lowest-latency provider for {}: p99 tail analysis",
            s.model_title()
        ),
        &latency_text(s),
        &chart,
    )
}

/// The tokens-per-second page.
pub fn speed_page(s: &SnapshotResults) -> String {
    let chart = bars(
        "speed",
        "Visible-answer tokens/s: median and p95 floor per provider (higher is better)",
        &names(s),
        &[
            series(s, "Tokens/s p50", "output_tokens_per_second_p50"),
            series(s, "Tokens/s p95 floor", "output_tokens_per_second_p95"),
        ],
        Unit::Tps,
    );
    analysis_page(
        s,
        &format!("Fastest {} provider by tokens per second", s.model_title()),
        &speed_text(s),
        &chart,
    )
}

/// The accuracy page: task success with failure classes.
pub fn accuracy_page(s: &SnapshotResults) -> String {
    let chart = bars(
        "accuracy",
        "Task success and operational failures per provider (share of submitted requests)",
        &names(s),
        &[
            series(s, "Task success", "task_success_rate"),
            series(s, "Operational failures", "failure_rate"),
        ],
        Unit::Rate,
    );
    let body = format!(
        "{chart}<h2>Outcomes and failure classes</h2>\n<p>Requests by outcome and operational \
         failures by kind, per provider (counts over submitted requests).</p>\n{}",
        failure_table(s)
    );
    analysis_page(
        s,
        &format!(
            "Same model, different accuracy: {} endpoint accuracy",
            s.model_title()
        ),
        &accuracy_text(s),
        &body,
    )
}
