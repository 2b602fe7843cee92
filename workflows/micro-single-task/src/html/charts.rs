//! The page's chart sections: latency CDFs (log x), the tokens/s strip, task success beside
//! operational failures, and per-family latency bars. The charts are the report kit's; this
//! picks each provider's figures for them and writes the notes around them.

use super::{HtmlReportInput, ProviderReport, escape};
use crate::report::format::{one, pct};
use openbench_report_kit::html::charts::{
    StripMark, StripRow, bar_chart, bar_whisker_chart, cdf_chart, strip_chart,
};
use openbench_report_kit::html::plot::{
    FAILURE, INK, MAX_SERIES_POINTS, Rgb, SUCCESS, short, sorted,
};
use std::fmt::Write;

/// Section: TTFA and E2E CDFs side by side.
pub(super) fn latency_section(
    out: &mut String,
    providers: &[&ProviderReport],
    palette: &[Rgb],
    legend: &str,
) {
    out.push_str("<section id=\"latency\">\n<h2>Latency distribution</h2>\n");
    out.push_str(
        "<p class=\"note\">Empirical CDFs of completed requests: the curve's height at x is the \
         share of requests that finished within x ms. Further left is faster; a long right tail \
         is the p99 story. Failed requests are not in these populations.</p>\n",
    );
    out.push_str(legend);
    out.push_str("<div class=\"grid two\">\n");
    for (title, pick) in [
        (
            "TTFA",
            (|s: &super::Sample| s.ttfa_ms) as fn(&super::Sample) -> Option<f64>,
        ),
        ("E2E", |s: &super::Sample| s.e2e_ms),
    ] {
        let series: Vec<(Rgb, Vec<f64>)> = providers
            .iter()
            .zip(palette)
            .map(|(p, c)| (*c, sorted(p.samples.iter().filter_map(pick))))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        let _ = write!(
            out,
            "<figure><figcaption>{} latency CDF</figcaption>\n{}</figure>\n",
            title,
            cdf_chart(title, &series)
        );
    }
    out.push_str("</div>\n</section>\n");
}

/// Section: tokens/s strip per provider, p50 and p95 floor marked.
pub(super) fn tokens_section(out: &mut String, providers: &[&ProviderReport], palette: &[Rgb]) {
    out.push_str("<section id=\"tokens\">\n<h2>Visible-answer tokens/s</h2>\n");
    out.push_str(
        "<p class=\"note\">One dot per eligible completed response. \
         <span class=\"mark p50\"></span> p50 (median) &nbsp; \
         <span class=\"mark floor\"></span> p95 floor: at least 95% of responses were at least \
         this fast. Further right is faster; the axis is logarithmic.</p>\n",
    );
    let rows: Vec<StripRow> = providers
        .iter()
        .zip(palette)
        .map(|(p, c)| {
            let marks = [
                p.pooled.tps_p50.map(|at| StripMark {
                    at,
                    color: INK,
                    width: 4,
                }),
                p.pooled.tps_p95_floor.map(|at| StripMark {
                    at,
                    color: FAILURE,
                    width: 3,
                }),
            ];
            StripRow {
                name: short(&p.display_name, 20),
                color: *c,
                values: sorted(p.samples.iter().filter_map(|s| s.tokens_per_second)),
                marks: marks.into_iter().flatten().collect(),
            }
        })
        .collect();
    let Some(chart) = strip_chart(
        "tokens per second by provider",
        "visible-answer tokens/s (log scale)",
        &rows,
    ) else {
        out.push_str("<p class=\"empty\">No tokens/s population.</p>\n</section>\n");
        return;
    };
    out.push_str(&chart);
    if rows.iter().any(|r| r.values.len() > MAX_SERIES_POINTS) {
        let _ = writeln!(
            out,
            "<p class=\"note\">A provider with more than {MAX_SERIES_POINTS} responses is drawn \
             as {MAX_SERIES_POINTS} evenly spaced order statistics of its rates (first and last \
             included); the CDFs above are thinned the same way.</p>"
        );
    }
    out.push_str("</section>\n");
}

/// Section: task success beside operational failures.
pub(super) fn outcomes_section(
    out: &mut String,
    input: &HtmlReportInput,
    providers: &[&ProviderReport],
    _palette: &[Rgb],
) {
    out.push_str("<section id=\"outcomes\">\n<h2>Task success and operational failures</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">Task success = exactly correct answers / submitted requests. \
         Operational failures = timeouts, HTTP, transport and stream errors / submitted. Dashed \
         lines: the ranking thresholds ({} success, {} failures).</p>",
        pct(Some(input.min_task_success_rate)),
        pct(Some(input.max_failure_rate))
    );
    let names: Vec<String> = providers
        .iter()
        .map(|p| short(&p.display_name, 18))
        .collect();
    let success: Vec<Option<f64>> = providers
        .iter()
        .map(|p| p.pooled.task_success_rate)
        .collect();
    let failures: Vec<Option<f64>> = providers.iter().map(|p| p.pooled.failure_rate).collect();
    let worst = failures.iter().flatten().copied().fold(0.0f64, f64::max);
    let f_max = (worst * 100.0 * 1.3)
        .max(input.max_failure_rate * 100.0 * 2.0)
        .max(2.0);
    let _ = write!(
        out,
        "<div class=\"grid two\">\n<figure><figcaption>Task success</figcaption>\n{}</figure>\n\
         <figure><figcaption>Operational failures</figcaption>\n{}</figure>\n</div>\n",
        bar_chart(
            "task success, % of submitted",
            &names,
            &success,
            100.0,
            input.min_task_success_rate,
            SUCCESS
        ),
        bar_chart(
            "operational failures, % of submitted",
            &names,
            &failures,
            f_max,
            input.max_failure_rate,
            FAILURE
        )
    );
    out.push_str("</section>\n");
}

/// Section: one panel per family (chart plus a small table).
pub(super) fn family_section(
    out: &mut String,
    input: &HtmlReportInput,
    providers: &[&ProviderReport],
    palette: &[Rgb],
) {
    out.push_str("<section id=\"families\">\n<h2>Per task family</h2>\n");
    out.push_str(
        "<p class=\"note\">Per family: E2E latency p50 (bar) and p99 (whisker) on a log scale, \
         and task success. Same colours as above.</p>\n<div class=\"grid three\">\n",
    );
    let all: Vec<f64> = providers
        .iter()
        .flat_map(|p| p.families.iter())
        .flat_map(|f| [f.figures.e2e_p50, f.figures.e2e_p99])
        .flatten()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let lo = all.iter().copied().min_by(f64::total_cmp).map(|v| v / 1.5);
    let hi = all.iter().copied().max_by(f64::total_cmp).map(|v| v * 1.3);
    for family in &input.families {
        let _ = writeln!(out, "<div class=\"panel\"><h3>{}</h3>", escape(family));
        let figures = |p: &ProviderReport| {
            p.families
                .iter()
                .find(|f| &f.family == family)
                .map(|f| f.figures.clone())
                .unwrap_or_default()
        };
        if let (Some(lo), Some(hi)) = (lo, hi) {
            let rows: Vec<(String, Rgb, Option<f64>, Option<f64>)> = providers
                .iter()
                .zip(palette)
                .map(|(p, c)| {
                    let f = figures(p);
                    (short(&p.display_name, 13), *c, f.e2e_p50, f.e2e_p99)
                })
                .collect();
            out.push_str(&bar_whisker_chart(
                family,
                "E2E ms: bar p50, whisker p99",
                &rows,
                lo,
                hi.max(lo * 10.0),
            ));
        }
        out.push_str(
            "<table class=\"compact\"><thead><tr><th>Provider</th><th>E2E p50</th>\
             <th>E2E p99</th><th>Success</th></tr></thead><tbody>\n",
        );
        for p in providers {
            let f = figures(p);
            let _ = writeln!(
                out,
                "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&p.display_name),
                one(f.e2e_p50),
                one(f.e2e_p99),
                pct(f.task_success_rate)
            );
        }
        out.push_str("</tbody></table></div>\n");
    }
    out.push_str("</div>\n</section>\n");
}
