//! The "Paired analysis" section of `report.md`: round wins and the median E2E difference of
//! every ordered pair. Up to [`MATRIX_MAX_LANES`] compared lanes it shows every lane in report
//! order; above that it shows the lanes at both ends of the win-share ranking
//! ([`shown_lanes`]) and points to `paired-comparisons.json` for the rest.

use super::format::{MISSING, grouped, one, pct};
use super::markdown::table;
use crate::metrics::RunMetrics;
use crate::paired::{MATRIX_MAX_LANES, PairedComparisons, RANKED_EACH_END, shown_lanes};
use std::collections::HashMap;
use std::fmt::Write;

/// Appends the section to `out`.
pub(super) fn render(out: &mut String, paired: &PairedComparisons, m: &RunMetrics) {
    out.push_str("## Paired analysis\n\n");
    let _ = writeln!(
        out,
        "Per round the fastest E2E wins; exact ties split the round. {} of {} rounds had at least \
         one compared E2E.\n",
        paired.rounds_with_winner, paired.rounds
    );
    let wins: Vec<f64> = paired.wins.iter().map(|w| w.wins).collect();
    let shown = shown_lanes(&wins);
    let summarised = paired.summarised();
    if summarised {
        let _ = writeln!(
            out,
            "{} lanes were compared: more than {MATRIX_MAX_LANES}, so these tables show the \
             {RANKED_EACH_END} with the most round wins and the {RANKED_EACH_END} with the fewest, \
             ranked. Every lane's wins and every ordered pair's differences (p50, p95, p99) are \
             in `artifacts/paired-comparisons.json`.\n",
            paired.lanes.len()
        );
    }
    let rows: Vec<Vec<String>> = shown
        .iter()
        .filter_map(|i| paired.wins.get(*i))
        .map(|w| {
            vec![
                w.display_name.clone(),
                grouped(w.wins, 2),
                pct(w.win_share),
                w.rounds_with_e2e.to_string(),
            ]
        })
        .collect();
    table(
        out,
        &["Provider", "Wins", "Win share", "Rounds with E2E"],
        &rows,
    );
    if paired.lanes.len() > 1 {
        out.push_str(
            "Median E2E difference, row − column (ms; negative: the row was faster), over rounds \
             where both had an E2E:\n\n",
        );
        let display: HashMap<&str, &str> = m
            .providers
            .iter()
            .map(|p| (p.lane.as_str(), p.display_name.as_str()))
            .collect();
        let names: Vec<String> = shown
            .iter()
            .map(|i| {
                let lane = paired.lanes[*i].as_str();
                display.get(lane).copied().unwrap_or(lane).to_string()
            })
            .collect();
        let mut headers = vec!["Row − column"];
        headers.extend(names.iter().map(String::as_str));
        let rows: Vec<Vec<String>> = shown
            .iter()
            .enumerate()
            .map(|(r, a)| {
                let mut row = vec![names[r].clone()];
                row.extend(shown.iter().map(|b| {
                    if a == b {
                        MISSING.to_string()
                    } else {
                        one(paired.pair(*a, *b).and_then(|p| p.e2e_diff_p50))
                    }
                }));
                row
            })
            .collect();
        table(out, &headers, &rows);
    }
    if !paired.excluded_incompatible.is_empty() {
        let names: Vec<String> = paired
            .excluded_incompatible
            .iter()
            .map(|lane| {
                m.providers
                    .iter()
                    .find(|p| &p.lane == lane)
                    .map_or(lane.clone(), |p| p.display_name.clone())
            })
            .collect();
        let _ = writeln!(
            out,
            "Left out as configuration-incompatible: {}.\n",
            names.join(", ")
        );
    }
}
