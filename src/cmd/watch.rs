//! `watch`: the live view of a run directory that another process (here, or on another machine
//! with the directory synced) is writing. A terminal UI on a terminal, plain text otherwise (or
//! with `--plain`), one JSON snapshot with `--once`. It reads plain files only and never takes
//! the run directory's writer lock (docs/watch.md).

use anyhow::Context;
use openbench_watch::{run_plain, run_tui, snapshot};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `watch`.
#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// The run directory.
    #[arg(long)]
    run_dir: PathBuf,
    /// Print one JSON snapshot and exit.
    #[arg(long)]
    once: bool,
    /// Plain text even on a terminal (the default when stdout is not one).
    #[arg(long)]
    plain: bool,
    /// Refresh interval in milliseconds (at least 100).
    #[arg(long, default_value_t = 1000)]
    interval_ms: u64,
}

/// Runs `watch`.
pub async fn run(args: WatchArgs) -> anyhow::Result<ExitCode> {
    let dir = args.run_dir;
    let context = format!("watch {}", dir.display());
    if args.once {
        let view = snapshot(&dir).context(context)?;
        println!("{}", serde_json::to_string_pretty(&view)?);
        return Ok(ExitCode::SUCCESS);
    }
    let interval = Duration::from_millis(args.interval_ms.max(100));
    let tui = !args.plain && std::io::stdout().is_terminal();
    // The view blocks on the terminal and the files: keep it off the async workers.
    tokio::task::spawn_blocking(move || {
        if tui {
            run_tui(&dir, interval)
        } else {
            run_plain(&dir, interval, &mut std::io::stdout().lock())
        }
    })
    .await
    .context("the watch thread died")?
    .context(context)?;
    Ok(ExitCode::SUCCESS)
}
