//! `openbench-inference`: the command-line edge. Each subcommand lives in `cmd/`, parses its own
//! arguments and calls into the library crates; errors become messages here and nowhere else.

mod cmd;
mod telemetry;

use openbench_inference::registry;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Open, reproducible benchmark of LLM inference providers.
#[derive(Debug, Parser)]
#[command(name = "openbench-inference", version, about, long_about = None)]
struct Cli {
    /// Export traces over OTLP to this collector (e.g. http://127.0.0.1:4317); overrides
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` and the other standard variables (docs/observability.md).
    #[arg(long, global = true)]
    otlp_endpoint: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the full paired benchmark on the embedded simulator: no credentials, no network.
    Demo(cmd::demo::DemoArgs),
    /// Your own endpoint under load in one line: a concurrency or rate sweep, or a saturation
    /// search, of one or more OpenAI-compatible base URLs (writes its spec into the run).
    #[command(visible_alias = "benchmark")]
    Load(cmd::own_endpoint::LoadArgs),
    /// Several endpoints compared in paired rounds with exact task success, in one line (writes
    /// its spec into the run).
    #[command(visible_alias = "paired")]
    CompareEndpoints(cmd::own_endpoint::paired::PairedArgs),
    /// Print or write the spec reference (docs/spec.md) and its JSON Schema, generated from the
    /// spec structs.
    SpecReference(cmd::spec_reference::SpecReferenceArgs),
    /// List the workflows this build knows.
    ListWorkflows,
    /// Validate spec, dataset and credentials and write the run lock; no network calls.
    Init(cmd::runs::InitArgs),
    /// Run the smoke plan (first question of each family, up to two attempts).
    Smoke(cmd::runs::SmokeArgs),
    /// Run the full plan (requires --full --approve-full --approval-id).
    Run(cmd::runs::RunArgs),
    /// Watch a run directory live, or print one JSON snapshot with --once.
    Watch(cmd::watch::WatchArgs),
    /// Recompute every derived artifact and the reports of a run from its raw records.
    Report(cmd::report::ReportArgs),
    /// Store a finished run in the results store (SQLite file or PostgreSQL).
    Publish(cmd::store::PublishArgs),
    /// Trends, changes and regressions across the stored runs: history.md and history.html.
    History(cmd::store::HistoryArgs),
    /// The store's tables as CSV or Parquet files.
    Export(cmd::store::ExportArgs),
    /// The published side: publish a stored run as a snapshot, build the static leaderboard
    /// site from the store, preview it (docs/site.md).
    #[command(subcommand)]
    Site(cmd::site::SiteCommand),
    /// Compare two runs of one workflow: writes compare.md and compare.html.
    Compare(cmd::compare::CompareArgs),
    /// Score answers offline against the dataset or self-contained gold.
    Score(cmd::score::ScoreArgs),
    /// Generate or validate a dataset release.
    #[command(subcommand)]
    Dataset(cmd::dataset::DatasetCommand),
    /// Probe tools: one timed request, or a probe server for a remote region.
    #[command(subcommand)]
    Probe(cmd::probe::ProbeCommand),
    /// The provider simulator.
    #[command(subcommand)]
    Sim(cmd::sim::SimCommand),
    /// Benchmarks of our own machinery (see docs/performance.md).
    #[command(subcommand)]
    Bench(cmd::bench::BenchCommand),
    /// A delaying TCP relay with a black hole, for multi-host tests (hidden).
    #[command(hide = true)]
    Relay(cmd::relay::RelayArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(async move {
        let identity = match &cli.command {
            Command::Probe(command) => command.service_identity(),
            _ => telemetry::ServiceIdentity {
                default_name: telemetry::COORDINATOR_SERVICE,
                region: None,
            },
        };
        let telemetry = telemetry::init(cli.otlp_endpoint.as_deref(), &identity)?;
        let result = match cli.command {
            Command::Demo(args) => cmd::demo::run(args).await,
            Command::Load(args) => cmd::own_endpoint::run(args).await,
            Command::CompareEndpoints(args) => cmd::own_endpoint::paired::run(args).await,
            Command::SpecReference(args) => cmd::spec_reference::run(args),
            Command::ListWorkflows => cmd::runs::list_workflows(),
            Command::Init(args) => cmd::runs::init(args).await,
            Command::Smoke(args) => cmd::runs::smoke(args).await,
            Command::Run(args) => cmd::runs::run(args).await,
            Command::Watch(args) => cmd::watch::run(args).await,
            Command::Report(args) => cmd::report::run(args).await,
            Command::Compare(args) => cmd::compare::run(args).await,
            Command::Publish(args) => cmd::store::publish(args).await,
            Command::History(args) => cmd::store::history(args).await,
            Command::Export(args) => cmd::store::export(args).await,
            Command::Site(command) => cmd::site::run(command).await,
            Command::Score(args) => cmd::score::run(args).await,
            Command::Dataset(command) => cmd::dataset::run(command).await,
            Command::Probe(command) => cmd::probe::run(command).await,
            Command::Sim(command) => cmd::sim::run(command).await,
            Command::Bench(command) => cmd::bench::run(command).await,
            Command::Relay(args) => cmd::relay::run(args).await,
        };
        telemetry.shutdown().await;
        result
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            // Errors quote specs and upstreams: each line is shown, its escapes never obeyed.
            let text = openbench_inference::error_text::error_text(&e);
            let lines: Vec<_> = text
                .lines()
                .map(openbench_common::untrusted_text::terminal)
                .collect();
            eprintln!("error: {}", lines.join("\n"));
            ExitCode::from(1)
        }
    }
}
