//! History per provider: every compared metric of each lane (provider × region) over the stored
//! runs of the benchmark's workflow, with the regressions the store's `history` finds — the
//! page calls `openbench_store::history::compute`, so the rule is the one `history` applies.

use crate::model::SnapshotResults;
use crate::page::{Page, Unit, escape, shown};
use crate::pages;
use openbench_store::history::{History, Step};
use openbench_task_metrics::compare::{Metric, Unit as CompareUnit};

fn unit(metric: Metric) -> Unit {
    match metric.unit() {
        CompareUnit::Ms => Unit::Ms,
        CompareUnit::TokensPerSecond => Unit::Tps,
        CompareUnit::Rate => Unit::Rate,
    }
}

/// The pooled changes of the latest compared pair with their 95% paired-bootstrap intervals
/// (`compare`'s, as `history` computed them; none below 30 rounds).
fn latest_changes(h: &History, step: &Step) -> String {
    let mut out = format!(
        "<h2>Latest change, with 95% intervals</h2>\n<p>Run #{} against run #{}, pooled over \
         families: the change B − A and its 95% paired-bootstrap interval (none where either \
         run had fewer than 30 rounds).</p>\n<div class=\"table-wrap\"><table><thead><tr>\
         <th scope=\"col\">Provider</th><th scope=\"col\">Metric</th><th scope=\"col\">A</th>\
         <th scope=\"col\">B</th><th scope=\"col\">Change</th><th scope=\"col\">95% interval</th>\
         </tr></thead><tbody>\n",
        step.to + 1,
        step.from + 1
    );
    for lane in &step.lanes {
        let Some(cell) = lane.cells.iter().find(|c| c.family == "pooled") else {
            continue;
        };
        for c in &cell.changes {
            let u = unit(c.metric);
            let interval = match (c.low, c.high) {
                (Some(lo), Some(hi)) => format!("[{}, {}]", shown(Some(lo), u), shown(Some(hi), u)),
                _ => "—".to_string(),
            };
            let flagged = h.regressions.iter().any(|r| {
                r.to == step.to
                    && r.lane == lane.display_name
                    && r.family == "pooled"
                    && r.change.metric == c.metric
            });
            out.push_str(&format!(
                "<tr{}><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td><td>{interval}</td></tr>\n",
                if flagged { " class=\"regression\"" } else { "" },
                escape(&lane.display_name),
                c.metric.label(),
                shown(c.a, u),
                shown(c.b, u),
                if flagged { "▼ " } else { "" },
                shown(c.delta, u),
            ));
        }
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// The history page of the benchmark whose latest snapshot is `s`, from `h` (the store's
/// history of `s.workflow`).
pub fn page(s: &SnapshotResults, h: &History) -> String {
    let mut p = Page::new(
        &format!("{}: history per provider", s.model_title()),
        "Every metric over the stored runs, with regressions",
        s.simulated,
    );
    let rule = &h.options.rule;
    p.para(&format!(
        "Every stored run of <code>{}</code> serving {}, oldest first. A change from one complete run to \
         the next is flagged as a regression (▼) when its 95% paired-bootstrap interval excludes \
         zero on the worse side and it reaches {}% of the earlier value (latencies, tokens/s) or \
         {} percentage points (rates) — the rule <code>history</code> applies. Unfinished runs \
         are listed, not compared.",
        escape(&h.workflow),
        escape(s.model_title()),
        rule.min_relative_change_pct,
        rule.min_rate_change_points
    ));
    p.push("<h2>Runs</h2>\n<ol>");
    for (i, r) in h.runs.iter().enumerate() {
        p.push(&format!(
            "<li id=\"run-{}\"><code>{}</code>, {}, {}</li>",
            i + 1,
            escape(&r.run_id),
            escape(&crate::page::date(r.started_at.as_deref())),
            escape(&r.status)
        ));
    }
    p.push("</ol>\n");
    p.push(&format!(
        "<h2>Regressions</h2>\n<p>{} regression(s).</p>\n<ul>",
        h.regressions.len()
    ));
    for r in &h.regressions {
        let c = &r.change;
        let u = unit(c.metric);
        p.push(&format!(
            "<li class=\"regression\">#{} → #{}: {}, {}: {} {} → {}</li>",
            r.from + 1,
            r.to + 1,
            escape(&r.lane),
            escape(&r.family),
            c.metric.label(),
            shown(c.a, u),
            shown(c.b, u)
        ));
    }
    p.push("</ul>\n");
    if let Some(step) = h.steps.last() {
        p.push(&latest_changes(h, step));
    }
    for lane in &h.lanes {
        p.push(&format!(
            "<h2 id=\"lane-{}\">{}</h2>\n<div class=\"table-wrap\"><table><thead><tr>\
             <th scope=\"col\">Run</th>",
            escape(&pages::anchor(&lane.key)),
            escape(&lane.display_name)
        ));
        for m in Metric::ALL {
            p.push(&format!("<th scope=\"col\">{}</th>", m.label()));
        }
        p.push("</tr></thead><tbody>\n");
        for point in &lane.points {
            let run = &h.runs[point.run];
            p.push(&format!(
                "<tr><th scope=\"row\"><a href=\"#run-{}\">#{}</a> {}</th>",
                point.run + 1,
                point.run + 1,
                escape(&crate::page::date(run.started_at.as_deref()))
            ));
            let pooled = point
                .cells
                .first()
                .and_then(|c| serde_json::to_value(c).ok())
                .unwrap_or_default();
            for m in Metric::ALL {
                let value = pooled.get(m.name()).and_then(serde_json::Value::as_f64);
                let regressed = h.regressions.iter().any(|r| {
                    r.to == point.run
                        && r.lane == lane.display_name
                        && r.family == "pooled"
                        && r.change.metric == m
                });
                let text = shown(value, unit(m));
                if regressed {
                    p.push(&format!(
                        "<td class=\"regression\">▼ {text}<span class=\"meta\"> (regression)</span></td>"
                    ));
                } else {
                    p.push(&format!("<td>{text}</td>"));
                }
            }
            p.push("</tr>\n");
        }
        p.push("</tbody></table></div>\n");
    }
    p.push(&pages::definitions());
    p.push(&pages::related(s));
    p.finish(false)
}
