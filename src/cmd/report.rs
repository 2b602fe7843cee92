//! `report`: recompute every derived artifact and `report.md` of a run from its raw records.

use openbench_common::rundir::{self, RunLock, WriterLock, read_json};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The run directory (holds `run-lock.json` and `raw/`).
    #[arg(long)]
    run_dir: PathBuf,
}

/// Runs `report`: takes the run directory's writer lock (refused at once while a `run`, `smoke`
/// or another `report` holds it), reads the run's workflow from its lock, recomputes, prints the
/// summary table.
pub async fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let lock: RunLock = read_json(&rundir::path(&args.run_dir, rundir::RUN_LOCK))?;
    let _writer = WriterLock::acquire(&args.run_dir, "report")?;
    let workflow = crate::registry::find(&lock.workflow)?;
    let run_dir = args.run_dir.clone();
    let outcome = tokio::task::spawn_blocking(move || workflow.report(&run_dir)).await??;
    print!("{}", outcome.summary_table);
    for path in &outcome.written {
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
