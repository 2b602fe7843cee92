//! `publish`, `history` and `export`: the results store from the command line
//! (docs/results-store.md). The store is a SQLite file path or a PostgreSQL URL, from `--store`
//! or `OPENBENCH_STORE`; a URL's password never appears in any message.

use anyhow::Context;
use openbench_common::rundir::{self, RunLock, read_json};
use openbench_common::spec::{RegressionRule, Spec};
use openbench_micro_single_task::compare::CompareOptions;
use openbench_store::Store;
use openbench_store::export::Format;
use openbench_store::history::{self, HistoryOptions};
use openbench_store::publish::Published;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where the store is when neither `--store` nor `OPENBENCH_STORE` says.
pub const DEFAULT_STORE: &str = "openbench-results.sqlite";

/// The store option every store command shares.
#[derive(Debug, clap::Args)]
pub struct StoreArg {
    /// The results store: a SQLite file path (created if absent) or a `postgres://` URL.
    #[arg(long = "store", env = "OPENBENCH_STORE", default_value = DEFAULT_STORE, hide_env_values = true)]
    pub location: String,
}

/// Arguments of `publish`.
#[derive(Debug, clap::Args)]
pub struct PublishArgs {
    /// The run directory to publish.
    #[arg(long)]
    run_dir: PathBuf,
    #[command(flatten)]
    store: StoreArg,
}

/// Arguments of `history`.
#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Folder to write `history.md` and `history.html` into (created if needed).
    #[arg(long, default_value = ".")]
    out: PathBuf,
    /// The spec whose `results.regression` rule applies (else the defaults: 10%, 2 points).
    #[arg(long)]
    spec: Option<PathBuf>,
    /// Exit with status 3 when any regression is found.
    #[arg(long)]
    fail_on_regression: bool,
    /// The workflow whose runs to read.
    #[arg(long, default_value = "micro-single-task")]
    workflow: String,
    /// Compare the latest complete run with this stored complete run (its id) instead of each
    /// complete run with the previous one.
    #[arg(long, value_name = "RUN_ID")]
    baseline: Option<String>,
    /// Bootstrap replicates per run.
    #[arg(long, default_value_t = 1000)]
    replicates: usize,
    /// Seed of the bootstrap resampling.
    #[arg(long, default_value_t = 20_261_201)]
    seed: u64,
}

/// Arguments of `export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    store: StoreArg,
    /// `csv` or `parquet`.
    #[arg(long, value_parser = ["csv", "parquet"])]
    format: String,
    /// Folder to write one file per table into (created if needed).
    #[arg(long, default_value = "export")]
    out: PathBuf,
}

/// The exit status of `history --fail-on-regression` when it finds one.
pub const REGRESSION_EXIT: u8 = 3;

/// Opens the store; every error names it (scheme, host, port and database, or the path), or the
/// form a refused location was read as, and never its password.
fn open(location: &str) -> anyhow::Result<Store> {
    Ok(Store::open(location)?)
}

/// Publishes `run_dir` to the store at `location`; prints what happened. The run's workflow
/// (named by its lock) comes from the registry, so the store reaches a load run's figures through
/// the `Workflow` trait only.
pub fn publish_to(location: &str, run_dir: &Path) -> anyhow::Result<()> {
    let lock = read_json::<RunLock>(&rundir::path(run_dir, rundir::RUN_LOCK));
    let workflow = match lock {
        Ok(lock) => crate::registry::find(&lock.workflow)?,
        // An unreadable lock: the store's verification refuses it, naming the run directory.
        Err(_) => Box::new(openbench_micro_single_task::MicroSingleTask),
    };
    let mut store = open(location)?;
    let started = std::time::Instant::now();
    let outcome = openbench_store::publish::publish(&mut store, run_dir, workflow.as_ref())?;
    let what = match outcome.published {
        Published::Added => "published",
        Published::Unchanged => "already published, unchanged",
        Published::Replaced => "published, replacing its earlier unfinished publication",
    };
    println!(
        "{what}: run {} ({}, {} requests) to {} in {:.2} s",
        outcome.run_id,
        outcome.status,
        outcome.requests,
        store.name(),
        started.elapsed().as_secs_f64()
    );
    if !outcome.integrity.is_empty() {
        println!("{}", outcome.integrity);
    }
    Ok(())
}

/// Runs `publish`.
pub async fn publish(args: PublishArgs) -> anyhow::Result<ExitCode> {
    tokio::task::spawn_blocking(move || publish_to(&args.store.location, &args.run_dir)).await??;
    Ok(ExitCode::SUCCESS)
}

/// Runs `history`: exit 0, or [`REGRESSION_EXIT`] with `--fail-on-regression` and a regression.
pub async fn history(args: HistoryArgs) -> anyhow::Result<ExitCode> {
    if args.replicates == 0 {
        anyhow::bail!("--replicates must be at least 1");
    }
    let rule = match &args.spec {
        Some(path) => {
            let bytes = openbench_common::input_file::read_regular(
                path,
                openbench_common::input_file::SPEC_BYTES,
            )
            .with_context(|| format!("reading spec {}", path.display()))?;
            Spec::parse(path, &bytes)?
                .results
                .map(|r| r.regression)
                .unwrap_or_default()
        }
        None => RegressionRule::default(),
    };
    let options = HistoryOptions {
        rule,
        compare: CompareOptions {
            replicates: args.replicates,
            seed: args.seed,
        },
        baseline: args.baseline.clone(),
    };
    let (runs, regressions) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let mut store = open(&args.store.location)?;
        let (md_text, html_text, runs, regressions) =
            if history::load_history::is_load_workflow(&mut store, &args.workflow)? {
                let found = history::load_history::compute(
                    &mut store,
                    &args.workflow,
                    options.rule,
                    options.baseline,
                )?;
                (
                    history::load_render::markdown(&found),
                    history::load_render::html(&found),
                    found.runs.len(),
                    found.regressions.len(),
                )
            } else {
                let found = history::compute(&mut store, &args.workflow, options)?;
                (
                    history::render::markdown(&found),
                    history::render::html(&found),
                    found.runs.len(),
                    found.regressions.len(),
                )
            };
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("creating {}", args.out.display()))?;
        let md = args.out.join("history.md");
        let html = args.out.join("history.html");
        openbench_common::rundir::write_atomic(&md, md_text.as_bytes())?;
        openbench_common::rundir::write_atomic(&html, html_text.as_bytes())?;
        println!("wrote {}", md.display());
        println!("wrote {}", html.display());
        Ok((runs, regressions))
    })
    .await??;
    println!("{runs} run(s), {regressions} regression(s)");
    if args.fail_on_regression && regressions > 0 {
        return Ok(ExitCode::from(REGRESSION_EXIT));
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `export`.
pub async fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let format = if args.format == "csv" {
        Format::Csv
    } else {
        Format::Parquet
    };
    let written = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let mut store = open(&args.store.location)?;
        Ok(openbench_store::export::export(
            &mut store, format, &args.out,
        )?)
    })
    .await??;
    for (path, rows) in written {
        println!("wrote {} ({rows} rows)", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
