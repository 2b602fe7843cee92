//! A load snapshot's page: the saturation points, and per step and lane the goodput and the
//! TTFA and ITL percentiles against the offered load, every figure the stored one.

use crate::chart::{Series, bars};
use crate::model::{Cell, SnapshotResults};
use crate::page::{Page, Unit, escape, figure, shown};
use crate::pages;
use std::collections::BTreeMap;

type Row = BTreeMap<String, Cell>;

fn text<'a>(row: &'a Row, k: &str) -> &'a str {
    row.get(k).and_then(Cell::text).unwrap_or("")
}

fn real(row: &Row, k: &str) -> Option<f64> {
    row.get(k).and_then(Cell::real)
}

/// The load page of `s` (a load snapshot).
pub fn page(s: &SnapshotResults) -> String {
    let mut p = Page::new(
        &format!("{}: load results", s.model_title()),
        &format!("Load results of run {}", s.run_id),
        s.simulated,
    );
    p.push(&format!(
        "<p class=\"meta\">From run <code>{}</code>. <a href=\"{}\">Leaderboard</a>.</p>\n",
        escape(&s.run_id),
        pages::leaderboard_file(s)
    ));
    let Some(load) = &s.load else {
        return p.finish(false);
    };
    p.push("<h2>Saturation points</h2>\n<ul>");
    for r in &load.saturation {
        let row = text(r, "row_name");
        let point = match text(r, "label") {
            "" => "no step of this kind was sustained".to_string(),
            label => format!(
                "{} (load {}, achieved {}/s)",
                escape(label),
                figure(real(r, "load"), Unit::Tps, row, "load", ""),
                figure(
                    real(r, "achieved_per_s"),
                    Unit::Tps,
                    row,
                    "achieved_per_s",
                    ""
                )
            ),
        };
        p.push(&format!(
            "<li>{} ({}): {point}</li>",
            escape(row),
            escape(text(r, "kind"))
        ));
    }
    p.push("</ul>\n");
    let lanes: Vec<&Row> = load
        .steps
        .iter()
        .filter(|r| text(r, "row_kind") == "lane")
        .collect();
    let names: Vec<String> = lanes
        .iter()
        .map(|r| format!("{} · {}", text(r, "row_name"), text(r, "label")))
        .collect();
    p.push(&bars(
        "goodput",
        "Goodput per step and lane (share of measured requests within the SLO)",
        &names,
        &[Series {
            name: "Goodput",
            values: lanes.iter().map(|r| real(r, "goodput_fraction")).collect(),
        }],
        Unit::Rate,
    ));
    for (id, title, a, b) in [
        (
            "ttfa",
            "TTFA p50 and p99 per step and lane (ms)",
            "ttfa_p50_ms",
            "ttfa_p99_ms",
        ),
        (
            "itl",
            "Inter-token latency p50 and p99 per step and lane (ms)",
            "itl_p50_ms",
            "itl_p99_ms",
        ),
    ] {
        p.push(&bars(
            id,
            title,
            &names,
            &[
                Series {
                    name: "p50",
                    values: lanes.iter().map(|r| real(r, a)).collect(),
                },
                Series {
                    name: "p99",
                    values: lanes.iter().map(|r| real(r, b)).collect(),
                },
            ],
            Unit::Ms,
        ));
    }
    let cols = [
        ("load", "Load", Unit::Tps),
        ("achieved_per_s", "Achieved/s", Unit::Tps),
        ("ttfa_p50_ms", "TTFA p50 (ms)", Unit::Ms),
        ("ttfa_p99_ms", "TTFA p99 (ms)", Unit::Ms),
        ("itl_p50_ms", "ITL p50 (ms)", Unit::Ms),
        ("itl_p99_ms", "ITL p99 (ms)", Unit::Ms),
        ("goodput_fraction", "Goodput", Unit::Rate),
        ("goodput_per_s", "Goodput/s", Unit::Tps),
        ("sustained", "Sustained", Unit::Count),
    ];
    p.push(
        "<h2>Steps</h2>\n<div class=\"table-wrap\"><table><thead><tr>\
         <th scope=\"col\">Lane · step</th>",
    );
    for (_, h, _) in cols {
        p.push(&format!("<th scope=\"col\">{h}</th>"));
    }
    p.push("</tr></thead><tbody>\n");
    for (r, name) in lanes.iter().zip(&names) {
        p.push(&format!("<tr><th scope=\"row\">{}</th>", escape(name)));
        let step = real(r, "step").unwrap_or(-1.0);
        for (k, _, u) in cols {
            let cell = match real(r, k) {
                Some(v) => format!(
                    "<data value=\"{v}\" data-lane=\"{}\" data-step=\"{step}\" \
                     data-metric=\"{k}\">{}</data>",
                    escape(text(r, "row_name")),
                    shown(Some(v), u)
                ),
                None => shown(None, u),
            };
            p.push(&format!("<td>{cell}</td>"));
        }
        p.push("</tr>\n");
    }
    p.push("</tbody></table></div>\n");
    p.push(&pages::related(s));
    p.finish(false)
}
