//! `list-workflows`, `init`, `smoke` and `run` (placeholder until implemented).

use std::process::ExitCode;

/// Arguments of `init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {}
/// Arguments of `smoke`.
#[derive(Debug, clap::Args)]
pub struct SmokeArgs {}
/// Arguments of `run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {}

/// Prints the registered workflows.
pub fn list_workflows() -> anyhow::Result<ExitCode> {
    for w in crate::registry::workflows() {
        println!("{}\t{}", w.name(), w.description());
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `init`.
pub async fn init(_args: InitArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
/// Runs `smoke`.
pub async fn smoke(_args: SmokeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
/// Runs `run`.
pub async fn run(_args: RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
