//! `report`: recompute every derived artifact and `report.md` of a run from its raw records.

use openbench_common::rundir;
use openbench_common::workflow::ReportOptions;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The run directory (holds `run-lock.json` and `raw/`).
    #[arg(long)]
    run_dir: PathBuf,
    /// Count records outside the plan or the run lock instead of refusing them (the report's
    /// header then says so).
    #[arg(long)]
    accept_unplanned: bool,
    /// Count a request with more than one committed record (its last one) instead of refusing
    /// it (the report's header then says so).
    #[arg(long)]
    accept_duplicates: bool,
}

/// Runs `report`: opens the run directory as `publish` does ([`rundir::open_run`]: the writer
/// lock, refused at once while a `run`, `smoke` or another `report` holds it; the artifacts'
/// hashes; the records chain), reads the run's workflow from its lock, recomputes, prints the
/// summary table and how the records stand against their chain.
pub async fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let opened = rundir::open_run(&args.run_dir, "report")?;
    let workflow = crate::registry::find(&opened.lock.workflow)?;
    let run_dir = args.run_dir.clone();
    let options = ReportOptions {
        accept_unplanned: args.accept_unplanned,
        accept_duplicates: args.accept_duplicates,
    };
    let outcome =
        tokio::task::spawn_blocking(move || workflow.report(&run_dir, &options)).await??;
    print!("{}", outcome.summary_table);
    if let Some(integrity) = &opened.integrity {
        println!("{integrity}");
    }
    for path in &outcome.written {
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
