//! `report` (placeholder until implemented).

use std::process::ExitCode;

/// Arguments of `report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {}

/// Runs `report`.
pub async fn run(_args: ReportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
