//! `watch`: a live terminal view of a run directory, rebuilt from its files every interval, so it
//! works on a run written by another process and on a finished one; `--once` prints one JSON
//! snapshot and exits.

use anyhow::Context;
use openbench_common::rundir::RunStatus;
use openbench_coordinator::watch::{render, snapshot};
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
    /// Refresh interval in milliseconds.
    #[arg(long, default_value_t = 1000)]
    interval_ms: u64,
}

/// Runs `watch`.
pub async fn run(args: WatchArgs) -> anyhow::Result<ExitCode> {
    let read = || {
        snapshot(&args.run_dir)
            .with_context(|| format!("cannot read run directory {}", args.run_dir.display()))
    };
    if args.once {
        let snap = read()?;
        println!("{}", serde_json::to_string_pretty(&snap)?);
        return Ok(ExitCode::SUCCESS);
    }
    loop {
        let snap = read()?;
        // Clear the screen and home the cursor, then draw.
        print!("\x1b[2J\x1b[H{}", render(&snap));
        let running = snap.status.is_some_and(RunStatus::is_live);
        if !running {
            let status = snap.status.map_or("unknown", RunStatus::as_str);
            println!("\nrun is {status}; watch ends.");
            return Ok(ExitCode::SUCCESS);
        }
        tokio::time::sleep(Duration::from_millis(args.interval_ms.max(100))).await;
    }
}
