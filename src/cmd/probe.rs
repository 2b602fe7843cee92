//! `probe` subcommands (placeholder until implemented).

use std::process::ExitCode;

/// `probe` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ProbeCommand {
    /// Not implemented yet.
    Todo,
}

/// Runs a `probe` subcommand.
pub async fn run(_command: ProbeCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
