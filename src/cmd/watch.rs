//! `watch` (placeholder until implemented).

use std::process::ExitCode;

/// Arguments of `watch`.
#[derive(Debug, clap::Args)]
pub struct WatchArgs {}

/// Runs `watch`.
pub async fn run(_args: WatchArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
