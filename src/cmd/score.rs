//! `score` (placeholder until implemented).

use std::process::ExitCode;

/// Arguments of `score`.
#[derive(Debug, clap::Args)]
pub struct ScoreArgs {}

/// Runs `score`.
pub async fn run(_args: ScoreArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
