//! `sim` subcommands (placeholder until implemented).

use std::process::ExitCode;

/// `sim` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SimCommand {
    /// Not implemented yet.
    Todo,
}

/// Runs a `sim` subcommand.
pub async fn run(_command: SimCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
