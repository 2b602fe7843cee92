//! `bench`: benchmarks of our own machinery, whose figures `docs/performance.md` records.
//! `bench analysis` times `report` end to end on a synthetic run; `bench fidelity` measures the
//! timing error and the cost of the measurement pipeline itself (`super::fidelity`). Both reach
//! their workflow through the registry (`--workflow`): its synthetic run and its bench fixture.
//! `bench load-generator` measures how much load one process drives through the load workflow
//! (`super::load_bench`).

use anyhow::Context;
use openbench_common::workflow::SynthesisRequest;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// `bench` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Synthesise a run's records (seeded) and time `report` on it end to end: reading and
    /// scoring, metrics, paired comparisons, report.md and report.html.
    Analysis(AnalysisArgs),
    /// Drive a full run through the real coordinator, gRPC, probe and writer against a scripted
    /// upstream that logs every write; report the timing error of TTFO, TTFA, E2E and every
    /// event, loopback latency, CPU per 1,000 requests, peak RSS, launch skew and coordinator
    /// overhead (or, with --plan-only, the peak RSS of planning the run).
    Fidelity(super::fidelity::FidelityArgs),
    /// Drive closed loops (`--users`) and constant-rate open loops (`--rates`) of streamed
    /// requests through the real load runner against simulator processes; report per step the
    /// requests planned and sent, achieved rate, peak in flight, send lag p50/p99/max, CPU per
    /// 1,000 requests, peak RSS and failures, and the highest rate and concurrency driven on time.
    LoadGenerator(super::load_bench::LoadBenchArgs),
}

/// Arguments of `bench analysis`.
#[derive(Debug, clap::Args)]
pub struct AnalysisArgs {
    /// Workflow whose synthetic run is reported.
    #[arg(long, default_value = "micro-single-task")]
    workflow: String,
    /// Records to synthesise (rounded down to whole rounds of `--lanes`).
    #[arg(long, default_value_t = 1_000_000)]
    records: u64,
    /// Lanes (providers) per round.
    #[arg(long, default_value_t = 10)]
    lanes: usize,
    /// Seed of the synthetic latencies.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the run here (kept) instead of a temporary directory (removed).
    #[arg(long)]
    run_dir: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// What `bench analysis` measured.
#[derive(Debug, Serialize)]
struct AnalysisFigures {
    records: u64,
    lanes: usize,
    rounds: u64,
    seed: u64,
    synthesis_seconds: f64,
    report_seconds: f64,
    records_per_second: f64,
    /// Peak resident set (VmHWM) in bytes.
    peak_rss_bytes: Option<u64>,
    /// "report" when the high-water mark was reset after synthesis, "process" when it could not
    /// be and so also covers synthesis.
    peak_rss_scope: &'static str,
}

/// Runs a `bench` subcommand.
pub async fn run(command: BenchCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Analysis(args) => tokio::task::spawn_blocking(move || analysis(args)).await?,
        BenchCommand::Fidelity(args) => super::fidelity::run(args).await,
        BenchCommand::LoadGenerator(args) => super::load_bench::run(args).await,
    }
}

fn analysis(args: AnalysisArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.lanes > 0, "--lanes must be at least 1");
    let workflow = crate::registry::find(&args.workflow)?;
    let temporary = match &args.run_dir {
        Some(_) => None,
        None => Some(tempfile::tempdir().context("cannot create a temporary run directory")?),
    };
    let run_dir = match (&args.run_dir, &temporary) {
        (Some(dir), _) => dir.clone(),
        (None, Some(t)) => t.path().to_path_buf(),
        (None, None) => anyhow::bail!("no run directory"),
    };
    let request = SynthesisRequest {
        records: args.records,
        lanes: args.lanes,
        seed: args.seed,
    };
    let start = Instant::now();
    let run = workflow.synthesize_run(&run_dir, &request)?;
    let synthesis_seconds = start.elapsed().as_secs_f64();
    let reset = super::bench_meter::reset_peak_rss();
    let start = Instant::now();
    (run.report)()?;
    let report_seconds = start.elapsed().as_secs_f64();
    let figures = AnalysisFigures {
        records: run.records,
        lanes: args.lanes,
        rounds: run.rounds,
        seed: args.seed,
        synthesis_seconds,
        report_seconds,
        records_per_second: run.records as f64 / report_seconds.max(f64::MIN_POSITIVE),
        peak_rss_bytes: super::bench_meter::peak_rss_bytes(),
        peak_rss_scope: if reset { "report" } else { "process" },
    };
    if args.json {
        println!("{}", serde_json::to_string(&figures)?);
    } else {
        print!("{}", text(&figures));
    }
    if let Some(t) = temporary {
        t.close()
            .context("cannot remove the temporary run directory")?;
    }
    Ok(ExitCode::SUCCESS)
}

fn text(f: &AnalysisFigures) -> String {
    let rss = f.peak_rss_bytes.map_or("unknown".to_string(), |b| {
        format!("{:.0} MB ({})", b as f64 / 1e6, f.peak_rss_scope)
    });
    format!(
        "synthesised {} records ({} rounds × {} lanes, seed {}) in {:.2} s\n\
         report: {:.2} s, {:.0} records/s, peak RSS {rss}\n",
        f.records,
        f.rounds,
        f.lanes,
        f.seed,
        f.synthesis_seconds,
        f.report_seconds,
        f.records_per_second
    )
}
