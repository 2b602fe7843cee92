//! `demo`: the first thing a newcomer runs. The full paired benchmark (600 rounds × 10 providers)
//! against the simulator embedded in this binary, through exactly the path a real run takes
//! (lock, selection, coordinator actor, gRPC probes, fsynced records, reports) — no credentials,
//! no network.

use crate::cmd::runs::{finish_full, full_run_sitting, load_inputs_for, providers_flag};
use openbench_common::rundir as layout;
use openbench_coordinator::RunDir;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// The bundled simulated spec of a workflow, relative to the repository root.
fn simulated_spec(workflow: &str) -> String {
    format!("workflows/{workflow}/specs/simulated.yaml")
}

/// Arguments of `demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Workflow to demonstrate (`load`: a simulated sweep to saturation, about two minutes).
    #[arg(long, default_value = "micro-single-task")]
    workflow: String,
    /// Spec to run (default: the bundled simulated spec).
    #[arg(long)]
    spec: Option<PathBuf>,
    /// Resume this demo run directory instead of starting a new one.
    #[arg(long)]
    run_dir: Option<PathBuf>,
    /// Run only these providers (comma-separated keys); a resume takes the same list.
    #[arg(long, value_delimiter = ',')]
    providers: Vec<String>,
}

/// Runs the demo and prints the summary table and the report paths.
pub async fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    // An unknown name is refused first, listing the known ones (not blamed on the directory).
    crate::registry::find(&args.workflow)?;
    let spec = match args.spec {
        Some(spec) => spec,
        None => bundled_spec(&args.workflow)?,
    };
    let started = Instant::now();
    let inputs = load_inputs_for(&args.workflow, &spec, &args.providers)?;
    let run = RunDir::open_or_create(&inputs, args.run_dir.as_deref(), Some("demo"), "demo")?;
    println!("run directory: {}", run.dir.display());
    println!(
        "demo: {} simulated providers × {}, time-scaled ×{} (spec {})",
        inputs.spec.spec.providers.len(),
        planned_units(&inputs, &run)?,
        inputs
            .spec
            .spec
            .simulator
            .as_ref()
            .map_or(1.0, |s| s.time_scale),
        spec.display()
    );
    let outcome = full_run_sitting(&inputs, &run, "demo").await?;
    let resume = format!(
        "openbench-inference demo --workflow {} --spec {} --run-dir {}{}",
        args.workflow,
        spec.display(),
        run.dir.display(),
        providers_flag(&args.providers)
    );
    let code = finish_full(&inputs, &outcome, &resume).await;
    if code == ExitCode::SUCCESS {
        println!(
            "\nreport.md:   {}\nreport.html: {}\nwall time:   {:.1} s",
            layout::path(&outcome.run_dir, layout::REPORT_MD).display(),
            layout::path(&outcome.run_dir, layout::REPORT_HTML).display(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(code)
}

/// The simulated spec in the current directory's checkout, else in the checkout this binary was
/// built from.
fn bundled_spec(workflow: &str) -> anyhow::Result<PathBuf> {
    let relative = simulated_spec(workflow);
    let here = Path::new(&relative);
    if here.exists() {
        return Ok(here.to_path_buf());
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join(&relative);
    if built.exists() {
        return Ok(built);
    }
    anyhow::bail!(
        "cannot find the bundled spec {relative}: run the demo from the repository root or pass --spec"
    )
}

/// What the first plan holds, in its own units: "N rounds" of paired rounds, or "N load
/// phases" (a saturation search plans its later steps as it runs, so it says so).
fn planned_units(
    inputs: &openbench_coordinator::RunInputs,
    run: &RunDir,
) -> anyhow::Result<String> {
    let plan_inputs = openbench_common::workflow::PlanInputs {
        spec: &inputs.spec.spec,
        dataset: &inputs.dataset,
        run_dir: &run.dir,
    };
    let schedule = inputs.workflow.plan(&plan_inputs, 0)?;
    let units = openbench_coordinator::load::progress::rounds_total(&schedule);
    let paired = schedule
        .phases
        .iter()
        .all(|p| matches!(p, openbench_common::schedule::Phase::PairedRounds(_)));
    Ok(if paired {
        format!("{units} rounds")
    } else {
        format!("{units} load phases planned first (a saturation search adds steps as it runs)")
    })
}
