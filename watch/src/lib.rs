//! `watch`: the live view of a run directory that another process (here or on another machine,
//! synced as plain files) is writing. It follows `raw/results.jsonl` and `raw/rounds.jsonl` by
//! offset ([`source`]), reads its plan of either kind ([`plan_file`]), accumulates the records that count ([`state`]), computes every figure in a
//! pure view model ([`view`]) and shows it as a terminal UI ([`render`], [`app`]), as plain text
//! when the output is not a terminal ([`plain`]), or as one JSON document (`--once`).
//!
//! It never takes the run directory's writer lock, so it neither blocks a run nor waits for one.

pub mod app;
pub mod plain;
pub mod plan_file;
pub mod render;
pub mod source;
pub mod state;
pub mod view;

pub use app::run_tui;
pub use source::RunSource;
pub use view::{View, ViewOptions};

use openbench_common::rundir::{RunDirError, RunStatus};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// Why `watch` stopped.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The run directory could not be read.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// The terminal could not be set up, drawn or read.
    #[error("terminal: {0}")]
    Terminal(std::io::Error),
    /// The plain-text output could not be written.
    #[error("writing the view: {0}")]
    Output(std::io::Error),
}

/// The view of `dir` as it is now, with the default choices (`watch --once`).
pub fn snapshot(dir: &Path) -> Result<View, WatchError> {
    let source = RunSource::open(dir)?;
    Ok(View::build(
        source.header(),
        source.state(),
        &ViewOptions::default(),
    ))
}

/// The plain-text loop: writes the view to `out` whenever it changed, every `interval`, until the
/// run is no longer live (then one closing line).
pub fn run_plain(dir: &Path, interval: Duration, out: &mut impl Write) -> Result<(), WatchError> {
    let mut source = RunSource::open(dir)?;
    let mut changed = true;
    loop {
        if changed {
            let view = View::build(source.header(), source.state(), &ViewOptions::default());
            writeln!(out, "{}", plain::render(&view)).map_err(WatchError::Output)?;
            out.flush().map_err(WatchError::Output)?;
        }
        let status = source.header().status;
        if !status.is_some_and(RunStatus::is_live) {
            let status = status.map_or("unknown", RunStatus::as_str);
            writeln!(out, "run is {status}; watch ends.").map_err(WatchError::Output)?;
            return Ok(());
        }
        std::thread::sleep(interval);
        changed = source.refresh()?.changed;
    }
}
