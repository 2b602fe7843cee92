//! `compare RUN_A RUN_B`: how run B differs from run A, written as `compare.md` and
//! `compare.html` (the method: docs/methodology.md, "Comparing two runs").

use openbench_common::rundir::{self, RunLock, read_json};
use openbench_common::workflow::CompareSettings;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The earlier (baseline) run directory.
    run_a: PathBuf,
    /// The later run directory, compared against run A.
    run_b: PathBuf,
    /// Folder to write `compare.md` and `compare.html` into (created if needed).
    #[arg(long, default_value = ".")]
    out: PathBuf,
    /// Bootstrap replicates per run.
    #[arg(long, default_value_t = 1000)]
    replicates: usize,
    /// Seed of the bootstrap resampling.
    #[arg(long, default_value_t = 20_261_201)]
    seed: u64,
}

/// Runs `compare`: reads both locks, refuses runs of two workflows, and lets the workflow compare.
/// Reads only: neither run directory's writer lock is taken and nothing is written into them.
pub async fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let read = |dir: &PathBuf| -> anyhow::Result<RunLock> {
        Ok(read_json(&rundir::path(dir, rundir::RUN_LOCK))?)
    };
    let (lock_a, lock_b) = (read(&args.run_a)?, read(&args.run_b)?);
    if lock_a.workflow != lock_b.workflow {
        anyhow::bail!(
            "{} is a {:?} run and {} a {:?} run: only runs of one workflow compare",
            args.run_a.display(),
            lock_a.workflow,
            args.run_b.display(),
            lock_b.workflow
        );
    }
    if args.replicates == 0 {
        anyhow::bail!("--replicates must be at least 1");
    }
    let workflow = crate::registry::find(&lock_b.workflow)?;
    let settings = CompareSettings {
        replicates: args.replicates,
        seed: args.seed,
    };
    let written = tokio::task::spawn_blocking(move || {
        workflow.compare(&args.run_a, &args.run_b, &args.out, settings)
    })
    .await??;
    for path in &written {
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
