//! `sim` subcommands: serve the provider simulator, list its profiles, list its quirks.

use anyhow::Context;
use openbench_simulator::{CATALOGUE, SimConfig, profiles};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// `sim` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SimCommand {
    /// Serve the OpenAI-compatible simulator until Ctrl-C or SIGTERM.
    Serve(ServeArgs),
    /// List the latency/failure profiles and the seed figures they are fitted to.
    Profiles,
    /// List the fault/quirk catalogue (names for `x-sim-quirk` or a `model+quirk` suffix).
    Quirks,
}

/// Arguments of `sim serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// TCP port (0 picks a free one).
    #[arg(long)]
    port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Profile served on /v1/chat/completions.
    #[arg(long, default_value = "plain")]
    profile: String,
    /// Multiplies every simulated delay (0.1 runs ten times faster than life).
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Base seed of every simulated response.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// A micro-single-task dataset release: known prompts get correct/wrong/malformed answers.
    #[arg(long)]
    dataset: Option<PathBuf>,
}

/// Runs a `sim` subcommand.
pub async fn run(command: SimCommand) -> anyhow::Result<ExitCode> {
    match command {
        SimCommand::Serve(args) => serve(args).await,
        SimCommand::Profiles => {
            print!("{}", profile_table()?);
            Ok(ExitCode::SUCCESS)
        }
        SimCommand::Quirks => {
            let width = CATALOGUE
                .iter()
                .map(|(_, name, _)| name.len())
                .max()
                .unwrap_or(0);
            for (_, name, description) in CATALOGUE {
                println!("{name:<width$}  {description}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let answers = match &args.dataset {
        Some(dir) => {
            let workflow = crate::registry::find("micro-single-task")?;
            let release = workflow
                .load_dataset(dir, "manifest.json")
                .with_context(|| format!("loading dataset {}", dir.display()))?;
            workflow
                .simulator_answers(&release)
                .with_context(|| format!("canned answers from {}", dir.display()))?
        }
        None => Vec::new(),
    };
    let config = SimConfig {
        time_scale: args.time_scale,
        seed: args.seed,
        default_profile: args.profile.clone(),
        answers,
    };
    let known = config.answers.len();
    let server = openbench_simulator::start(config, SocketAddr::new(args.host, args.port))
        .await
        .context("starting the simulator")?;
    println!(
        "simulator listening; base URL {} (profile {})",
        server.base_url(),
        args.profile
    );
    println!(
        "time scale {}, seed {}, {known} canned answers",
        args.time_scale, args.seed
    );
    for p in profiles()? {
        println!("  {:<10} {}", p.name(), server.profile_endpoint(p.name()));
    }
    println!("quirks: header `x-sim-quirk: a,b` or model suffix `model+a+b` (see `sim quirks`)");
    super::wait_for_signal().await?;
    eprintln!("shutting down");
    if tokio::time::timeout(Duration::from_secs(5), server.stopped())
        .await
        .is_err()
    {
        eprintln!("simulator did not close every connection within 5 s");
    }
    Ok(ExitCode::SUCCESS)
}

/// The profile table: seed targets and modelling choices.
fn profile_table() -> anyhow::Result<String> {
    let mut out = format!(
        "{:<10} {:>9} {:>9} {:>9} {:>7} {:>7} {:>8} {:>8}  {}\n",
        "profile",
        "TTFA p50",
        "E2E p50",
        "E2E p99",
        "tok/s",
        "p95 fl",
        "success",
        "failures",
        "quirks / failure kinds"
    );
    for p in profiles()? {
        let s = &p.spec.seed;
        let failures: Vec<String> = p.spec.failures.keys().cloned().collect();
        out.push_str(&format!(
            "{:<10} {:>9.1} {:>9.1} {:>9.1} {:>7.1} {:>7.1} {:>7.2}% {:>7.2}%  [{}] / [{}]\n",
            p.name(),
            s.ttfa_p50_ms,
            s.e2e_p50_ms,
            s.e2e_p99_ms,
            s.tokens_per_s_p50,
            s.tokens_per_s_p95_floor,
            s.task_success * 100.0,
            s.failure_rate * 100.0,
            p.spec.quirks.join(", "),
            failures.join(", ")
        ));
    }
    Ok(out)
}
