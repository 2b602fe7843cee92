use super::*;
use crate::source::Header;
use crate::state::tests::worked_state;
use crate::view::{SortKey, ViewOptions};
use openbench_common::rundir::{RunMode, RunStatus};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// The screen after drawing the worked example under `options`, one string per row.
fn screen(options: &ViewOptions, status: RunStatus) -> Vec<String> {
    let header = Header {
        run_id: "run-x".into(),
        mode: RunMode::Full,
        status: Some(status),
        attempt: 0,
        simulator_time_scale: None,
    };
    let view = View::build(&header, &worked_state(), options);
    let mut terminal = Terminal::new(TestBackend::new(160, 40)).unwrap_or_else(|e| panic!("{e}"));
    terminal
        .draw(|frame| draw(frame, &view))
        .unwrap_or_else(|e| panic!("{e}"));
    let buffer = terminal.backend().buffer();
    (0..buffer.area.height)
        .map(|y| {
            (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
        })
        .collect()
}

fn row_of(screen: &[String], needle: &str) -> usize {
    screen
        .iter()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not on screen:\n{}", screen.join("\n")))
}

#[test]
fn draws_progress_lanes_failures_and_rounds() {
    let s = screen(&ViewOptions::default(), RunStatus::Running);
    let text = s.join("\n");
    assert!(text.contains("run run-x  [full, running]"), "{text}");
    assert!(
        text.contains("rounds 2/3  requests 5/6  failures 1  harness 0"),
        "{text}"
    );
    assert!(text.contains("83.3% of requests"), "{text}"); // 5 / 6
    let a = &s[row_of(&s, "a@eu")];
    assert!(a.contains("3/3 100%"), "{a}");
    assert!(a.contains("30.0/40.0/40.0"), "TTFA p50/p95/p99: {a}");
    assert!(a.contains("300.0/400.0/400.0"), "E2E: {a}");
    assert!(a.contains("60.0/50.0"), "tok/s p50 and floor: {a}");
    assert!(a.contains("round 0 harness: probe lost again"), "{a}");
    // Sparkline over 0..400 ms: 100 → ▃ (2/8 rounded), 300 → ▆, 400 → █.
    assert!(a.contains("▃▆█"), "{a}");
    let b = &s[row_of(&s, "b@us")];
    assert!(b.contains("2/3 67%"), "{b}");
    assert!(text.contains("http_429"), "{text}");
    assert!(
        text.contains("skew p50/p95/p99 0.5/1.5/1.5 ms over 2 rounds"),
        "{text}"
    );
    assert!(
        text.contains("last round 1: skew 1.5 ms, round 300.0 ms, overhead 2.0 ms"),
        "{text}"
    );
    assert!(text.contains("q quit"), "{text}");
    assert!(!text.contains("run has stopped"), "{text}");
}

#[test]
fn the_sort_and_filters_change_what_is_drawn() {
    let s = screen(&ViewOptions::default(), RunStatus::Complete);
    assert!(row_of(&s, "a@eu") < row_of(&s, "b@us"));
    assert!(s.join("\n").contains("run has stopped"));
    let sorted = screen(
        &ViewOptions {
            sort: SortKey::E2eP50,
            ..ViewOptions::default()
        },
        RunStatus::Running,
    );
    assert!(row_of(&sorted, "b@us") < row_of(&sorted, "a@eu"));
    assert!(sorted.join("\n").contains("sorted by E2E p50"));
    let filtered = screen(
        &ViewOptions {
            region: Some("eu".into()),
            family: Some("f1".into()),
            ..ViewOptions::default()
        },
        RunStatus::Running,
    );
    let text = filtered.join("\n");
    assert!(!text.contains("b@us"), "{text}");
    assert!(text.contains("family f1  region eu"), "{text}");
    assert!(text.contains("lanes (1)"), "{text}");
}

/// A run of load phases gets the current step's table under the lanes; a paired run has none.
#[test]
fn a_load_step_is_drawn_under_the_lanes() {
    use crate::view::{LoadLaneView, LoadView};
    let header = Header {
        run_id: "run-x".into(),
        mode: RunMode::Full,
        status: Some(RunStatus::Running),
        attempt: 0,
        simulator_time_scale: None,
    };
    let mut view = View::build(&header, &worked_state(), &ViewOptions::default());
    let draw_it = |view: &View| {
        let mut terminal =
            Terminal::new(TestBackend::new(160, 40)).unwrap_or_else(|e| panic!("{e}"));
        terminal
            .draw(|frame| draw(frame, view))
            .unwrap_or_else(|e| panic!("{e}"));
        let buffer = terminal.backend().buffer().clone();
        (0..buffer.area.height)
            .map(|y| {
                (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect::<Vec<String>>()
    };
    assert!(!draw_it(&view).join("\n").contains("load step"));
    view.load = Some(LoadView {
        phase: 2,
        name: "step-2 poisson 8/s".into(),
        lanes: vec![LoadLaneView {
            lane: "a@eu".into(),
            target_per_s: Some(8.0),
            users: None,
            requests: 12,
            achieved_per_s: Some(7.5),
            itl_gaps: 40,
            itl_p50_ms: Some(4.25),
            itl_p99_ms: Some(12.0),
        }],
        sittings: vec![1],
    });
    let s = draw_it(&view);
    let title = row_of(&s, "load step 2: step-2 poisson 8/s");
    assert!(title > row_of(&s, "TTFA p50/p95/p99"), "under the lanes");
    // Below the heading row: the cells in column order.
    let row = &s[title + 2];
    let at: Vec<Option<usize>> = ["a@eu", "8.00/s", "7.50/s", " 12 ", "4.2/12.0 (40)"]
        .iter()
        .map(|cell| row.find(cell))
        .collect();
    assert!(at.iter().all(Option::is_some), "{at:?} in {row}");
    assert!(at.is_sorted(), "columns in order: {row}");
}
