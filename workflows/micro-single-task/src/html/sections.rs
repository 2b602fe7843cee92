//! The page's HTML (non-chart) sections: summary table, legend, win-rate matrix, provenance.

use super::plot::Rgb;
use super::{HtmlReportInput, LaneWins, ProviderReport, escape};
use crate::paired::{MATRIX_MAX_LANES, RANKED_EACH_END, shown_lanes};
use crate::report::format::{MISSING, one, pct};
use crate::report::markdown::SUMMARY_HEADERS;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;

/// The summary table (the seed's columns), providers alphabetical, then the ranking. A simulated
/// run also gets the table in simulated time (ms ÷ scale, tokens/s × scale).
pub(super) fn summary(out: &mut String, providers: &[&ProviderReport], time_scale: Option<f64>) {
    out.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
    summary_table(out, providers, 1.0);
    if let Some(scale) = time_scale {
        let _ = write!(
            out,
            "<h3>In simulated time</h3>\n<p class=\"note\">The same figures with milliseconds \
             divided by the simulator's time scale ({scale}) and tokens/s multiplied by it, \
             comparable with the simulator's profiles.</p>\n"
        );
        summary_table(out, providers, scale);
    }
    summary_notes(out, providers);
}

/// One summary table; `scale` 1.0 shows the figures as measured.
fn summary_table(out: &mut String, providers: &[&ProviderReport], scale: f64) {
    let ms = |v: Option<f64>| one(v.map(|v| v / scale));
    let rate = |v: Option<f64>| one(v.map(|v| v * scale));
    out.push_str("<table class=\"summary\">\n<thead><tr>");
    for h in SUMMARY_HEADERS {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for p in providers {
        let f = &p.pooled;
        let cells = [
            ms(f.e2e_p50),
            ms(f.e2e_p99),
            ms(f.ttfa_p50),
            rate(f.tps_p50),
            rate(f.tps_p95_floor),
            pct(f.task_success_rate),
            pct(f.failure_rate),
        ];
        let _ = write!(
            out,
            "<tr><th scope=\"row\">{}</th>",
            escape(&p.display_name)
        );
        for c in cells {
            let _ = write!(out, "<td>{}</td>", escape(&c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// The reading notes and the ranking under the summary.
fn summary_notes(out: &mut String, providers: &[&ProviderReport]) {
    out.push_str(
        "<p class=\"note\">Providers are alphabetical; no single metric determines an overall \
         winner. Lower latency is better; higher tokens/s and task success are better. The \
         tokens/s p95 floor is the speed at least 95% of eligible responses reached. Failed \
         requests are excluded from latency but stay in the task-success denominator. \
         Percentiles are nearest-rank and describe the observed distribution, not confidence \
         intervals.</p>\n",
    );
    let mut ranked: Vec<&&ProviderReport> = providers.iter().filter(|p| p.rank.is_some()).collect();
    ranked.sort_by_key(|p| p.rank);
    out.push_str("<p class=\"note\"><strong>Ranked by pooled E2E p99 (eligible only):</strong> ");
    if ranked.is_empty() {
        out.push_str("no provider is eligible.");
    }
    let items: Vec<String> = ranked
        .iter()
        .map(|p| {
            format!(
                "{}. {} ({} ms)",
                p.rank.unwrap_or(0),
                escape(&p.display_name),
                one(p.pooled.e2e_p99)
            )
        })
        .collect();
    out.push_str(&items.join(" · "));
    out.push_str("</p>\n");
    let unranked: Vec<&&ProviderReport> = providers
        .iter()
        .filter(|p| p.rank.is_none() && !p.ineligibility_reasons.is_empty())
        .collect();
    if !unranked.is_empty() {
        out.push_str("<details class=\"note\"><summary>Not ranked (");
        let _ = write!(out, "{}", unranked.len());
        out.push_str(")</summary><ul>\n");
        for p in unranked {
            let _ = writeln!(
                out,
                "<li><strong>{}</strong>: {}</li>",
                escape(&p.display_name),
                escape(&p.ineligibility_reasons.join("; "))
            );
        }
        out.push_str("</ul></details>\n");
    }
    out.push_str("</section>\n");
}

/// The colour legend shared by the per-provider charts.
pub(super) fn legend(providers: &[&ProviderReport], palette: &[Rgb]) -> String {
    openbench_report_kit::html::legend(
        providers
            .iter()
            .zip(palette)
            .map(|(p, c)| (p.display_name.as_str(), *c)),
    )
}

/// Share of shared rounds in which `a` had the lower E2E (ties count half), and the round count.
fn head_to_head(a: &BTreeMap<u64, f64>, b: &BTreeMap<u64, f64>) -> (Option<f64>, u64) {
    let mut n = 0u64;
    let mut score = 0.0;
    for (round, ea) in a {
        let Some(eb) = b.get(round) else { continue };
        n += 1;
        if ea < eb {
            score += 1.0;
        } else if ea == eb {
            score += 0.5;
        }
    }
    ((n > 0).then(|| score / n as f64), n)
}

/// Background of a win-share cell: red below one half, green above, white at one half.
fn heat(share: f64) -> (String, &'static str) {
    let t = ((share - 0.5) * 2.0).clamp(-1.0, 1.0);
    let (target, k) = if t >= 0.0 {
        ((26.0, 152.0, 80.0), t)
    } else {
        ((215.0, 48.0, 39.0), -t)
    };
    let mix = |to: f64| (255.0 + (to - 255.0) * k * 0.85).round() as u8;
    let bg = format!(
        "#{:02x}{:02x}{:02x}",
        mix(target.0),
        mix(target.1),
        mix(target.2)
    );
    let fg = if k > 0.55 { "#ffffff" } else { "#1b1f24" };
    (bg, fg)
}

/// The paired win-rate matrix: cell (row, column) = share of shared rounds where the row's E2E
/// beat the column's; the last column is the row's share of all round wins. Above
/// [`MATRIX_MAX_LANES`] compared providers it shows the two ends of the round-wins ranking
/// ([`shown_lanes`]), ranked, so the page stays readable at a thousand lanes.
pub(super) fn win_matrix(out: &mut String, input: &HtmlReportInput, providers: &[&ProviderReport]) {
    out.push_str("<section id=\"paired\">\n<h2>Paired win-rate matrix</h2>\n");
    let lane_wins: HashMap<&str, &LaneWins> = input
        .paired
        .wins
        .iter()
        .map(|w| (w.lane.as_str(), w))
        .collect();
    let compared_lanes: HashSet<&str> = input.paired.lanes.iter().map(String::as_str).collect();
    let compared: Vec<&&ProviderReport> = providers
        .iter()
        .filter(|p| compared_lanes.contains(p.lane.as_str()))
        .collect();
    let _ = writeln!(
        out,
        "<p class=\"note\">Each cell: share of the rounds in which both providers returned an \
         answer where the <em>row</em> provider's E2E latency was lower than the <em>column</em> \
         provider's (exact ties count half). Hover a cell for the round count and the median E2E \
         difference. <em>Round wins</em>: share of the {} rounds with a winner in which the row \
         was fastest of all (ties split).</p>",
        input.paired.rounds_with_winner
    );
    let wins: Vec<f64> = compared
        .iter()
        .map(|p| lane_wins.get(p.lane.as_str()).map_or(0.0, |w| w.wins))
        .collect();
    let compared: Vec<&&ProviderReport> = shown_lanes(&wins)
        .into_iter()
        .map(|i| compared[i])
        .collect();
    if wins.len() > MATRIX_MAX_LANES {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} providers were compared: more than {MATRIX_MAX_LANES}, so the \
             matrix shows the {RANKED_EACH_END} with the most round wins and the \
             {RANKED_EACH_END} with the fewest, ranked. Every pair is in \
             <code>artifacts/paired-comparisons.json</code>.</p>",
            wins.len()
        );
    }
    if compared.len() < 2 {
        out.push_str("<p class=\"empty\">Fewer than two comparable providers.</p>\n");
    } else {
        let shown: HashSet<&str> = compared.iter().map(|p| p.lane.as_str()).collect();
        let medians: HashMap<(&str, &str), Option<f64>> = input
            .paired
            .pairs
            .iter()
            .filter(|d| shown.contains(d.a.as_str()) && shown.contains(d.b.as_str()))
            .map(|d| ((d.a.as_str(), d.b.as_str()), d.e2e_diff_p50))
            .collect();
        let e2e: Vec<BTreeMap<u64, f64>> = compared
            .iter()
            .map(|p| {
                p.samples
                    .iter()
                    .filter_map(|s| Some((s.round_index, s.e2e_ms.filter(|v| v.is_finite())?)))
                    .collect()
            })
            .collect();
        out.push_str(
            "<div class=\"scroll\"><table class=\"matrix\">\n<thead><tr><th>row beat column →</th>",
        );
        for p in &compared {
            let _ = write!(out, "<th>{}</th>", escape(&p.display_name));
        }
        out.push_str("<th>Round wins</th></tr></thead>\n<tbody>\n");
        for (i, row) in compared.iter().enumerate() {
            let _ = write!(
                out,
                "<tr><th scope=\"row\">{}</th>",
                escape(&row.display_name)
            );
            for (j, col) in compared.iter().enumerate() {
                if i == j {
                    out.push_str("<td class=\"diag\">·</td>");
                    continue;
                }
                let (share, n) = head_to_head(&e2e[i], &e2e[j]);
                let median = medians
                    .get(&(row.lane.as_str(), col.lane.as_str()))
                    .copied()
                    .flatten();
                let tip = format!(
                    "{} vs {}: {} rounds, median E2E difference {} ms",
                    row.display_name,
                    col.display_name,
                    n,
                    one(median)
                );
                match share {
                    Some(s) => {
                        let (bg, fg) = heat(s);
                        let _ = write!(
                            out,
                            "<td style=\"background:{bg};color:{fg}\" title=\"{}\">{:.0}%</td>",
                            escape(&tip),
                            s * 100.0
                        );
                    }
                    None => {
                        let _ = write!(out, "<td title=\"{}\">{MISSING}</td>", escape(&tip));
                    }
                }
            }
            let share = lane_wins.get(row.lane.as_str()).and_then(|w| w.win_share);
            let _ = writeln!(out, "<td class=\"wins\">{}</td></tr>", pct(share));
        }
        out.push_str("</tbody>\n</table></div>\n");
    }
    if !input.paired.excluded.is_empty() {
        let names: Vec<String> = input.paired.excluded.iter().map(|l| escape(l)).collect();
        let _ = writeln!(
            out,
            "<p class=\"note\">Left out as configuration-incompatible: {}.</p>",
            names.join(", ")
        );
    }
    out.push_str("</section>\n");
}

/// Provenance: lock hashes, period, tokenizer, notes.
pub(super) fn provenance(out: &mut String, input: &HtmlReportInput) {
    out.push_str("<section id=\"provenance\">\n<h2>Provenance</h2>\n<dl class=\"prov\">\n");
    for (label, value) in &input.provenance {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", escape(label), escape(value));
    }
    out.push_str("</dl>\n");
    for note in &input.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    out.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_to_head_counts_shared_rounds_and_splits_ties() {
        let a: BTreeMap<u64, f64> = [(0, 10.0), (1, 20.0), (2, 5.0), (3, 7.0)].into();
        let b: BTreeMap<u64, f64> = [(0, 12.0), (1, 15.0), (2, 5.0)].into();
        // Round 0: a wins; 1: b wins; 2: tie (half); 3: b has no E2E.
        assert_eq!(head_to_head(&a, &b), (Some(0.5), 3));
        let (share, n) = head_to_head(&a, &BTreeMap::new());
        assert_eq!((share, n), (None, 0));
    }

    #[test]
    fn heat_is_white_at_one_half() {
        assert_eq!(heat(0.5), ("#ffffff".to_string(), "#1b1f24"));
        assert_eq!(heat(1.0).1, "#ffffff");
        assert_eq!(heat(0.0).0, "#dd4f47");
    }
}
