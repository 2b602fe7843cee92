//! `dataset` subcommands (placeholder until implemented).

use std::process::ExitCode;

/// `dataset` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum DatasetCommand {
    /// Not implemented yet.
    Todo,
}

/// Runs a `dataset` subcommand.
pub async fn run(_command: DatasetCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
