//! `report`: recompute every derived artifact and `report.md` of a run from its raw records.

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The run directory (holds `run-lock.json` and `raw/`).
    #[arg(long)]
    run_dir: PathBuf,
}

/// Runs `report`: reads the run's workflow from its lock, recomputes, prints the summary table.
pub async fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let lock_path = args.run_dir.join(openbench_common::layout::RUN_LOCK);
    let bytes =
        std::fs::read(&lock_path).map_err(|e| anyhow::anyhow!("{}: {e}", lock_path.display()))?;
    let lock: openbench_common::layout::RunLock = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: not a run lock: {e}", lock_path.display()))?;
    let workflow = crate::registry::find(&lock.workflow)?;
    let run_dir = args.run_dir.clone();
    let outcome = tokio::task::spawn_blocking(move || workflow.report(&run_dir)).await??;
    print!("{}", outcome.summary_table);
    for path in &outcome.written {
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
