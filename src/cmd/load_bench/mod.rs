//! `bench load-generator`: how much load one process drives (issue 25 item 7). Each step is a
//! load-workflow run of its own (`workflows/load`), through the real runner: the coordinator,
//! the in-process probe over gRPC and the writer thread, against `sim serve` child processes
//! that stream every request on one fixed schedule (`x-sim-schedule`: a role chunk, `--chunks`
//! answer pieces, the finish chunk and `[DONE]`), so the upstream's CPU stays out of the
//! measured process. Closed loops at each of `--users`, then constant-rate open loops at each
//! of `--rates`, then each sample trace of `--traces` replayed time-scaled on one lane against
//! the in-process simulator ([`trace`]: its figures and its check that the replay is the file's).
//!
//! Per step: planned against sent requests, the achieved rate, the peak in flight (from the
//! records: each request spans its send to its end), the send lag (the records'
//! `send_lag_ms`: actual dispatch − scheduled release) p50/p99/max over the measured window,
//! CPU seconds per 1,000 requests and peak RSS of this process over the whole run, failures by
//! class, the 1-minute load average; then the summary ([`figures::Summary`]).

mod figures;
mod trace;

use super::bench_meter::{Cost, Meter, cost_text, load_average, load_text, print_figures};
use super::sim_upstream::{self as upstream, Upstream};
use anyhow::Context;
use figures::{SEND_LAG_BOUND_MS, StepOutcome, Summary, Traffic};
use openbench_coordinator::{RunDir, RunOptions, run_full};
use openbench_inference::targets::LocalTargets;
use openbench_load::arrivals::OpenSchedule;
use openbench_load::spec::LoadSection;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use trace::{TraceFigures, TraceSample};

/// Arguments of `bench load-generator`.
#[derive(Debug, clap::Args)]
pub struct LoadBenchArgs {
    /// Closed-loop steps: users per lane, comma-separated (`--users` with no value for none).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_values_t = [100u32, 300, 1000])]
    users: Vec<u32>,
    /// Open-loop steps: constant rates per lane, requests/s, comma-separated (`--rates` with no
    /// value for none).
    #[arg(long, value_delimiter = ',', num_args = 0.., default_values_t = [100.0f64, 200.0, 300.0, 500.0])]
    rates: Vec<f64>,
    /// Trace steps: the sample traces to replay, comma-separated (`--traces` with no value for
    /// none), each on one lane against the in-process simulator.
    #[arg(long, value_enum, value_delimiter = ',', num_args = 0.., default_values_t = [TraceSample::Azure, TraceSample::Mooncake])]
    traces: Vec<TraceSample>,
    /// The trace steps' `time_scale`: each recorded offset × this (0.1: ten times the pace).
    #[arg(long, default_value_t = trace::DEFAULT_TIME_SCALE)]
    trace_time_scale: f64,
    /// Lanes (providers), each driven at the step's load; figures are pooled over them.
    #[arg(long, default_value_t = 1)]
    lanes: usize,
    /// Seconds of load before each step's measured window.
    #[arg(long, default_value_t = 1.0)]
    warmup_s: f64,
    /// Seconds of each step's measured window.
    #[arg(long, default_value_t = 4.0)]
    duration_s: f64,
    /// Answer pieces per stream.
    #[arg(long, default_value_t = 30)]
    chunks: usize,
    /// Mean gap between answer pieces, ms (each gap is drawn from 1 to 2·gap − 1, the same
    /// schedule for every request of a lane).
    #[arg(long, default_value_t = 20)]
    gap_ms: u64,
    /// Upstream simulator processes the lanes' connections are spread over (round robin by
    /// lane; with one lane, one is used).
    #[arg(long, default_value_t = 2)]
    upstreams: usize,
    /// The open-loop steps' in-flight bound per lane (`load.max_in_flight`).
    #[arg(long, default_value_t = openbench_load::spec::DEFAULT_MAX_IN_FLIGHT)]
    max_in_flight: u32,
    /// Keep every step's run directory here instead of a temporary directory.
    #[arg(long)]
    keep: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// One step's load: a closed loop of users or an open loop at a constant rate, per lane, or a
/// sample trace replayed on one lane.
#[derive(Debug, Clone, Copy)]
enum Load {
    Closed(u32),
    Open(f64),
    Trace(TraceSample),
}

/// Output ceiling of the bench's requests (`request.max_output_tokens`): above every sample
/// trace's output length.
const MAX_OUTPUT_TOKENS: u32 = 64;

/// What one step measured.
#[derive(Debug, Serialize)]
struct StepFigures {
    /// `closed`, `open` or `trace`.
    kind: &'static str,
    /// Closed loop: users per lane.
    users_per_lane: Option<u32>,
    /// Open loop: rate per lane, requests/s.
    rate_per_lane_per_s: Option<f64>,
    /// The step's load over every lane: users, or requests/s (a trace: its planned mean rate).
    total_load: f64,
    run_status: String,
    load_average_before: Option<f64>,
    load_average_after: Option<f64>,
    #[serde(flatten)]
    traffic: Traffic,
    #[serde(flatten)]
    cost: Cost,
    /// A trace step: its density and whether its replay is the file's.
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<TraceFigures>,
}

/// What the whole bench measured.
#[derive(Debug, Serialize)]
struct BenchFigures {
    mode: &'static str,
    lanes: usize,
    chunks: usize,
    gap_ms: u64,
    /// Length of every stream's schedule (role chunk to last answer piece), ms.
    stream_ms: u64,
    upstream_processes: usize,
    warmup_s: f64,
    duration_s: f64,
    max_in_flight: u32,
    trace_time_scale: f64,
    steps: Vec<StepFigures>,
    summary: Summary,
}

/// Runs `bench load-generator`.
pub async fn run(args: LoadBenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.lanes > 0, "--lanes must be at least 1");
    anyhow::ensure!(args.chunks > 0, "--chunks must be at least 1");
    anyhow::ensure!(args.upstreams > 0, "--upstreams must be at least 1");
    anyhow::ensure!(args.gap_ms > 0, "--gap-ms must be at least 1");
    anyhow::ensure!(
        !(args.users.is_empty() && args.rates.is_empty() && args.traces.is_empty()),
        "give at least one of --users, --rates and --traces"
    );
    let needed = u64::from(
        args.users
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .max(args.max_in_flight),
    ) * args.lanes as u64;
    if let Some(warning) = openbench_inference::open_files::raise_limit(needed * 2 + 256) {
        eprintln!("warning: {warning}");
    }
    // Loaded once per process: outside every step's measured window.
    tokio::task::spawn_blocking(openbench_common::tokenizer::warm_up).await?;
    let temporary = tempfile::tempdir().context("cannot create a temporary directory")?;
    let root = args.keep.clone().unwrap_or(temporary.path().to_path_buf());
    // Trace steps need none (they run on the in-process simulator).
    let scripted = !(args.users.is_empty() && args.rates.is_empty());
    let count = if scripted {
        args.upstreams.min(args.lanes)
    } else {
        0
    };
    let upstreams: Vec<Upstream> = (0..count)
        .map(|_| Upstream::start())
        .collect::<anyhow::Result<_>>()?;
    let endpoints: Vec<String> = upstreams.iter().map(Upstream::endpoint).collect();
    let loads = args
        .users
        .iter()
        .map(|&u| Load::Closed(u))
        .chain(args.rates.iter().map(|&r| Load::Open(r)))
        .chain(args.traces.iter().map(|&t| Load::Trace(t)));
    let mut steps = Vec::new();
    let mut outcomes = Vec::new();
    for (i, load) in loads.enumerate() {
        let dir = root.join(format!("step-{i}"));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let step = run_step(&args, &dir, &endpoints, load).await?;
        if !args.json {
            print!("{}", step_text(&step));
        }
        // A trace step counts in neither summary figure (no rate asked, no users).
        outcomes.push(StepOutcome {
            rate_per_s: (step.kind == "open").then_some(step.total_load),
            users: (step.kind == "closed").then_some(step.total_load as u64),
            traffic: step.traffic.clone(),
        });
        steps.push(step);
    }
    drop(upstreams);
    let figures = BenchFigures {
        mode: "load-generator",
        lanes: args.lanes,
        chunks: args.chunks,
        gap_ms: args.gap_ms,
        stream_ms: upstream::schedule(0, args.chunks, args.gap_ms).iter().sum(),
        upstream_processes: endpoints.len(),
        warmup_s: args.warmup_s,
        duration_s: args.duration_s,
        max_in_flight: args.max_in_flight,
        trace_time_scale: args.trace_time_scale,
        summary: Summary::of(&outcomes),
        steps,
    };
    let complete = figures
        .steps
        .iter()
        .all(|s| s.run_status == "complete" && s.trace.as_ref().is_none_or(|t| t.sequence_equal));
    if args.json {
        print_figures(true, &figures, String::new())?;
    } else {
        print!("{}", summary_text(&figures.summary, &figures.steps));
    }
    temporary
        .close()
        .context("cannot remove the temporary directory")?;
    Ok(if complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Runs one step as a load-workflow run of its own in `dir` and reads its records back.
async fn run_step(
    args: &LoadBenchArgs,
    dir: &Path,
    endpoints: &[String],
    load: Load,
) -> anyhow::Result<StepFigures> {
    let entries = match load {
        Load::Trace(sample) => {
            sample.write_into(dir)?;
            sample.entries(MAX_OUTPUT_TOKENS)?
        }
        Load::Closed(_) | Load::Open(_) => Vec::new(),
    };
    let section = load_section(args, load, entries.len())?;
    let spec = write_spec(dir, &providers(args, endpoints, load)?, &section)?;
    let inputs = super::runs::load_inputs("load", &spec)?;
    let run = RunDir::create(&inputs, Some("load-bench"), "bench")?;
    let options = RunOptions {
        progress: None,
        stop: None,
        targets: Some(Arc::new(LocalTargets::new(Vec::new()))),
        faults: Default::default(),
    };
    let load_before = load_average();
    let meter = Meter::start();
    let outcome = run_full(&inputs, &run, "load-bench", &options).await?;
    let cost = meter.stop(outcome.sitting.records_written);
    let load_after = load_average();
    let run_dir = run.dir.clone();
    drop(run);
    let results = openbench_load::run::load_results(&run_dir)?;
    let [step] = results.steps.as_slice() else {
        anyhow::bail!(
            "{}: {} steps in the records, expected 1",
            run_dir.display(),
            results.steps.len()
        );
    };
    let lanes = match load {
        Load::Trace(_) => 1,
        Load::Closed(_) | Load::Open(_) => args.lanes,
    };
    let planned = match load {
        Load::Closed(_) => None,
        Load::Open(_) | Load::Trace(_) => {
            let traces = openbench_load::trace::read_traces(&section, dir, MAX_OUTPUT_TOKENS)
                .map_err(|problems| anyhow::anyhow!(problems.join("; ")))?;
            let steps = section.sweep_steps(&traces);
            let releases = steps
                .first()
                .and_then(|s| OpenSchedule::new(s, section.seed))
                .map_or(0, |s| s.releases().count());
            Some((releases * lanes) as u64)
        }
    };
    let traffic = Traffic::of(&step.samples, &step.window, planned, step.harness_failures);
    let trace = match load {
        Load::Trace(sample) => {
            let records = openbench_common::rundir::counting_records(
                &openbench_common::rundir::layout::path(
                    &run_dir,
                    openbench_common::rundir::layout::FULL_RESULTS,
                ),
            )?;
            let mut mine: Vec<_> = records.values().filter(|r| r.phase == Some(0)).collect();
            mine.sort_by_key(|r| r.sequence);
            let scale = args.trace_time_scale;
            Some(TraceFigures::of(
                sample,
                scale,
                &entries,
                &mine,
                &step.samples,
                &traffic,
            ))
        }
        Load::Closed(_) | Load::Open(_) => None,
    };
    let n = lanes as f64;
    let (kind, users, rate, total_load) = match load {
        Load::Closed(u) => ("closed", Some(u), None, f64::from(u) * n),
        Load::Open(r) => ("open", None, Some(r), r * n),
        Load::Trace(_) => (
            "trace",
            None,
            None,
            trace
                .as_ref()
                .and_then(|t| t.density.mean_per_s)
                .unwrap_or(0.0),
        ),
    };
    Ok(StepFigures {
        kind,
        users_per_lane: users,
        rate_per_lane_per_s: rate,
        total_load,
        run_status: format!("{:?}", outcome.status).to_lowercase(),
        load_average_before: load_before,
        load_average_after: load_after,
        traffic,
        cost,
        trace,
    })
}

/// The `load:` section of one step: its one load, a synthetic workload of 20-token prompts.
/// Closed and open loops take the bench's phases (no cool-down); a trace step measures every
/// one of its `requests` (its window ends just after the last is due) with its answers held
/// to the file's lengths (`ignore_eos`).
fn load_section(args: &LoadBenchArgs, load: Load, requests: usize) -> anyhow::Result<LoadSection> {
    let (step, measure, warmup_s) = match load {
        Load::Closed(users) => (
            serde_json::json!({"model": "closed", "concurrency": users}),
            serde_json::json!({"duration_s": args.duration_s}),
            args.warmup_s,
        ),
        Load::Open(rate) => (
            serde_json::json!({"model": "constant", "rate_per_s": rate}),
            serde_json::json!({"duration_s": args.duration_s}),
            args.warmup_s,
        ),
        Load::Trace(sample) => (
            serde_json::json!({"model": "trace", "path": sample.file_name(),
                "format": sample.format_name(), "time_scale": args.trace_time_scale}),
            serde_json::json!({"requests": requests}),
            0.0,
        ),
    };
    let mut section = serde_json::json!({
        "seed": 1,
        "phases": {
            "warmup_s": warmup_s,
            "measure": measure,
            "cooldown_s": 0.0
        },
        "steps": [step],
        "max_in_flight": args.max_in_flight,
        "workload": {
            "kind": "synthetic",
            "input_tokens": {"dist": "fixed", "tokens": 20},
            "output_tokens": {"dist": "fixed", "tokens": 32}
        }
    });
    if let Load::Trace(_) = load {
        section["ignore_eos"] = serde_json::json!([TRACE_PROVIDER]);
    }
    Ok(serde_json::from_value(section)?)
}

/// The provider key of a trace step's one lane.
const TRACE_PROVIDER: &str = "trace";

/// The spec's `providers:` lines. Closed and open loops: one provider per lane, each on one of
/// `endpoints` (round robin), its requests streamed on its lane's fixed schedule. A trace step:
/// one provider on the in-process simulator, which streams each answer to its `max_tokens` and,
/// with its `usage-chunk` quirk, reports usage (its completion tokens: the output length asked).
fn providers(args: &LoadBenchArgs, endpoints: &[String], load: Load) -> anyhow::Result<String> {
    if let Load::Trace(_) = load {
        return Ok(format!(
            "  - key: {TRACE_PROVIDER}\n    endpoint: sim://plain\n    model: bench-model\n    \
             max_tokens_field: max_tokens\n    auth: {{scheme: none}}\n    \
             extra_headers: {{x-sim-quirk: usage-chunk}}\n"
        ));
    }
    let mut text = String::new();
    for lane in 0..args.lanes {
        let endpoint = endpoints
            .get(lane % endpoints.len().max(1))
            .context("no upstream")?;
        let gaps: Vec<String> = upstream::schedule(lane, args.chunks, args.gap_ms)
            .iter()
            .map(u64::to_string)
            .collect();
        text.push_str(&format!(
            "  - key: lane-{lane:04}\n    endpoint: {endpoint}\n    model: bench-model\n    \
             max_tokens_field: max_tokens\n    auth: {{scheme: none}}\n    extra_headers:\n      \
             x-sim-schedule: \"{}\"\n",
            gaps.join(",")
        ));
    }
    Ok(text)
}

/// Writes the step's spec into `dir`: `providers` and the section.
fn write_spec(dir: &Path, providers: &str, section: &LoadSection) -> anyhow::Result<PathBuf> {
    let mut text = format!(
        "benchmark: {{slug: bench-load-generator, workflow: load, schedule_version: bench-load-v1}}\n\
         request: {{temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,\n  \
         max_output_tokens: {MAX_OUTPUT_TOKENS}, response_format: json_object, timeout_ms: 60000,\n  \
         harness_grace_ms: 60000}}\nproviders:\n{providers}"
    );
    // The simulator's settings serve only a trace step's `sim://` provider (real time). JSON is
    // YAML: the section as the bench built it.
    text.push_str(&format!(
        "dataset: {{source: ., manifest: none}}\nsimulator: {{time_scale: 1.0, seed: 1}}\n\
         run_root: runs\nload: {}\n",
        serde_json::to_string(section)?
    ));
    let path = dir.join("spec.yaml");
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

fn ms(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.3}"))
}

fn step_text(s: &StepFigures) -> String {
    let t = &s.traffic;
    let load = match (&s.trace, s.kind) {
        (Some(tr), _) => trace_text(tr),
        (None, "closed") => format!("closed loop, {} users", s.total_load),
        (None, _) => format!("open loop, {}/s", s.total_load),
    };
    let planned = t.planned.map_or("–".into(), |p| p.to_string());
    let mut out = format!(
        "{load}: {}, planned {planned}, sent {}, measured {}, achieved {:.1}/s, peak in flight {}, \
         {:.1} s, load {} → {}\n",
        s.run_status,
        t.sent,
        t.measured,
        t.achieved_per_s,
        t.peak_in_flight,
        s.cost.wall_seconds,
        load_text(s.load_average_before),
        load_text(s.load_average_after),
    );
    if let Some(lag) = &t.send_lag {
        out.push_str(&format!(
            "  send lag ms p50 {} p99 {} max {} (n {})\n",
            ms(lag.p50_ms),
            ms(lag.p99_ms),
            ms(lag.max_ms),
            lag.n
        ));
    }
    if !t.clean() {
        let classes: Vec<String> = t
            .failures
            .iter()
            .map(|(class, n)| format!("{class:?} {n}"))
            .collect();
        out.push_str(&format!(
            "  failures: {}; harness failures {}\n",
            classes.join(", "),
            t.harness_failures
        ));
    }
    if let Some(tr) = &s.trace {
        out.push_str(&format!(
            "  replay equals the file (arrival offsets to the ns, input and output lengths, in \
             order): {}; send lag p99 ≤ {SEND_LAG_BOUND_MS} ms: {}\n",
            if tr.sequence_equal { "yes" } else { "NO" },
            tr.send_lag_target
        ));
        for m in &tr.first_mismatches {
            out.push_str(&format!("    {m}\n"));
        }
    }
    out.push_str("  ");
    out.push_str(&cost_text(&s.cost));
    out
}

/// A trace step's heading: the file, the scale and the replay's density.
fn trace_text(t: &TraceFigures) -> String {
    let d = &t.density;
    format!(
        "trace {} ×{}, {} requests over {:.1} ms ({} mean, {:.0}/s in the fullest 100 ms)",
        t.file,
        t.time_scale,
        d.requests,
        d.span_ms,
        d.mean_per_s.map_or("–".into(), |r| format!("{r:.0}/s")),
        d.peak_per_s,
    )
}

fn summary_text(s: &Summary, steps: &[StepFigures]) -> String {
    let traces: String = steps
        .iter()
        .filter_map(|step| step.trace.as_ref().map(|t| (step, t)))
        .map(|(step, t)| {
            let p99 = step.traffic.send_lag.as_ref().and_then(|l| l.p99_ms);
            format!(
                "trace {} ×{}: send lag p99 {} ms, target ≤ {} ms {}; replay equals the file: {}\n",
                t.file,
                t.time_scale,
                ms(p99),
                s.send_lag_bound_ms,
                t.send_lag_target,
                if t.sequence_equal { "yes" } else { "NO" },
            )
        })
        .collect();
    traces
        + &format!(
            "highest open-loop rate with send lag p99 ≤ {} ms and no failure: {}\n\
         highest concurrency with every user in flight and no failure: {}\n",
            s.send_lag_bound_ms,
            s.highest_open_rate_per_s
                .map_or("none".into(), |r| format!("{r}/s")),
            s.highest_concurrency
                .map_or("none".into(), |u| u.to_string()),
        )
}
