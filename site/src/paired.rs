//! A paired run's comparisons as stored (`paired_wins`, `paired_pairs`: the report's
//! `artifacts/paired-comparisons.json`, METHODOLOGY §6) and their analysis page: round wins per
//! provider and the E2E differences of every ordered pair (p50, p95, p99 over the rounds both
//! answered, with count and coverage). Every number is a stored figure in a `<data>` element.
//! The run records no interval on these differences (they describe the observed distribution),
//! so none is shown; the history page carries the between-run intervals.

use crate::SiteError;
use crate::chart::{Series, bars};
use crate::leaderboard::alphabetical;
use crate::model::{Cell, SnapshotResults};
use crate::page::{Page, Unit, escape, figure, shown};
use crate::pages;
use openbench_store::backend::{Store, Value};
use openbench_store::schema::{self, PAIRED_PAIRS, PAIRED_WINS, Table};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A paired run's stored comparisons.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairedResults {
    /// Rounds in which at least one compared lane had an E2E (the win shares' denominator).
    pub rounds_with_winner: i64,
    /// Round wins per compared lane, in lane order.
    pub wins: Vec<LaneWins>,
    /// E2E differences A − B of every ordered pair of compared lanes, in key order.
    pub pairs: Vec<PairDifference>,
    /// Lanes of the run left out as configuration-incompatible (not compared).
    pub excluded_incompatible: Vec<String>,
}

/// One lane's round wins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LaneWins {
    /// Lane label.
    pub lane: String,
    /// Rounds won (a tie between k lanes gives each 1/k).
    pub wins: f64,
    /// Rounds in which this lane had an E2E.
    pub rounds_with_e2e: i64,
    /// wins ÷ rounds with a winner.
    pub win_share: Option<f64>,
}

/// E2E differences A − B over the rounds where both lanes had an E2E.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairDifference {
    /// Lane A.
    pub lane_a: String,
    /// Lane B.
    pub lane_b: String,
    /// Rounds where both had an E2E.
    pub count: i64,
    /// count ÷ the run's rounds.
    pub coverage: Option<f64>,
    /// Nearest-rank p50 of A − B, ms.
    pub e2e_diff_p50: Option<f64>,
    /// p95 of A − B, ms.
    pub e2e_diff_p95: Option<f64>,
    /// p99 of A − B, ms.
    pub e2e_diff_p99: Option<f64>,
}

/// The stored rows of `table` for the run `id`, each column by name.
fn rows(store: &mut Store, table: &Table, id: &[Value]) -> Result<Vec<Vec<Cell>>, SiteError> {
    Ok(store
        .query(&schema::select(table, true), id)?
        .iter()
        .map(|r| r.iter().map(Cell::from).collect())
        .collect())
}

fn at<'r>(table: &Table, row: &'r [Cell], name: &str) -> &'r Cell {
    table
        .columns
        .iter()
        .position(|c| c.name == name)
        .and_then(|i| row.get(i))
        .unwrap_or(&Cell::Null)
}

fn int(cell: &Cell) -> i64 {
    match cell {
        Cell::Int(i) => *i,
        _ => 0,
    }
}

fn text(cell: &Cell) -> String {
    cell.text().unwrap_or_default().to_string()
}

/// Reads run `id`'s paired comparisons; `None` when it has none (a load run, or a run stored
/// before the store kept them). `lanes` are the run's lane labels, for the excluded list.
pub fn read(
    store: &mut Store,
    id: &[Value],
    lanes: &[String],
) -> Result<Option<PairedResults>, SiteError> {
    let win_rows = rows(store, &PAIRED_WINS, id)?;
    if win_rows.is_empty() {
        return Ok(None);
    }
    let w = &PAIRED_WINS;
    let wins: Vec<LaneWins> = win_rows
        .iter()
        .map(|r| LaneWins {
            lane: text(at(w, r, "lane")),
            wins: at(w, r, "wins").real().unwrap_or(0.0),
            rounds_with_e2e: int(at(w, r, "rounds_with_e2e")),
            win_share: at(w, r, "win_share").real(),
        })
        .collect();
    let p = &PAIRED_PAIRS;
    let pairs = rows(store, p, id)?
        .iter()
        .map(|r| PairDifference {
            lane_a: text(at(p, r, "lane_a")),
            lane_b: text(at(p, r, "lane_b")),
            count: int(at(p, r, "count")),
            coverage: at(p, r, "coverage").real(),
            e2e_diff_p50: at(p, r, "e2e_diff_p50").real(),
            e2e_diff_p95: at(p, r, "e2e_diff_p95").real(),
            e2e_diff_p99: at(p, r, "e2e_diff_p99").real(),
        })
        .collect();
    Ok(Some(PairedResults {
        rounds_with_winner: int(at(w, &win_rows[0], "rounds_with_winner")),
        excluded_incompatible: lanes
            .iter()
            .filter(|l| !wins.iter().any(|w| &w.lane == *l))
            .cloned()
            .collect(),
        wins,
        pairs,
    }))
}

/// A pair's figure: a `<data>` element naming lane A (`data-lane`), lane B (`data-versus`)
/// and the metric.
fn pair_figure(p: &PairDifference, metric: &str, value: Option<f64>, unit: Unit) -> String {
    let suffix = if unit == Unit::Ms { " ms" } else { "" };
    match value {
        None => shown(None, unit),
        Some(v) => format!(
            "<data value=\"{v}\" data-lane=\"{}\" data-versus=\"{}\" data-metric=\"{metric}\">{}{suffix}</data>",
            escape(&p.lane_a),
            escape(&p.lane_b),
            shown(Some(v), unit)
        ),
    }
}

/// Display name of a lane label (the label itself when the snapshot has no such lane).
fn display<'a>(s: &'a SnapshotResults, lane: &'a str) -> &'a str {
    s.lanes
        .iter()
        .find(|l| l.lane == lane)
        .map_or(lane, |l| l.display_name.as_str())
}

/// The page's text: the lane with the largest win share, and its median E2E difference against
/// the runner-up.
pub fn text_of(s: &SnapshotResults, p: &PairedResults) -> String {
    let mut order: Vec<&LaneWins> = p.wins.iter().filter(|w| w.win_share.is_some()).collect();
    order.sort_by(|a, b| {
        let (x, y) = (b.win_share.unwrap_or(0.0), a.win_share.unwrap_or(0.0));
        x.total_cmp(&y)
            .then_with(|| display(s, &a.lane).cmp(display(s, &b.lane)))
    });
    let Some(first) = order.first() else {
        return "No round of this snapshot had a compared E2E.".into();
    };
    let share = |w: &LaneWins| figure(w.win_share, Unit::Rate, &w.lane, "win_share", "");
    let mut out = format!(
        "Per round the fastest E2E wins (exact ties split the round). {} won the largest share \
         of the {} rounds with a winner, {}",
        escape(display(s, &first.lane)),
        figure(
            Some(p.rounds_with_winner as f64),
            Unit::Count,
            &first.lane,
            "rounds_with_winner",
            ""
        ),
        share(first)
    );
    let Some(second) = order.get(1) else {
        out.push('.');
        return out;
    };
    let pair = p
        .pairs
        .iter()
        .find(|d| d.lane_a == first.lane && d.lane_b == second.lane);
    out.push_str(&format!(
        "; {} followed with {}.",
        escape(display(s, &second.lane)),
        share(second)
    ));
    if let Some(d) = pair {
        out.push_str(&format!(
            " Over the {} rounds both answered, {} minus {} had a median E2E difference of {} \
             and a p99 difference of {}: a win share says how often, the differences by how much.",
            pair_figure(d, "count", Some(d.count as f64), Unit::Count),
            escape(display(s, &first.lane)),
            escape(display(s, &second.lane)),
            pair_figure(d, "e2e_diff_p50", d.e2e_diff_p50, Unit::Ms),
            pair_figure(d, "e2e_diff_p99", d.e2e_diff_p99, Unit::Ms),
        ));
    }
    out
}

fn wins_table(s: &SnapshotResults, p: &PairedResults) -> String {
    let mut out = String::from(
        "<div class=\"table-wrap\"><table id=\"round-wins\"><thead><tr><th scope=\"col\">Provider\
         </th><th scope=\"col\">Win share</th><th scope=\"col\">Rounds with E2E</th></tr></thead>\
         <tbody>\n",
    );
    for lane in alphabetical(s) {
        let Some(w) = p.wins.iter().find(|w| w.lane == lane.lane) else {
            continue;
        };
        out.push_str(&format!(
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td></tr>\n",
            escape(&lane.display_name),
            figure(w.win_share, Unit::Rate, &w.lane, "win_share", ""),
            figure(
                Some(w.rounds_with_e2e as f64),
                Unit::Count,
                &w.lane,
                "rounds_with_e2e",
                ""
            ),
        ));
    }
    out.push_str("</tbody></table></div>\n");
    out
}

fn pairs_table(s: &SnapshotResults, p: &PairedResults) -> String {
    let mut out = String::from(
        "<div class=\"table-wrap\"><table id=\"pair-differences\"><thead><tr>\
         <th scope=\"col\">A − B</th><th scope=\"col\">Rounds</th><th scope=\"col\">Coverage</th>\
         <th scope=\"col\">E2E diff. p50 (ms)</th><th scope=\"col\">p95 (ms)</th>\
         <th scope=\"col\">p99 (ms)</th></tr></thead><tbody>\n",
    );
    let mut pairs: Vec<&PairDifference> = p.pairs.iter().collect();
    pairs.sort_by(|x, y| {
        (display(s, &x.lane_a), display(s, &x.lane_b))
            .cmp(&(display(s, &y.lane_a), display(s, &y.lane_b)))
    });
    for d in pairs {
        out.push_str(&format!(
            "<tr><th scope=\"row\">{} − {}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>\n",
            escape(display(s, &d.lane_a)),
            escape(display(s, &d.lane_b)),
            pair_figure(d, "count", Some(d.count as f64), Unit::Count),
            pair_figure(d, "coverage", d.coverage, Unit::Rate),
            pair_figure(d, "e2e_diff_p50", d.e2e_diff_p50, Unit::Ms),
            pair_figure(d, "e2e_diff_p95", d.e2e_diff_p95, Unit::Ms),
            pair_figure(d, "e2e_diff_p99", d.e2e_diff_p99, Unit::Ms),
        ));
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// The paired-comparisons page of `s` (which has `p`).
pub fn page(s: &SnapshotResults, p: &PairedResults) -> String {
    let order = alphabetical(s);
    let compared: Vec<_> = order
        .iter()
        .filter(|l| p.wins.iter().any(|w| w.lane == l.lane))
        .collect();
    let chart = bars(
        "wins",
        "Share of rounds won per provider (fastest E2E of the round; higher is more often fastest)",
        &compared
            .iter()
            .map(|l| l.display_name.clone())
            .collect::<Vec<_>>(),
        &[Series {
            name: "Win share",
            values: compared
                .iter()
                .map(|l| {
                    p.wins
                        .iter()
                        .find(|w| w.lane == l.lane)
                        .and_then(|w| w.win_share)
                })
                .collect(),
        }],
        Unit::Rate,
    );
    let mut pg = Page::new(
        &format!(
            "Paired comparisons for {}: round wins and E2E differences",
            s.model_title()
        ),
        &format!("Paired comparisons of run {}", s.run_id),
        s.simulated,
    );
    pg.push(&format!(
        "<p class=\"meta\">From run <code>{}</code> (published snapshot of {}). \
         <a href=\"{}\">Leaderboard</a>.</p>\n",
        escape(&s.run_id),
        escape(s.model_title()),
        pages::leaderboard_file(s)
    ));
    pg.push(&format!("<p class=\"analysis\">{}</p>\n", text_of(s, p)));
    pg.push(&chart);
    pg.push("<h2>Round wins</h2>\n");
    pg.push(&wins_table(s, p));
    pg.push(
        "<h2>E2E differences per pair</h2>\n<p>Row A minus B over the rounds where both had an \
         E2E (negative: A was faster), nearest-rank percentiles of the observed differences. The \
         run records no confidence interval on them; the <a href=\"#definitions\">definitions</a> \
         say how they are computed, and the history page gives 95% intervals between runs.</p>\n",
    );
    pg.push(&pairs_table(s, p));
    if !p.excluded_incompatible.is_empty() {
        let names: Vec<String> = p
            .excluded_incompatible
            .iter()
            .map(|l| escape(display(s, l)))
            .collect();
        pg.para(&format!(
            "Left out as configuration-incompatible: {}.",
            names.join(", ")
        ));
    }
    pg.push(
        "<p class=\"meta\" id=\"definitions\">Definitions: \
         <a href=\"methodology.html#6-statistics\">paired comparisons and percentiles</a>, \
         <a href=\"methodology.html#3-streams-and-timings\">E2E</a>.</p>\n",
    );
    pg.push(&pages::related(s));
    pg.finish(false)
}
