//! `demo` (placeholder until implemented).

use std::process::ExitCode;

/// Arguments of `demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {}

/// Runs `demo`.
pub async fn run(_args: DemoArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
