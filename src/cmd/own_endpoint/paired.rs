//! `compare-endpoints` (also `paired`): several OpenAI-compatible endpoints compared in paired
//! rounds on the micro-single-task questions, with exact task success, in one line. Like `load`,
//! it writes the spec it generated into the run directory and runs it as `run` would.

use super::spec_text::{key_for, quoted};
use super::{command_line, per_target, run_generated};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The bundled dataset release, relative to the repository root.
const BUNDLED_DATASET: &str = "data/micro-single-task";

/// Arguments of `compare-endpoints`.
#[derive(Debug, clap::Args)]
pub struct PairedArgs {
    /// Base URL of an OpenAI-compatible server (`http://localhost:8000/v1`); repeat for each
    /// endpoint to compare. The adapter adds `/chat/completions`.
    #[arg(long = "target", visible_alias = "base-url", required = true)]
    targets: Vec<String>,
    /// Model id to request: one for every target, or one per target in order.
    #[arg(long = "model", required = true)]
    models: Vec<String>,
    /// Environment variable holding a bearer key: one for every target, or one per target.
    #[arg(long = "api-key-env")]
    api_key_envs: Vec<String>,
    /// Questions per task family (3 families; every endpoint gets every question, in paired
    /// rounds).
    #[arg(long, default_value_t = 20)]
    items_per_family: u32,
    /// Dataset release folder (default: the bundled `data/micro-single-task`).
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// Where run directories go (`<run-root>/micro-single-task/run-…`).
    #[arg(long, default_value = "runs")]
    run_root: PathBuf,
}

/// Runs `compare-endpoints`.
pub async fn run(args: PairedArgs) -> anyhow::Result<ExitCode> {
    let dataset = match &args.dataset {
        Some(dir) => std::path::absolute(dir)?,
        None => bundled_dataset()?,
    };
    let text = render(&args, &dataset)?;
    run_generated("micro-single-task", &args.run_root, &text).await
}

/// The bundled release in the current directory's checkout, else in the one this binary was
/// built from (absolute: the spec lives in its run directory).
fn bundled_dataset() -> anyhow::Result<PathBuf> {
    let here = Path::new(BUNDLED_DATASET);
    if here.is_dir() {
        return Ok(std::path::absolute(here)?);
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join(BUNDLED_DATASET);
    if built.is_dir() {
        return Ok(built);
    }
    anyhow::bail!("cannot find the bundled dataset {BUNDLED_DATASET}: pass --dataset DIR")
}

/// The spec text: the three families, the benchmark contract, one provider per target.
fn render(args: &PairedArgs, dataset: &Path) -> anyhow::Result<String> {
    let n = args.targets.len();
    let models = per_target("--model", &args.models, n)?;
    let keys_env = per_target("--api-key-env", &args.api_key_envs, n)?;
    let mut out = String::new();
    let _ = writeln!(out, "# Written by: {}", command_line());
    out.push_str(
        "# Edit and run again with: openbench-inference run --spec <this file> --full \
         --approve-full --approval-id ID (every field: docs/spec.md)\n\
         benchmark:\n  families: [meeting-notes-lookup, ticket-triage, contract-terms-extraction]\n\
         request:\n  reasoning_effort: low\n\nproviders:\n",
    );
    let mut keys: Vec<String> = Vec::new();
    for (i, base_url) in args.targets.iter().enumerate() {
        let key = key_for(base_url, &keys);
        let _ = writeln!(out, "  - key: {}", quoted(&key));
        let _ = writeln!(out, "    endpoint: {}", quoted(base_url));
        let model = models
            .get(i)
            .copied()
            .flatten()
            .cloned()
            .unwrap_or_default();
        let _ = writeln!(out, "    model: {}", quoted(&model));
        if let Some(var) = keys_env.get(i).copied().flatten() {
            let _ = writeln!(out, "    auth: {{scheme: bearer, env: {}}}", quoted(var));
        }
        keys.push(key);
    }
    let _ = writeln!(
        out,
        "\ndataset:\n  source: {}\n  manifest: manifest.json\n",
        quoted(&dataset.to_string_lossy())
    );
    let _ = writeln!(
        out,
        "plans:\n  full_items_per_family: {}\n  smoke_items_per_family: 1\n  smoke_max_attempts: 2\n",
        args.items_per_family
    );
    out.push_str("run_root: \"../..\"\n");
    Ok(out)
}
