//! `load` (also `benchmark`): your own endpoint under load in one line, as `vllm bench serve
//! --base-url` and `guidellm benchmark --target` do. It writes the spec it generated into a new
//! run directory (and says where), then runs it as `run --workflow load` would: the run is
//! locked, resumable with `run --run-dir`, and the spec is a starting point to edit. Several
//! `--target`s are lanes of one run, compared step by step in its report.

pub mod paired;
mod spec_text;

use crate::cmd::runs::{finish_full, full_run_sitting, load_inputs};
use anyhow::Context;
use openbench_coordinator::{RunDir, new_run_dir};
use spec_text::{LoadPlan, Sweep, Target};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The spec's file name inside the run directory.
pub const SPEC_FILE: &str = "spec.yaml";
/// The approval id recorded by a run these commands start: typing the command is the approval.
const APPROVAL_ID: &str = "own-endpoint-command";

/// Arguments of `load`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("sweep").required(true).args(["concurrency", "rate", "saturate"])))]
pub struct LoadArgs {
    /// Base URL of an OpenAI-compatible server (`http://localhost:8000/v1`); repeat to compare
    /// several. The adapter adds `/chat/completions`.
    #[arg(long = "target", visible_alias = "base-url", required = true)]
    targets: Vec<String>,
    /// Model id to request: one for every target, or one per target in order.
    #[arg(long = "model", required = true)]
    models: Vec<String>,
    /// Environment variable holding a bearer key: one for every target, or one per target.
    #[arg(long = "api-key-env")]
    api_key_envs: Vec<String>,
    /// A closed-loop sweep: users per target (`1,2,4,8`).
    #[arg(long, visible_alias = "max-concurrency", value_delimiter = ',')]
    concurrency: Vec<u32>,
    /// An open-loop Poisson sweep: requests per second per target (`2,4,8`).
    #[arg(long, visible_alias = "request-rate", value_delimiter = ',')]
    rate: Vec<f64>,
    /// A Poisson saturation search: from --start-rate, doubling to --max-rate, then bisecting.
    #[arg(long)]
    saturate: bool,
    /// First rate of --saturate, requests/s.
    #[arg(long, default_value_t = 1.0)]
    start_rate: f64,
    /// Highest rate of --saturate, requests/s.
    #[arg(long, default_value_t = 256.0)]
    max_rate: f64,
    /// Measured seconds of each step.
    #[arg(long, visible_alias = "max-seconds", default_value_t = 30.0)]
    duration_s: f64,
    /// Warm-up seconds before each step's window (not measured).
    #[arg(long, default_value_t = 5.0)]
    warmup_s: f64,
    /// Cool-down seconds after each step's window.
    #[arg(long, default_value_t = 2.0)]
    cooldown_s: f64,
    /// Prompt length in o200k tokens.
    #[arg(long, visible_alias = "random-input-len", default_value_t = 256)]
    input_tokens: u32,
    /// Answer length in tokens (also the completion ceiling).
    #[arg(long, visible_alias = "random-output-len", default_value_t = 128)]
    output_tokens: u32,
    /// Send `ignore_eos: true` so answers run to --output-tokens (vLLM, SGLang, llama.cpp).
    #[arg(long)]
    ignore_eos: bool,
    /// Client deadline per request, seconds.
    #[arg(long, default_value_t = 20)]
    timeout_s: u64,
    /// Goodput SLO: time to first answer token, ms.
    #[arg(long)]
    slo_ttfa_ms: Option<f64>,
    /// Goodput SLO: end-to-end latency, ms.
    #[arg(long)]
    slo_e2e_ms: Option<f64>,
    /// Goodput SLO: time per output token, ms.
    #[arg(long)]
    slo_tpot_ms: Option<f64>,
    /// Seed of every random draw (arrivals, prompts).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where run directories go (`<run-root>/load/run-…`).
    #[arg(long, default_value = "runs")]
    run_root: PathBuf,
}

/// Runs `load`: writes the spec into a new run directory, then runs it to the report.
pub async fn run(args: LoadArgs) -> anyhow::Result<ExitCode> {
    let plan = plan_of(&args)?;
    let text = spec_text::render(&plan, &command_line());
    run_generated("load", &args.run_root, &text).await
}

/// Writes `text`, a generated spec of `workflow`, into a new run directory under `run_root`,
/// locks the run and runs it to its report; prints the run directory, the spec's path and the
/// commands that resume and re-run it. A spec refused by `init`'s checks leaves nothing behind.
pub async fn run_generated(
    workflow: &str,
    run_root: &Path,
    text: &str,
) -> anyhow::Result<ExitCode> {
    let dir = new_run_dir(&run_root.join(workflow))?;
    let spec = dir.join(SPEC_FILE);
    std::fs::write(&spec, text).with_context(|| format!("writing {}", spec.display()))?;
    let inputs = match load_inputs(workflow, &spec) {
        Ok(inputs) => inputs,
        Err(e) => {
            // Nothing was run: the directory goes, the refusal names each problem.
            let _ = std::fs::remove_file(&spec);
            let _ = std::fs::remove_dir(&dir);
            return Err(e);
        }
    };
    super::preflight::check(&inputs)?;
    let run = RunDir::create_in(&inputs, &dir, Some(APPROVAL_ID), workflow)?;
    println!("run directory: {}", run.dir.display());
    println!(
        "spec:          {} (edit it to change anything; docs/spec.md)",
        spec.display()
    );
    let outcome = full_run_sitting(&inputs, &run, APPROVAL_ID).await?;
    let resume = resume_command(workflow, &spec, &run.dir);
    let code = finish_full(&inputs, &outcome, &resume).await;
    if code == ExitCode::SUCCESS {
        println!(
            "again, from the same spec: openbench-inference run --workflow {workflow} --spec {} \
             --full --approve-full --approval-id ID",
            spec.display()
        );
    }
    Ok(code)
}

/// The command that resumes the run in `dir`.
fn resume_command(workflow: &str, spec: &Path, dir: &Path) -> String {
    format!(
        "openbench-inference run --workflow {workflow} --spec {} --run-dir {} --full \
         --approve-full --approval-id {APPROVAL_ID}",
        spec.display(),
        dir.display()
    )
}

/// The command line as typed, for the spec's first comment (arguments quoted when needed).
pub(crate) fn command_line() -> String {
    let words: Vec<String> = std::env::args()
        .skip(1)
        .map(|a| {
            if a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:,=@".contains(c))
            {
                a
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect();
    format!("openbench-inference {}", words.join(" "))
}

/// One value for every target, or one per target; else an error naming the flag.
pub(crate) fn per_target<'a>(
    flag: &str,
    values: &'a [String],
    targets: usize,
) -> anyhow::Result<Vec<Option<&'a String>>> {
    match values.len() {
        0 => Ok(vec![None; targets]),
        1 => Ok(vec![values.first(); targets]),
        n if n == targets => Ok(values.iter().map(Some).collect()),
        n => anyhow::bail!(
            "{flag}: {n} values for {targets} --target(s); give one for every target or one per target"
        ),
    }
}

/// The plan the command line asks for.
fn plan_of(args: &LoadArgs) -> anyhow::Result<LoadPlan> {
    let n = args.targets.len();
    let models = per_target("--model", &args.models, n)?;
    let keys_env = per_target("--api-key-env", &args.api_key_envs, n)?;
    let mut targets: Vec<Target> = Vec::new();
    for (i, base_url) in args.targets.iter().enumerate() {
        let taken: Vec<String> = targets.iter().map(|t| t.key.clone()).collect();
        targets.push(Target {
            key: spec_text::key_for(base_url, &taken),
            base_url: base_url.clone(),
            model: models
                .get(i)
                .copied()
                .flatten()
                .cloned()
                .unwrap_or_default(),
            api_key_env: keys_env.get(i).copied().flatten().cloned(),
        });
    }
    let sweep = if args.saturate {
        Sweep::Saturate {
            start: args.start_rate,
            max: args.max_rate,
        }
    } else if !args.rate.is_empty() {
        Sweep::Rate(args.rate.clone())
    } else {
        Sweep::Concurrency(args.concurrency.clone())
    };
    let slo = [
        ("ttfa_ms", args.slo_ttfa_ms),
        ("e2e_ms", args.slo_e2e_ms),
        ("tpot_ms", args.slo_tpot_ms),
    ]
    .into_iter()
    .filter_map(|(name, bound)| bound.map(|b| (name, b)))
    .collect();
    Ok(LoadPlan {
        targets,
        sweep,
        warmup_s: args.warmup_s,
        duration_s: args.duration_s,
        cooldown_s: args.cooldown_s,
        input_tokens: args.input_tokens,
        output_tokens: args.output_tokens,
        ignore_eos: args.ignore_eos,
        timeout_ms: args.timeout_s.saturating_mul(1000),
        seed: args.seed,
        slo,
        // The spec lives in <run-root>/load/run-…/: the run root is two folders up.
        run_root: String::from("../.."),
    })
}
