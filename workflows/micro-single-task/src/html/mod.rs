//! `report.html`: one self-contained page (inline CSS, charts as inline SVG drawn by `plotters`,
//! no script, no network reference) showing the summary table, latency CDFs, the tokens/s
//! distribution, task success beside operational failures, the paired win-rate matrix,
//! per-family panels and provenance.
//!
//! The page is rendered from a plain [`HtmlReportInput`] (built from the metrics, the paired
//! comparisons and the final records by [`HtmlReportInput::from_report`]) so it can be tested on
//! any data. Rendering is deterministic: same input, byte-identical page — no clock, stable
//! ordering, fixed float formatting. Every string from the run is escaped.

mod charts;
mod input;
mod sections;

use openbench_common::rundir::{self as layout, RunDirError};
use openbench_report_kit::html::plot;
/// The page shell and escaping are the report kit's (shared with `compare.html`).
pub use openbench_report_kit::html::{escape, page_end, page_start};
use std::path::{Path, PathBuf};

/// Headline figures of one provider (pooled) or one (provider, family) cell; `None` for an empty
/// population. Latencies in ms, rates in [0, 1].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// Submitted requests.
    pub submitted: u64,
    /// E2E p50.
    pub e2e_p50: Option<f64>,
    /// E2E p99.
    pub e2e_p99: Option<f64>,
    /// TTFA p50.
    pub ttfa_p50: Option<f64>,
    /// Tokens/s p50.
    pub tps_p50: Option<f64>,
    /// Tokens/s p95 floor (nearest rank at p = .05).
    pub tps_p95_floor: Option<f64>,
    /// Correct / submitted.
    pub task_success_rate: Option<f64>,
    /// Operational failures / submitted.
    pub failure_rate: Option<f64>,
}

/// Timings of one completed request: the raw samples behind the CDFs, strips and head-to-head
/// shares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Round index (pairs requests of different providers).
    pub round_index: u64,
    /// TTFA, ms.
    pub ttfa_ms: Option<f64>,
    /// E2E, ms.
    pub e2e_ms: Option<f64>,
    /// Visible-answer tokens/s.
    pub tokens_per_second: Option<f64>,
}

/// One family's figures for one provider.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyFigures {
    /// Family name.
    pub family: String,
    /// Its figures.
    pub figures: Figures,
}

/// Everything shown about one provider (lane).
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderReport {
    /// Lane label (unique key).
    pub lane: String,
    /// Name shown.
    pub display_name: String,
    /// Pooled figures.
    pub pooled: Figures,
    /// Per-family figures, in family order.
    pub families: Vec<FamilyFigures>,
    /// Completed requests' timings.
    pub samples: Vec<Sample>,
    /// Rank by pooled E2E p99 among eligible providers.
    pub rank: Option<u32>,
    /// Why the provider is not ranked.
    pub ineligibility_reasons: Vec<String>,
}

/// Round wins of one compared lane.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneWins {
    /// Lane label.
    pub lane: String,
    /// Rounds won (ties split).
    pub wins: f64,
    /// Wins / rounds with a winner.
    pub win_share: Option<f64>,
}

/// Median E2E difference of an ordered pair.
#[derive(Debug, Clone, PartialEq)]
pub struct PairMedian {
    /// Lane A.
    pub a: String,
    /// Lane B.
    pub b: String,
    /// Rounds where both had an E2E.
    pub count: u64,
    /// p50 of A − B, ms.
    pub e2e_diff_p50: Option<f64>,
}

/// The paired comparisons shown in the win-rate matrix.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PairedReport {
    /// Compared lanes (configuration-compatible).
    pub lanes: Vec<String>,
    /// Lanes left out as configuration-incompatible.
    pub excluded: Vec<String>,
    /// Rounds in which some compared lane had an E2E.
    pub rounds_with_winner: u64,
    /// Wins per lane.
    pub wins: Vec<LaneWins>,
    /// Median differences per ordered pair.
    pub pairs: Vec<PairMedian>,
}

/// What the page is rendered from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HtmlReportInput {
    /// Page title.
    pub title: String,
    /// One line under the title (run id, model, rounds).
    pub subtitle: String,
    /// Warnings shown in the header: records counted only because the user accepted them.
    pub header_notes: Vec<String>,
    /// Families in round order.
    pub families: Vec<String>,
    /// Providers, in any order (shown alphabetically by display name).
    pub providers: Vec<ProviderReport>,
    /// Paired comparisons.
    pub paired: PairedReport,
    /// Eligibility threshold: minimum task success.
    pub min_task_success_rate: f64,
    /// Eligibility threshold: maximum failure rate.
    pub max_failure_rate: f64,
    /// Provenance lines: (label, value).
    pub provenance: Vec<(String, String)>,
    /// Free notes shown under provenance (e.g. the simulator time scale).
    pub notes: Vec<String>,
    /// The simulator's time scale when the run was simulated: the summary then also shows the
    /// figures in simulated time.
    pub time_scale: Option<f64>,
    /// The run's validity section (docs/validity.md); `None` for a run before it.
    pub validity: Option<openbench_common::validity::assess::ValiditySection>,
    /// A repeated run's figures per repeat and across repeats (`plans.repeats`); `None` for a
    /// run made once.
    pub repeats: Option<openbench_task_metrics::repeats::PairedRepeats>,
}

/// Providers sorted alphabetically by display name (case-insensitive), then lane.
fn sorted_providers(input: &HtmlReportInput) -> Vec<&ProviderReport> {
    let mut v: Vec<&ProviderReport> = input.providers.iter().collect();
    v.sort_by(|a, b| {
        (a.display_name.to_lowercase(), &a.lane).cmp(&(b.display_name.to_lowercase(), &b.lane))
    });
    v
}

/// Renders the whole page.
pub fn render_html(input: &HtmlReportInput) -> String {
    let providers = sorted_providers(input);
    let palette: Vec<plot::Rgb> = (0..providers.len()).map(plot::color).collect();
    let mut out = String::with_capacity(1 << 20);
    page_start(&mut out, &input.title, &input.subtitle, "");
    // Styled inline: the stylesheet (and so every report without such a note) stays as it was.
    for note in &input.header_notes {
        out.push_str(&format!(
            "<p role=\"alert\" style=\"border-left:4px solid #b45309;background:#fef3c7;\
             padding:8px 12px\"><strong>Accepted records.</strong> {}</p>\n",
            escape(note)
        ));
    }
    if let Some(validity) = &input.validity {
        out.push_str("<section>");
        out.push_str(&openbench_common::validity::render::html(validity, escape));
        out.push_str("</section>\n");
    }
    sections::summary(&mut out, &providers, input.time_scale);
    crate::report::repeats_section::html(&mut out, input.repeats.as_ref());
    let legend = sections::legend(&providers, &palette);
    charts::latency_section(&mut out, &providers, &palette, &legend);
    charts::tokens_section(&mut out, &providers, &palette);
    charts::outcomes_section(&mut out, input, &providers, &palette);
    sections::win_matrix(&mut out, input, &providers);
    charts::family_section(&mut out, input, &providers, &palette);
    sections::provenance(&mut out, input);
    page_end(&mut out);
    out
}

/// Renders the page and writes it to `run_dir/report.html` (through a temporary file and a
/// rename); returns the path written.
pub fn write_html(run_dir: &Path, input: &HtmlReportInput) -> Result<PathBuf, RunDirError> {
    let path = layout::path(run_dir, layout::REPORT_HTML);
    layout::write_atomic(&path, render_html(input).as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests;
