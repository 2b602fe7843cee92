//! The interactive loop: refresh the run every interval, redraw, and turn key presses into view
//! choices. [`App::key`] is pure (tested without a terminal); [`run_tui`] owns the terminal and
//! gives it back (raw mode off, main screen) however it ends.

use crate::WatchError;
use crate::render;
use crate::source::RunSource;
use crate::view::{View, ViewOptions};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use std::path::Path;
use std::time::{Duration, Instant};

/// What a key press asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAction {
    /// Leave `watch`.
    Quit,
    /// The view choices changed: rebuild and redraw.
    Changed,
    /// Nothing to do.
    Ignored,
}

/// The user's choices and how keys change them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct App {
    /// The choices the next view is built with.
    pub options: ViewOptions,
}

impl App {
    /// Applies one key: `q`/Esc/Ctrl-C quit; `s` next sort key; `o` reverses; `f` next family
    /// (all, then each of `families`); `r` next region; `a` clears both filters.
    pub fn key(
        &mut self,
        code: KeyCode,
        modifiers: KeyModifiers,
        families: &[String],
        regions: &[String],
    ) -> KeyAction {
        match code {
            KeyCode::Char('q') | KeyCode::Esc => KeyAction::Quit,
            KeyCode::Char('c') if modifiers.contains(KeyModifiers::CONTROL) => KeyAction::Quit,
            KeyCode::Char('s') => {
                self.options.sort = self.options.sort.next();
                KeyAction::Changed
            }
            KeyCode::Char('o') => {
                self.options.reverse = !self.options.reverse;
                KeyAction::Changed
            }
            KeyCode::Char('f') => {
                self.options.family = cycle(self.options.family.take(), families);
                KeyAction::Changed
            }
            KeyCode::Char('r') => {
                self.options.region = cycle(self.options.region.take(), regions);
                KeyAction::Changed
            }
            KeyCode::Char('a') => {
                self.options.family = None;
                self.options.region = None;
                KeyAction::Changed
            }
            _ => KeyAction::Ignored,
        }
    }
}

/// None → the first choice → … → the last → None.
fn cycle(current: Option<String>, choices: &[String]) -> Option<String> {
    match current {
        None => choices.first().cloned(),
        Some(c) => {
            let next = choices.iter().position(|x| *x == c).map_or(0, |i| i + 1);
            choices.get(next).cloned()
        }
    }
}

/// Runs the TUI on the current terminal until the user quits.
pub fn run_tui(dir: &Path, interval: Duration) -> Result<(), WatchError> {
    let mut source = RunSource::open(dir)?;
    let mut terminal = ratatui::try_init().map_err(WatchError::Terminal)?;
    let result = event_loop(&mut terminal, &mut source, interval);
    ratatui::try_restore().map_err(WatchError::Terminal)?;
    result
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    source: &mut RunSource,
    interval: Duration,
) -> Result<(), WatchError> {
    let mut app = App::default();
    let mut notice: Option<String> = None;
    loop {
        let mut view = View::build(source.header(), source.state(), &app.options);
        view.notice.clone_from(&notice);
        terminal
            .draw(|frame| render::draw(frame, &view))
            .map_err(WatchError::Terminal)?;
        let deadline = Instant::now() + interval;
        let mut redraw = false;
        while !redraw {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !event::poll(left).map_err(WatchError::Terminal)? {
                break;
            }
            match event::read().map_err(WatchError::Terminal)? {
                Event::Key(k) if k.kind == KeyEventKind::Press => {
                    match app.key(k.code, k.modifiers, &view.families, &view.regions) {
                        KeyAction::Quit => return Ok(()),
                        KeyAction::Changed => redraw = true,
                        KeyAction::Ignored => {}
                    }
                }
                Event::Resize(..) => redraw = true,
                _ => {}
            }
        }
        if !redraw {
            // A file caught mid-replacement reads badly once; say so and try again next tick.
            notice = source.refresh().err().map(|e| format!("cannot read: {e}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::SortKey;

    #[test]
    fn keys_cycle_sort_family_and_region_and_quit() {
        let families = ["f1".to_string(), "f2".to_string()];
        let regions = ["eu".to_string()];
        let mut app = App::default();
        let mut press =
            |c: char| app.key(KeyCode::Char(c), KeyModifiers::NONE, &families, &regions);
        assert_eq!(press('f'), KeyAction::Changed);
        assert_eq!(press('f'), KeyAction::Changed);
        assert_eq!(press('r'), KeyAction::Changed);
        assert_eq!(press('s'), KeyAction::Changed);
        assert_eq!(press('o'), KeyAction::Changed);
        assert_eq!(press('x'), KeyAction::Ignored);
        assert_eq!(press('q'), KeyAction::Quit);
        assert_eq!(app.options.family.as_deref(), Some("f2"));
        assert_eq!(app.options.region.as_deref(), Some("eu"));
        assert_eq!(
            (app.options.sort, app.options.reverse),
            (SortKey::Progress, true)
        );
        // Past the last family comes "all" again; `a` clears both filters.
        app.key(KeyCode::Char('f'), KeyModifiers::NONE, &families, &regions);
        assert_eq!(app.options.family, None);
        app.key(KeyCode::Char('a'), KeyModifiers::NONE, &families, &regions);
        assert_eq!(app.options.region, None);
        let ctrl_c = app.key(
            KeyCode::Char('c'),
            KeyModifiers::CONTROL,
            &families,
            &regions,
        );
        assert_eq!(ctrl_c, KeyAction::Quit);
        assert_eq!(
            app.key(KeyCode::Esc, KeyModifiers::NONE, &[], &[]),
            KeyAction::Quit
        );
    }
}
