//! `bench fidelity`: the measurement pipeline's own error and cost. A scripted upstream
//! ([`upstream`]) replays exact chunk schedules and logs each write; a full run of `--lanes`
//! providers × `--rounds` rounds goes through the real coordinator, gRPC, the in-process probe
//! and the writer (persistence on, as in a real run); then every stamp in the run directory is
//! compared with the upstream's log ([`errors`]). Also reported: loopback latency, CPU seconds per
//! 1,000 requests (user + sys of this whole process, which holds no upstream), peak RSS, launch
//! skew and coordinator overhead per round, and the load average the figures were taken at.
//!
//! `--plan-only` plans the same run (plan built and written, rounds split into jobs, the first
//! two rounds' requests built and encoded) without sending anything, and reports the peak RSS of
//! that: the memory a large plan costs before its first request.

mod errors;
mod layers;

use super::bench_meter::{Cost, Meter, cost_text, load_average, load_text, print_figures};
use super::sim_upstream::{self as upstream, Upstream};
use anyhow::Context;
use errors::Spread;
use layers::Layer;
use openbench_common::workflow::BenchFixtureRequest;
use openbench_coordinator::{RunDir, RunOptions, RunStatus, run_full};
use openbench_inference::targets::LocalTargets;
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `bench fidelity`.
#[derive(Debug, clap::Args)]
pub struct FidelityArgs {
    /// Workflow whose bench fixture (dataset and spec) the run uses.
    #[arg(long, default_value = "micro-single-task")]
    workflow: String,
    /// Lanes (providers, one per upstream stream).
    #[arg(long, default_value_t = 10)]
    lanes: usize,
    /// Rounds (rounded up to what the workflow plans; micro-single-task: a multiple of 3).
    #[arg(long, default_value_t = 30)]
    rounds: usize,
    /// Answer pieces per stream.
    #[arg(long, default_value_t = 30)]
    chunks: usize,
    /// Mean gap between answer pieces, ms (each gap is drawn from 1 to 2·gap − 1).
    #[arg(long, default_value_t = 5)]
    gap_ms: u64,
    /// Upstream simulator processes the lanes are spread over.
    #[arg(long, default_value_t = 2)]
    upstreams: usize,
    /// Plan the run without executing it and report its peak RSS.
    #[arg(long)]
    plan_only: bool,
    /// How much of the pipeline drives the requests: all of it, or fewer layers, to see what
    /// each costs (CPU and context switches per 1,000 requests; no timing error).
    #[arg(long, value_enum, default_value_t = Layer::Pipeline)]
    layer: Layer,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Distribution of a per-round figure, ms.
#[derive(Debug, Serialize)]
struct RoundSpread {
    n: usize,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    max_ms: Option<f64>,
}

impl RoundSpread {
    fn of(values: &[f64]) -> RoundSpread {
        let s = Spread::of(values);
        RoundSpread {
            n: s.n,
            p50_ms: s.p50_us,
            p99_ms: s.p99_us,
            max_ms: s.max_us,
        }
    }
}

/// What a fidelity run measured.
#[derive(Debug, Serialize)]
struct FidelityFigures {
    mode: &'static str,
    #[serde(flatten)]
    workload: Workload,
    load_average_before: Option<f64>,
    load_average_after: Option<f64>,
    run_status: String,
    harness_errors: usize,
    #[serde(flatten)]
    cost: Cost,
    loopback_one_way: Spread,
    errors: errors::Errors,
    launch_skew: RoundSpread,
    coordinator_overhead: RoundSpread,
}

/// What a run sent, and to how many upstream processes.
#[derive(Debug, Serialize)]
struct Workload {
    lanes: usize,
    rounds: usize,
    chunks: usize,
    gap_ms: u64,
    requests: usize,
    upstream_processes: usize,
}

impl Workload {
    /// The workload as each mode's first line says it.
    fn text(&self) -> String {
        format!(
            "{} requests ({} lanes × {} rounds, {} chunks each, {} ms apart on average) over {} \
             upstream process(es)",
            self.requests,
            self.lanes,
            self.rounds,
            self.chunks,
            self.gap_ms,
            self.upstream_processes
        )
    }
}

/// What a run through fewer layers than the pipeline measured (`--layer`).
#[derive(Debug, Serialize)]
struct LayerFigures {
    mode: &'static str,
    layer: Layer,
    #[serde(flatten)]
    workload: Workload,
    /// Requests whose whole response was read and looked complete.
    completed: usize,
    /// Socket or HTTP reads (socket and http layers) or SSE events (probe layer) per request.
    reads_per_request: f64,
    first_failure: Option<String>,
    load_average_before: Option<f64>,
    load_average_after: Option<f64>,
    #[serde(flatten)]
    cost: Cost,
}

/// What a plan-only run measured.
#[derive(Debug, Serialize)]
struct PlanFigures {
    mode: &'static str,
    lanes: usize,
    rounds: usize,
    requests: usize,
    load_average_before: Option<f64>,
    plan_seconds: f64,
    /// VmHWM with the planned work alive (reset after the dataset was generated), bytes.
    peak_rss_bytes: Option<u64>,
}

/// Runs `bench fidelity`.
pub async fn run(args: FidelityArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.lanes > 0, "--lanes must be at least 1");
    anyhow::ensure!(args.rounds > 0, "--rounds must be at least 1");
    anyhow::ensure!(args.chunks > 0, "--chunks must be at least 1");
    anyhow::ensure!(args.upstreams > 0, "--upstreams must be at least 1");
    anyhow::ensure!(args.gap_ms > 0, "--gap-ms must be at least 1");
    let workflow: Arc<dyn openbench_common::workflow::Workflow> =
        Arc::from(crate::registry::find(&args.workflow)?);
    let work = tempfile::tempdir().context("cannot create a temporary directory")?;
    if args.plan_only {
        let spec = fixture(&workflow, work.path(), &args, &[]).await?;
        let load_before = load_average();
        super::bench_meter::reset_peak_rss();
        let start = Instant::now();
        let inputs = super::runs::load_inputs(&args.workflow, &spec)?;
        let run = RunDir::create(&inputs, Some("fidelity"), "bench")?;
        let planned = openbench_coordinator::round_jobs::plan_full(&inputs, &run)?;
        let figures = PlanFigures {
            mode: "plan",
            lanes: args.lanes,
            rounds: planned.jobs.len(),
            requests: planned.jobs.iter().map(|j| j.len()).sum(),
            load_average_before: load_before,
            plan_seconds: start.elapsed().as_secs_f64(),
            peak_rss_bytes: super::bench_meter::peak_rss_bytes(),
        };
        drop(planned);
        print_figures(args.json, &figures, plan_text(&figures))?;
        return Ok(ExitCode::SUCCESS);
    }

    let upstreams: Vec<Upstream> = (0..args.upstreams.min(args.lanes))
        .map(|_| Upstream::start())
        .collect::<anyhow::Result<_>>()?;
    let endpoints: Vec<String> = upstreams.iter().map(Upstream::endpoint).collect();
    let upstream_processes = upstreams.len();
    let spec = fixture(&workflow, work.path(), &args, &endpoints).await?;
    let load_before = load_average();
    let loopback = tokio::task::spawn_blocking(|| upstream::loopback_one_way_us(2_000)).await??;
    let inputs = super::runs::load_inputs(&args.workflow, &spec)?;
    let run = RunDir::create(&inputs, Some("fidelity"), "bench")?;
    if args.layer != Layer::Pipeline {
        let work = layer_work(&inputs, &run)?;
        let meter = Meter::start();
        let prepared = layers::prepare(args.layer, &work).await?;
        let outcome = prepared.run(&work.jobs).await?;
        let cost = meter.stop(outcome.requests);
        let figures = LayerFigures {
            mode: "layer",
            layer: args.layer,
            workload: Workload {
                lanes: args.lanes,
                rounds: work.jobs.len(),
                chunks: args.chunks,
                gap_ms: args.gap_ms,
                requests: outcome.requests,
                upstream_processes,
            },
            completed: outcome.completed,
            reads_per_request: outcome.reads as f64 / outcome.completed.max(1) as f64,
            first_failure: outcome.first_failure,
            load_average_before: load_before,
            load_average_after: load_average(),
            cost,
        };
        let ok = figures.completed == figures.workload.requests;
        print_figures(args.json, &figures, layer_text(&figures))?;
        return Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let options = RunOptions {
        progress: None,
        stop: None,
        targets: Some(Arc::new(LocalTargets::new(Vec::new()))),
        faults: Default::default(),
    };
    let meter = Meter::start();
    let outcome = run_full(&inputs, &run, "fidelity", &options).await?;
    let cost = meter.stop(outcome.sitting.records_written);
    let load_after = load_average();
    let dir = run.dir.clone();
    drop(run);

    let files = openbench_common::rundir::RunFiles::new(&dir, 0);
    let probed = errors::read_probed(&files.results, &files.events)?;
    let client = reqwest::Client::new();
    let mut logs = HashMap::new();
    let mut schedules = HashMap::new();
    for lane in 0..args.lanes {
        let key = lane_key(lane);
        let log = upstreams[lane % upstreams.len()]
            .write_log(&client, &key)
            .await?;
        logs.insert(key.clone(), log);
        schedules.insert(key, upstream::schedule(lane, args.chunks, args.gap_ms));
    }
    drop(upstreams);
    let errors = errors::compare(&probed, &logs, &schedules);
    let requests = outcome.sitting.records_written;
    let figures = FidelityFigures {
        mode: "run",
        workload: Workload {
            lanes: args.lanes,
            rounds: outcome.sitting.rounds_executed,
            chunks: args.chunks,
            gap_ms: args.gap_ms,
            requests,
            upstream_processes,
        },
        load_average_before: load_before,
        load_average_after: load_after,
        run_status: format!("{:?}", outcome.status).to_lowercase(),
        harness_errors: outcome.sitting.harness_errors,
        cost,
        loopback_one_way: Spread::of(&loopback),
        errors,
        launch_skew: RoundSpread::of(&outcome.sitting.skews_ms),
        coordinator_overhead: RoundSpread::of(&outcome.sitting.overheads_ms),
    };
    let ok = outcome.status == RunStatus::Complete;
    print_figures(args.json, &figures, run_text(&figures))?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn lane_key(lane: usize) -> String {
    format!("lane-{lane:04}")
}

/// The bench's inputs, written by the workflow ([`BenchFixtureRequest`]): one provider per lane,
/// each streaming its own schedule from one of the upstreams (round robin) and tagging its
/// requests with its key for the write log. Without endpoints (plan only) the providers point at
/// a closed loopback port.
async fn fixture(
    workflow: &Arc<dyn openbench_common::workflow::Workflow>,
    dir: &Path,
    args: &FidelityArgs,
    endpoints: &[String],
) -> anyhow::Result<std::path::PathBuf> {
    let mut providers = String::new();
    for lane in 0..args.lanes {
        let key = lane_key(lane);
        let endpoint = match endpoints {
            [] => "http://127.0.0.1:9/v1/chat/completions".to_string(),
            all => all[lane % all.len()].clone(),
        };
        let gaps: Vec<String> = upstream::schedule(lane, args.chunks, args.gap_ms)
            .iter()
            .map(u64::to_string)
            .collect();
        providers.push_str(&format!(
            "  - key: {key}\n    endpoint: {endpoint}\n    model: bench-model\n    \
             max_tokens_field: max_tokens\n    auth: {{scheme: none}}\n    extra_headers:\n      \
             x-sim-id: {key}\n      x-sim-schedule: \"{}\"\n",
            gaps.join(",")
        ));
    }
    let (workflow, dir, rounds) = (workflow.clone(), dir.to_path_buf(), args.rounds);
    let written = tokio::task::spawn_blocking(move || {
        workflow.bench_fixture(&BenchFixtureRequest {
            dir: &dir,
            rounds,
            providers_yaml: &providers,
        })
    });
    Ok(written.await??)
}

/// What a layer run drives: the plan's rounds (built and written as a run does), every
/// provider's adapter from the spec, and the contract.
fn layer_work(
    inputs: &openbench_coordinator::RunInputs,
    run: &RunDir,
) -> anyhow::Result<layers::LayerWork> {
    let spec = &inputs.spec.spec;
    let planned = openbench_coordinator::round_jobs::plan_full(inputs, run)?;
    Ok(layers::LayerWork {
        jobs: planned.jobs.into_iter().collect(),
        adapters: spec
            .providers
            .iter()
            .map(|a| (a.key.clone(), Arc::new(a.clone())))
            .collect(),
        contract: spec.request.clone(),
    })
}

fn us(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.0}"))
}

fn run_text(f: &FidelityFigures) -> String {
    let mut out = format!(
        "{}: {}, {} harness errors, {:.1} s, load {} → {}\n",
        f.workload.text(),
        f.run_status,
        f.harness_errors,
        f.cost.wall_seconds,
        load_text(f.load_average_before),
        load_text(f.load_average_after),
    );
    out.push_str("error against the upstream's log, µs:   p50     p99     max    mean (bias)\n");
    let e = &f.errors;
    for (name, s) in [
        ("TTFO", &e.ttfo),
        ("TTFA", &e.ttfa),
        ("E2E", &e.e2e),
        ("E2E − TTFA", &e.e2e_minus_ttfa),
        ("every event", &e.events),
        ("upstream lateness", &e.upstream_lateness),
        ("loopback one-way", &f.loopback_one_way),
    ] {
        out.push_str(&format!(
            "  {name:<36} {:>7} {:>7} {:>7} {:>7}\n",
            us(s.p50_us),
            us(s.p99_us),
            us(s.max_us),
            us(s.mean_us)
        ));
    }
    if e.unmatched > 0 {
        out.push_str(&format!(
            "  {} requests not compared, e.g. {}\n",
            e.unmatched,
            e.unmatched_examples.join("; ")
        ));
    }
    let ms = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.3}"));
    out.push_str(&cost_text(&f.cost));
    out.push_str(&format!(
        "launch skew ms p50 {} p99 {} max {}; coordinator overhead ms p50 {} p99 {} max {}\n",
        ms(f.launch_skew.p50_ms),
        ms(f.launch_skew.p99_ms),
        ms(f.launch_skew.max_ms),
        ms(f.coordinator_overhead.p50_ms),
        ms(f.coordinator_overhead.p99_ms),
        ms(f.coordinator_overhead.max_ms),
    ));
    out
}

fn layer_text(f: &LayerFigures) -> String {
    let mut out = format!(
        "layer {:?}: {}: {} completed, {:.1} reads per request, {:.1} s, load {} → {}\n",
        f.layer,
        f.workload.text(),
        f.completed,
        f.reads_per_request,
        f.cost.wall_seconds,
        load_text(f.load_average_before),
        load_text(f.load_average_after),
    );
    if let Some(failure) = &f.first_failure {
        out.push_str(&format!("  first failure: {failure}\n"));
    }
    out.push_str(&cost_text(&f.cost));
    out
}

fn plan_text(f: &PlanFigures) -> String {
    format!(
        "planned {} requests ({} lanes × {} rounds) in {:.2} s; peak RSS {} (load {})\n",
        f.requests,
        f.lanes,
        f.rounds,
        f.plan_seconds,
        super::bench_meter::megabytes(f.peak_rss_bytes),
        load_text(f.load_average_before),
    )
}
