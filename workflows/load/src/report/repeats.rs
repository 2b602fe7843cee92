//! A repeated sweep's figures across its repeats (`load.repeats`, docs/load.md, "Repeats"):
//! per written step and row (lane, provider over its regions, pooled), each figure of every
//! repeat as that repeat's step reported it, and their mean with the 95% Student t interval
//! (`openbench_report_kit::repeats`: a run holds a handful of repeats, too few for a bootstrap).

use super::compute::{LoadMetrics, Row, StepView};
use super::markdown::rows;
use super::tables::Table;
use openbench_report_kit::format::{MISSING, grouped, pct};
use openbench_report_kit::repeats::{RepeatInterval, cells, repeat_interval};
use serde::Serialize;

/// A figure reported across repeats (serialized as its [`RepeatFigure::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RepeatFigure {
    /// TTFA p50, ms.
    #[serde(rename = "ttfa_p50_ms")]
    TtfaP50,
    /// TTFA p99, ms.
    #[serde(rename = "ttfa_p99_ms")]
    TtfaP99,
    /// E2E p50, ms.
    #[serde(rename = "e2e_p50_ms")]
    E2eP50,
    /// E2E p99, ms.
    #[serde(rename = "e2e_p99_ms")]
    E2eP99,
    /// Requests completed in the window per second.
    #[serde(rename = "request_throughput_per_s")]
    RequestThroughput,
    /// o200k output tokens per second.
    #[serde(rename = "output_tokens_per_s")]
    OutputTokensPerS,
    /// Completed ÷ measured requests.
    #[serde(rename = "success")]
    Success,
}

impl RepeatFigure {
    /// Every figure, in table order.
    pub const ALL: [RepeatFigure; 7] = [
        RepeatFigure::TtfaP50,
        RepeatFigure::TtfaP99,
        RepeatFigure::E2eP50,
        RepeatFigure::E2eP99,
        RepeatFigure::RequestThroughput,
        RepeatFigure::OutputTokensPerS,
        RepeatFigure::Success,
    ];

    /// The name in tables, `load-metrics.json` and the store (`ttfa_p50_ms`).
    pub fn name(self) -> &'static str {
        match self {
            RepeatFigure::TtfaP50 => "ttfa_p50_ms",
            RepeatFigure::TtfaP99 => "ttfa_p99_ms",
            RepeatFigure::E2eP50 => "e2e_p50_ms",
            RepeatFigure::E2eP99 => "e2e_p99_ms",
            RepeatFigure::RequestThroughput => "request_throughput_per_s",
            RepeatFigure::OutputTokensPerS => "output_tokens_per_s",
            RepeatFigure::Success => "success",
        }
    }

    /// The figure as one repeat's step reported it for a row.
    pub fn of_row(self, row: &Row) -> Option<f64> {
        let m = &row.metrics;
        match self {
            RepeatFigure::TtfaP50 => m.ttfa_ms.p50,
            RepeatFigure::TtfaP99 => m.ttfa_ms.p99,
            RepeatFigure::E2eP50 => m.e2e_ms.p50,
            RepeatFigure::E2eP99 => m.e2e_ms.p99,
            RepeatFigure::RequestThroughput => m.request_throughput_per_s,
            RepeatFigure::OutputTokensPerS => m.output_tokens_per_s,
            RepeatFigure::Success => {
                (m.measured > 0).then(|| m.completed as f64 / m.measured as f64)
            }
        }
    }
}

/// One figure of one row over the repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatValues {
    /// Which figure.
    pub figure: RepeatFigure,
    /// Each repeat's value, in repeat order (`None`: that repeat had no value).
    pub per_repeat: Vec<Option<f64>>,
    /// Mean and 95% t interval over the repeats that had a value; `None` under two.
    pub across: Option<RepeatInterval>,
}

/// One row (lane, provider or `pooled`) of a repeated step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatRow {
    /// Lane label, provider key, or `pooled`.
    pub name: String,
    /// Every figure, in [`RepeatFigure::ALL`] order.
    pub figures: Vec<RepeatValues>,
}

/// A written step run several times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatedStep {
    /// Its position in `load.steps`.
    pub step: usize,
    /// Its load label.
    pub label: String,
    /// The run's step (phase) index of each repeat that ran, in repeat order.
    pub phases: Vec<usize>,
    /// Rows in the report's order.
    pub rows: Vec<RepeatRow>,
}

impl RepeatedStep {
    /// The row named `name`.
    pub fn row(&self, name: &str) -> Option<&RepeatRow> {
        self.rows.iter().find(|r| r.name == name)
    }
}

impl RepeatRow {
    /// The values of `figure`.
    pub fn figure(&self, figure: RepeatFigure) -> Option<&RepeatValues> {
        self.figures.iter().find(|f| f.figure == figure)
    }
}

/// The repeated steps of `steps` (empty for a run made once), written steps in order.
pub fn repeated_steps(steps: &[StepView]) -> Vec<RepeatedStep> {
    let mut written: Vec<usize> = steps
        .iter()
        .filter_map(|s| s.repeat.map(|r| r.step))
        .collect();
    written.sort_unstable();
    written.dedup();
    written
        .into_iter()
        .map(|w| {
            let mut mine: Vec<&StepView> = steps
                .iter()
                .filter(|s| s.repeat.is_some_and(|r| r.step == w))
                .collect();
            mine.sort_by_key(|s| s.repeat.map_or(0, |r| r.repeat));
            let names: Vec<String> = mine
                .first()
                .map(|s| rows(s).map(|r| r.name.clone()).collect())
                .unwrap_or_default();
            let rows = names
                .into_iter()
                .map(|name| {
                    let figures = RepeatFigure::ALL
                        .iter()
                        .map(|&figure| {
                            let per_repeat: Vec<Option<f64>> = mine
                                .iter()
                                .map(|s| {
                                    rows(s)
                                        .find(|r| r.name == name)
                                        .and_then(|r| figure.of_row(r))
                                })
                                .collect();
                            let had: Vec<f64> = per_repeat.iter().flatten().copied().collect();
                            RepeatValues {
                                figure,
                                per_repeat,
                                across: repeat_interval(&had),
                            }
                        })
                        .collect();
                    RepeatRow { name, figures }
                })
                .collect();
            RepeatedStep {
                step: w,
                label: mine.first().map(|s| s.label.clone()).unwrap_or_default(),
                phases: mine.iter().map(|s| s.index).collect(),
                rows,
            }
        })
        .collect()
}

/// A figure's value as the table prints it (a fraction as a percentage).
fn cell(figure: RepeatFigure, v: Option<f64>) -> String {
    match figure {
        RepeatFigure::Success => pct(v),
        _ => v.map_or(MISSING.to_string(), |x| grouped(x, 1)),
    }
}

/// The "Repeats" table: one line per written step × row × figure, each repeat's value, then
/// the mean and its 95% t interval; `None` for a run made once.
pub fn table(m: &LoadMetrics) -> Option<Table> {
    let width = m.repeats.iter().map(|s| s.phases.len()).max()?;
    let mut headers = vec!["Step".to_string(), "Row".into(), "Figure".into()];
    headers.extend((1..=width).map(|r| format!("Repeat {r}")));
    headers.extend(["Mean".into(), "95% t interval".into()]);
    let mut lines = Vec::new();
    for step in &m.repeats {
        for row in &step.rows {
            for f in &row.figures {
                let mut line = vec![
                    format!("{} {}", step.step, step.label),
                    row.name.clone(),
                    f.figure.name().to_string(),
                ];
                line.extend(cells(&f.per_repeat, width, f.across.as_ref(), |v| {
                    cell(f.figure, v)
                }));
                lines.push(line);
            }
        }
    }
    Some(Table {
        title: "Repeats".into(),
        intro: Some(format!(
            "The sweep ran {width} times, each repeat its own phase with its own seeded \
             schedule; each figure as each repeat's step reported it (measured requests), then \
             the mean over the repeats and its 95% Student t interval (mean ± t·s/√n)."
        )),
        headers,
        rows: lines,
        names: 3,
        empty: "No steps ran.",
        after: Vec::new(),
    })
}
