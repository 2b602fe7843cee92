//! Drawing a [`View`] with ratatui: a header with the progress gauge, the lanes table (progress,
//! TTFA/E2E p50/p95/p99, tokens/s, a sparkline of recent E2E, the latest error), failures by
//! class, the E2E histogram and the round timeline (launch skew per round), and for a run of
//! load phases the current step's table (target, achieved rate, live ITL). Only layout here:
//! every figure comes from the view model.

use crate::plain::{
    duration, lane_progress, load_achieved, load_itl, load_target, load_title, ms, options_line,
    sparkline, sparkline_scale, title, triple,
};
use crate::view::{LoadView, View};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{
    Bar, BarChart, BarGroup, Block, Cell, Gauge, Paragraph, Row, Sparkline, Table,
};

/// The keys, as the footer lists them.
pub const KEYS: &str = "s sort · o reverse · f family · r region · a all · q quit";

/// Draws `view` over the whole frame.
pub fn draw(frame: &mut Frame<'_>, view: &View) {
    let [header, lanes, bottom, footer] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Min(5),
        Constraint::Length(9),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    draw_header(frame, header, view);
    match &view.load {
        Some(load) => {
            // Borders and heading: 3 rows above the lanes.
            let height = u16::try_from(load.lanes.len() + 3).unwrap_or(u16::MAX);
            let [lanes, step] =
                Layout::vertical([Constraint::Min(5), Constraint::Length(height)]).areas(lanes);
            draw_lanes(frame, lanes, view);
            draw_load(frame, step, load);
        }
        None => draw_lanes(frame, lanes, view),
    }
    let [failures, histogram, rounds] = Layout::horizontal([
        Constraint::Percentage(30),
        Constraint::Percentage(30),
        Constraint::Percentage(40),
    ])
    .areas(bottom);
    draw_failures(frame, failures, view);
    draw_histogram(frame, histogram, view);
    draw_rounds(frame, rounds, view);
    let live = view.status.is_some_and(|s| s.is_live());
    let end = match (&view.notice, live) {
        (Some(notice), _) => format!("  ({notice})"),
        (None, true) => String::new(),
        (None, false) => "  (run has stopped)".to_string(),
    };
    frame.render_widget(
        Paragraph::new(format!("{}  │  {KEYS}{end}", options_line(view))),
        footer,
    );
}

fn draw_header(frame: &mut Frame<'_>, area: Rect, v: &View) {
    let block = Block::bordered().title(format!(" openbench-inference watch · {} ", title(v)));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [text, gauge] =
        Layout::vertical([Constraint::Length(1), Constraint::Length(1)]).areas(inner);
    frame.render_widget(Paragraph::new(crate::plain::progress_line(v)), text);
    let ratio = if v.requests_total > 0 {
        (v.requests_done as f64 / v.requests_total as f64).clamp(0.0, 1.0)
    } else {
        0.0
    };
    frame.render_widget(
        Gauge::default()
            .gauge_style(Style::default().fg(Color::Green))
            .ratio(ratio)
            .label(format!("{:.1}% of requests", ratio * 100.0)),
        gauge,
    );
}

fn draw_lanes(frame: &mut Frame<'_>, area: Rect, v: &View) {
    let scale = sparkline_scale(v);
    let header = Row::new([
        "lane",
        "region",
        "done",
        "fail",
        "harn",
        "TTFA p50/p95/p99",
        "E2E p50/p95/p99",
        "tok/s p50/flr",
        "E2E recent",
        "latest error",
    ])
    .style(Style::default().add_modifier(Modifier::BOLD));
    let rows = v.lanes.iter().map(|l| {
        let failing = l.failures + l.harness_errors > 0;
        Row::new([
            Cell::from(l.lane.clone()),
            Cell::from(l.region.clone()),
            Cell::from(lane_progress(l)),
            Cell::from(l.failures.to_string()).style(if failing {
                Style::default().fg(Color::Red)
            } else {
                Style::default()
            }),
            Cell::from(l.harness_errors.to_string()),
            Cell::from(triple(&l.ttfa_ms)),
            Cell::from(triple(&l.e2e_ms)),
            Cell::from(format!(
                "{}/{}",
                ms(l.tokens_per_second_p50),
                ms(l.tokens_per_second_p95_floor)
            )),
            Cell::from(sparkline(&l.recent_e2e_ms, scale)).style(Style::default().fg(Color::Cyan)),
            Cell::from(l.latest_error.clone().unwrap_or_else(|| "-".into())),
        ])
    });
    let widths = [
        Constraint::Length(22),
        Constraint::Length(8),
        Constraint::Length(12),
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Length(18),
        Constraint::Length(18),
        Constraint::Length(13),
        Constraint::Length(crate::state::RECENT as u16),
        Constraint::Min(10),
    ];
    let title = format!(
        " lanes ({}) · ms, nearest-rank · sorted by {} ",
        v.lanes.len(),
        v.options.sort.label()
    );
    frame.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::bordered().title(title)),
        area,
    );
}

fn draw_load(frame: &mut Frame<'_>, area: Rect, load: &LoadView) {
    let header = Row::new([
        "lane",
        "target",
        "achieved",
        "requests",
        "ITL p50/p99 ms (gaps)",
    ])
    .style(Style::default().add_modifier(Modifier::BOLD));
    let rows = load.lanes.iter().map(|l| {
        Row::new([
            l.lane.clone(),
            load_target(l),
            load_achieved(l),
            l.requests.to_string(),
            load_itl(l),
        ])
    });
    let widths = [
        Constraint::Length(22),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(8),
        Constraint::Min(22),
    ];
    frame.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(Block::bordered().title(format!(" {} ", load_title(load)))),
        area,
    );
}

fn draw_failures(frame: &mut Frame<'_>, area: Rect, v: &View) {
    let mut lines: Vec<Line<'_>> = v
        .failure_classes
        .iter()
        .map(|(class, n)| Line::from(format!("{class:<20} {n:>6}")))
        .collect();
    if lines.is_empty() {
        lines.push(Line::from("none"));
    }
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" failures by class ")),
        area,
    );
}

fn draw_histogram(frame: &mut Frame<'_>, area: Rect, v: &View) {
    let title = match (v.e2e_histogram.first(), v.e2e_histogram.last()) {
        (Some(a), Some(b)) => format!(" E2E histogram {:.0}–{:.0} ms ", a.lo_ms, b.hi_ms),
        _ => " E2E histogram ".to_string(),
    };
    let bars: Vec<Bar<'_>> = v
        .e2e_histogram
        .iter()
        .map(|b| {
            Bar::default()
                .value(b.count as u64)
                .text_value(String::new())
        })
        .collect();
    frame.render_widget(
        BarChart::default()
            .block(Block::bordered().title(title))
            .data(BarGroup::default().bars(&bars))
            .bar_width(2)
            .bar_gap(0)
            .bar_style(Style::default().fg(Color::Yellow)),
        area,
    );
}

fn draw_rounds(frame: &mut Frame<'_>, area: Rect, v: &View) {
    let r = &v.rounds;
    let block = Block::bordered().title(" rounds · launch skew per round ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [text, spark] = Layout::vertical([Constraint::Length(3), Constraint::Min(1)]).areas(inner);
    let last = match &r.last {
        Some(l) => format!(
            "last round {}: skew {} ms, round {} ms, overhead {} ms",
            l.round_index,
            ms(Some(l.launch_skew_ms)),
            ms(Some(l.round_ms)),
            ms(l.coordinator_overhead_ms)
        ),
        None => "no round finished yet".to_string(),
    };
    frame.render_widget(
        Paragraph::new(vec![
            Line::from(format!(
                "skew p50/p95/p99 {} ms over {} rounds",
                triple(&r.launch_skew_ms),
                r.lines
            )),
            Line::from(last),
            Line::from(format!("ETA {}", duration(v.eta_s))),
        ]),
        text,
    );
    // Microseconds, so sub-millisecond skews still draw.
    let width = spark.width as usize;
    let data: Vec<u64> = r.recent_skew_ms[r.recent_skew_ms.len().saturating_sub(width)..]
        .iter()
        .map(|ms| (ms * 1000.0).max(0.0) as u64)
        .collect();
    frame.render_widget(
        Sparkline::default()
            .data(&data)
            .style(Style::default().fg(Color::Magenta)),
        spark,
    );
}

#[cfg(test)]
mod tests;
