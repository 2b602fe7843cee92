//! History per provider of a load benchmark: the store's load history
//! (`openbench_store::history::load_history::compute`, the rule `history --workflow load`
//! applies) — per lane the saturation points and step figures over the stored runs, and the
//! regressions it finds.

use crate::model::SnapshotResults;
use crate::page::{Page, Unit, escape, shown};
use crate::pages;
use openbench_store::history::load_history::LoadHistory;

fn value(x: Option<f64>, unit: &str) -> String {
    match unit {
        "%" => shown(x, Unit::Rate),
        _ => format!("{} {unit}", shown(x, Unit::Tps)),
    }
}

/// The load history page of the benchmark whose latest snapshot is `s`.
pub fn page(s: &SnapshotResults, h: &LoadHistory) -> String {
    let mut p = Page::new(
        &format!("{}: load history per provider", s.model_title()),
        "Saturation points and goodput over the stored load runs, with regressions",
        s.simulated,
    );
    p.para(&format!(
        "Every stored run of <code>{}</code>, oldest first. A saturation point that falls by at \
         least {}% (or is lost), or goodput at a step run in both runs down by at least {} \
         percentage points (or goodput per second by {}%), is a regression — the rule \
         <code>history --workflow load</code> applies. Unfinished runs are listed, not compared.",
        escape(&h.workflow),
        h.rule.min_relative_change_pct,
        h.rule.min_rate_change_points,
        h.rule.min_relative_change_pct
    ));
    p.push("<h2>Runs</h2>\n<ol>");
    for r in &h.runs {
        p.push(&format!(
            "<li><code>{}</code>, {}, {}</li>",
            escape(&r.run_id),
            escape(&crate::page::date(r.started_at.as_deref())),
            escape(&r.status)
        ));
    }
    p.push(&format!(
        "</ol>\n<h2>Regressions</h2>\n<p>{} regression(s).</p>\n<ul>",
        h.regressions.len()
    ));
    for r in &h.regressions {
        p.push(&format!(
            "<li class=\"regression\">#{} → #{}: {}, {}: {} → {}</li>",
            r.from + 1,
            r.to + 1,
            escape(&r.row),
            escape(&r.figure),
            value(r.a, r.unit),
            value(r.b, r.unit)
        ));
    }
    p.push(
        "</ul>\n<h2>Saturation points</h2>\n<div class=\"table-wrap\"><table><thead><tr>\
         <th scope=\"col\">Lane</th><th scope=\"col\">Kind</th><th scope=\"col\">Run</th>\
         <th scope=\"col\">Step</th><th scope=\"col\">Load</th><th scope=\"col\">Achieved/s</th>\
         </tr></thead><tbody>\n",
    );
    for sp in &h.saturation {
        p.push(&format!(
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>#{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&sp.row),
            escape(&sp.kind),
            sp.run + 1,
            escape(sp.label.as_deref().unwrap_or("none sustained")),
            shown(sp.load, Unit::Tps),
            shown(sp.achieved_per_s, Unit::Tps)
        ));
    }
    p.push(
        "</tbody></table></div>\n<h2>Steps</h2>\n<div class=\"table-wrap\"><table><thead><tr>\
         <th scope=\"col\">Lane · step</th><th scope=\"col\">Run</th><th scope=\"col\">Achieved/s</th>\
         <th scope=\"col\">TTFA p50 (ms)</th><th scope=\"col\">TTFA p99 (ms)</th>\
         <th scope=\"col\">ITL p99 (ms)</th><th scope=\"col\">Goodput</th>\
         <th scope=\"col\">Goodput/s</th></tr></thead><tbody>\n",
    );
    for st in &h.steps {
        p.push(&format!(
            "<tr><th scope=\"row\">{} · {}</th><td>#{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&st.row),
            escape(&st.label),
            st.run + 1,
            shown(Some(st.achieved_per_s), Unit::Tps),
            shown(st.ttfa_ms.0, Unit::Ms),
            shown(st.ttfa_ms.1, Unit::Ms),
            shown(st.itl_p99_ms, Unit::Ms),
            shown(Some(st.goodput_fraction), Unit::Rate),
            shown(st.goodput_per_s, Unit::Tps)
        ));
    }
    p.push("</tbody></table></div>\n");
    p.push(&pages::related(s));
    p.finish(false)
}
