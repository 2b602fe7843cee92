//! `list-workflows`, `init`, `smoke` and `run`: thin shells over `openbench_coordinator` that load
//! inputs, print the run directory first, show progress, handle Ctrl-C/SIGTERM and print results.

use indicatif::{ProgressBar, ProgressStyle};
use openbench_common::untrusted_text::terminal;
use openbench_common::workflow::{ReportOptions, Workflow};
use openbench_coordinator::{
    FaultPolicy, FullOutcome, Progress, RegionDownPolicy, RunDir, RunInputs, RunOptions, RunStatus,
    StopRequest, locked_spec_path, prepare_inputs_for, run_full, run_smoke,
};
use openbench_inference::targets::LocalTargets;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use tokio::sync::watch;

/// Digest of the sources this binary was built from (see `build.rs`).
pub const CODE_SHA256: &str = env!("OPENBENCH_CODE_SHA256");

/// Arguments of `init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Workflow name.
    #[arg(long, default_value = "micro-single-task")]
    workflow: String,
    /// Spec file (default `workflows/<workflow>/specs/reference.yaml`).
    #[arg(long)]
    spec: Option<PathBuf>,
    /// Run only these providers (comma-separated keys); only their keys are required. A resume
    /// takes the same list.
    #[arg(long, value_delimiter = ',')]
    providers: Vec<String>,
}

/// Arguments of `smoke`.
#[derive(Debug, clap::Args)]
pub struct SmokeArgs {
    /// Workflow name.
    #[arg(long, default_value = "micro-single-task")]
    workflow: String,
    /// Spec file (default: the run's locked spec when resuming, else the bundled reference spec).
    #[arg(long)]
    spec: Option<PathBuf>,
    /// Resume (or continue from `init`) this run directory instead of creating one.
    #[arg(long)]
    run_dir: Option<PathBuf>,
    /// Run only these providers (comma-separated keys); only their keys are required. A resume
    /// takes the same list.
    #[arg(long, value_delimiter = ',')]
    providers: Vec<String>,
}

/// Arguments of `run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Workflow name.
    #[arg(long, default_value = "micro-single-task")]
    workflow: String,
    /// Spec file (default: the run's locked spec when resuming, else the bundled reference spec).
    #[arg(long)]
    spec: Option<PathBuf>,
    /// Resume (or continue from `init`/`smoke`) this run directory instead of creating one.
    #[arg(long)]
    run_dir: Option<PathBuf>,
    /// Run only these providers (comma-separated keys); only their keys are required. A resume
    /// takes the same list.
    #[arg(long, value_delimiter = ',')]
    providers: Vec<String>,
    /// Run the full plan (required).
    #[arg(long)]
    full: bool,
    /// Confirm the full plan's cost (required).
    #[arg(long)]
    approve_full: bool,
    /// Audit id recorded in the run (required).
    #[arg(long)]
    approval_id: Option<String>,
    /// What a region that stays unreachable does: `stop` the sitting (resumable, exit code 75)
    /// or `continue` without it (its lanes are re-run when it is back, or on resume).
    #[arg(long, value_enum, default_value_t = OnRegionDown::Stop)]
    on_region_down: OnRegionDown,
    /// Seconds a region must stay unreachable before `--on-region-down stop` stops the sitting.
    #[arg(long, default_value_t = 60)]
    region_down_after_s: u64,
}

/// `--on-region-down` (docs/faults.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnRegionDown {
    /// Stop the sitting, resumable.
    Stop,
    /// Finish without the region.
    Continue,
}

/// Exit code of a sitting the down policy stopped (EX_TEMPFAIL: try again once the region is
/// back).
pub const EXIT_REGION_DOWN: u8 = 75;
/// Exit code of a run that ended with some failures: incomplete (harness failures left requests
/// unmeasured) or with some of its lanes stopped as unreachable; the rest was measured, resume
/// for the others (docs/faults.md, "Exit codes").
pub const EXIT_SOME_FAILED: u8 = 3;
/// Exit code of a sitting in which every lane was stopped as unreachable, or of a complete run
/// in which not one request completed: nothing was measured (a dead endpoint, a wrong URL).
pub const EXIT_NOTHING_MEASURED: u8 = 4;

/// When the run at `run_dir` holds records and not one of them reached a provider (every one
/// failed at connection level, as the lane guard counts it: a dead endpoint, a wrong URL), one
/// line saying so (the most common failure named); `None` otherwise. A provider that answered,
/// even with errors or streams held past the deadline, was measured.
fn nothing_completed(run_dir: &std::path::Path) -> Option<String> {
    let path = openbench_common::rundir::path(run_dir, openbench_common::rundir::FULL_RESULTS);
    let records = openbench_common::rundir::counting_records(&path).ok()?;
    if records.is_empty()
        || !records
            .values()
            .all(openbench_coordinator::lane_guard::fails_at_connection_level)
    {
        return None;
    }
    let mut by_type: std::collections::BTreeMap<String, usize> = Default::default();
    for r in records.values() {
        let kind = r
            .error_type
            .map_or_else(|| format!("{:?}", r.outcome), |e| format!("{e:?}"));
        *by_type.entry(kind).or_default() += 1;
    }
    let (kind, n) = by_type.iter().max_by_key(|(_, n)| **n)?;
    Some(format!(
        "none of the run's {} requests reached a provider ({n} {kind})",
        records.len()
    ))
}

/// Prints the registered workflows.
pub fn list_workflows() -> anyhow::Result<ExitCode> {
    for w in crate::registry::workflows() {
        println!("{}\t{}", w.name(), w.description());
    }
    Ok(ExitCode::SUCCESS)
}

/// Resolves the spec path: explicit, else the locked one of a resumed run, else the bundled
/// reference spec of the workflow.
fn spec_path(
    workflow: &str,
    spec: Option<PathBuf>,
    run_dir: Option<&Path>,
) -> anyhow::Result<PathBuf> {
    if let Some(spec) = spec {
        return Ok(spec);
    }
    if let Some(dir) = run_dir {
        return Ok(locked_spec_path(dir)?);
    }
    Ok(PathBuf::from(format!(
        "workflows/{workflow}/specs/reference.yaml"
    )))
}

/// Loads spec, dataset and credentials for `workflow` (no network).
pub fn load_inputs(workflow: &str, spec: &Path) -> anyhow::Result<RunInputs> {
    load_inputs_for(workflow, spec, &[])
}

/// [`load_inputs`] for the providers in `only` (every provider when empty): only their
/// credentials are required.
pub fn load_inputs_for(workflow: &str, spec: &Path, only: &[String]) -> anyhow::Result<RunInputs> {
    let workflow: Arc<dyn Workflow> = Arc::from(crate::registry::find(workflow)?);
    let only = (!only.is_empty()).then_some(only);
    Ok(prepare_inputs_for(spec, workflow, CODE_SHA256, only)?)
}

/// ` --providers a,b` when the command was given a provider filter, for the hints it prints.
pub fn providers_flag(only: &[String]) -> String {
    if only.is_empty() {
        String::new()
    } else {
        format!(" --providers {}", only.join(","))
    }
}

/// Runs `init`: validates spec, dataset and credentials and writes the lock of a new run.
pub async fn init(args: InitArgs) -> anyhow::Result<ExitCode> {
    let spec = spec_path(&args.workflow, args.spec, None)?;
    let inputs = load_inputs_for(&args.workflow, &spec, &args.providers)?;
    super::preflight::check(&inputs)?;
    let run = RunDir::create(&inputs, None, "init")?;
    println!("run directory: {}", run.dir.display());
    let names: Vec<&str> = inputs.credentials.names().collect();
    let remote_names = inputs.spec.spec.credential_names();
    if names.is_empty() && !remote_names.is_empty() {
        println!(
            "credentials: none needed here (the remote probes hold {})",
            remote_names.join(", ")
        );
    } else if names.is_empty() {
        println!("credentials: none needed");
    } else {
        println!("credentials present: {}", names.join(", "));
    }
    let lock = &run.lock;
    println!("spec      {} sha256 {}", lock.spec_path, lock.spec_sha256);
    println!("dataset   release {}", lock.dataset_release_hash);
    println!("adapters  sha256 {}", lock.adapters_sha256);
    println!(
        "tokenizer {} sha256 {}",
        lock.tokenizer, lock.tokenizer_ranks_sha256
    );
    println!("code      sha256 {}", lock.code_sha256);
    println!(
        "next: openbench-inference smoke --workflow {} --spec {} --run-dir {}{}",
        args.workflow,
        spec.display(),
        run.dir.display(),
        providers_flag(&args.providers)
    );
    Ok(ExitCode::SUCCESS)
}

/// Runs `smoke`: attempt 1, attempt 2 only if attempt 1 failed.
pub async fn smoke(args: SmokeArgs) -> anyhow::Result<ExitCode> {
    let spec = spec_path(&args.workflow, args.spec, args.run_dir.as_deref())?;
    let inputs = load_inputs_for(&args.workflow, &spec, &args.providers)?;
    if args.run_dir.is_none() {
        super::preflight::check(&inputs)?;
    }
    let run = RunDir::open_or_create(&inputs, args.run_dir.as_deref(), None, "smoke")?;
    println!("run directory: {}", run.dir.display());
    let (options, bar) = sitting_options("smoke", &inputs)?;
    let outcome = run_smoke(&inputs, &run, &options).await;
    bar.finish_and_clear();
    let outcome = outcome?;
    for attempt in &outcome.attempts {
        let verdict = if attempt.passed { "passed" } else { "failed" };
        println!("smoke attempt {}: {verdict}", attempt.attempt);
        for failure in &attempt.failures {
            // A failure quotes the upstream's error body: shown, never obeyed by the terminal.
            println!("  {}", terminal(failure));
        }
    }
    if !outcome.passed {
        // Which URL each provider was sent to, so a 404 names where it came from.
        for p in &inputs.spec.spec.providers {
            println!("  provider {}: {}", p.key, terminal(&p.post_target()));
        }
    }
    if !outcome.finished {
        println!(
            "smoke interrupted; resume with: openbench-inference smoke --workflow {} --spec {} --run-dir {}{}",
            args.workflow,
            spec.display(),
            run.dir.display(),
            providers_flag(&args.providers)
        );
        return Ok(ExitCode::from(130));
    }
    Ok(if outcome.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Runs `run`: refuses without `--full --approve-full --approval-id ID`.
pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let mut missing = Vec::new();
    if !args.full {
        missing.push("--full");
    }
    if !args.approve_full {
        missing.push("--approve-full");
    }
    let approval = args.approval_id.clone().filter(|id| !id.trim().is_empty());
    if approval.is_none() {
        missing.push("--approval-id ID");
    }
    let Some(approval) = approval.filter(|_| missing.is_empty()) else {
        anyhow::bail!(
            "a full run needs --full --approve-full --approval-id ID; missing: {}",
            missing.join(", ")
        );
    };
    let spec = spec_path(&args.workflow, args.spec, args.run_dir.as_deref())?;
    let inputs = load_inputs_for(&args.workflow, &spec, &args.providers)?;
    if args.run_dir.is_none() {
        super::preflight::check(&inputs)?;
    }
    let run = RunDir::open_or_create(&inputs, args.run_dir.as_deref(), Some(&approval), "run")?;
    println!("run directory: {}", run.dir.display());
    let faults = FaultPolicy {
        on_region_down: match args.on_region_down {
            OnRegionDown::Stop => RegionDownPolicy::Stop,
            OnRegionDown::Continue => RegionDownPolicy::Continue,
        },
        stay_down: std::time::Duration::from_secs(args.region_down_after_s),
        ..FaultPolicy::default()
    };
    let outcome = full_run_sitting_with(&inputs, &run, &approval, faults).await;
    let resume = format!(
        "openbench-inference run --workflow {} --spec {} --run-dir {} --full --approve-full --approval-id {approval}{}",
        args.workflow,
        spec.display(),
        run.dir.display(),
        providers_flag(&args.providers)
    );
    let finished = match outcome {
        Ok(outcome) => Ok(finish_full(&inputs, &outcome, &resume).await),
        Err(e) => Err(e),
    };
    let dir = run.dir.clone();
    // Publishing takes the run directory's writer lock: this sitting's must be released first.
    drop(run);
    let publishes = inputs.spec.spec.results.as_ref().is_some_and(|r| r.publish);
    if !publishes {
        return finished;
    }
    let location = std::env::var("OPENBENCH_STORE")
        .unwrap_or_else(|_| super::store::DEFAULT_STORE.to_string());
    let published = tokio::task::spawn_blocking(move || super::store::publish_to(&location, &dir))
        .await
        .map_err(anyhow::Error::from)
        .and_then(|r| r);
    match (finished, published) {
        (finished, Ok(())) => finished,
        (Ok(_), Err(e)) => Err(e.context("the run finished, but publishing it failed")),
        (Err(run_error), Err(e)) => {
            eprintln!(
                "error: publishing the failed run: {}",
                openbench_inference::error_text::error_text(&e)
            );
            Err(run_error)
        }
    }
}

/// Runs (or resumes) the full plan with a progress bar and Ctrl-C/SIGTERM handling; usable by
/// `demo`.
pub async fn full_run_sitting(
    inputs: &RunInputs,
    run: &RunDir,
    approval_id: &str,
) -> anyhow::Result<FullOutcome> {
    full_run_sitting_with(inputs, run, approval_id, FaultPolicy::default()).await
}

/// [`full_run_sitting`] under the fault policy `faults`.
pub async fn full_run_sitting_with(
    inputs: &RunInputs,
    run: &RunDir,
    approval_id: &str,
    faults: FaultPolicy,
) -> anyhow::Result<FullOutcome> {
    let (mut options, bar) = sitting_options("full run", inputs)?;
    options.faults = faults;
    let outcome = run_full(inputs, run, approval_id, &options).await;
    bar.finish_and_clear();
    Ok(outcome?)
}

/// Prints a finished sitting: the report (when complete) or how to resume. Returns the exit code.
pub async fn finish_full(inputs: &RunInputs, outcome: &FullOutcome, resume: &str) -> ExitCode {
    let s = &outcome.sitting;
    println!(
        "session: {} rounds, {} records, {} harness failures",
        s.rounds_executed, s.records_written, s.harness_errors
    );
    for (region, l) in &s.links {
        println!(
            "link {region}: rtt p50 {:.2} ms (min {:.2}, max {:.2}, {} pings); probe clock offset {:+.2} ms ± {:.2}",
            l.rtt_ms_p50,
            l.rtt_ms_min,
            l.rtt_ms_max,
            l.samples,
            l.clock_offset_ms,
            l.clock_offset_error_ms
        );
    }
    for o in &s.outages {
        println!(
            "region {} unreachable: detected {} (last answer {}), {}; {}",
            o.region,
            o.detected_at,
            o.last_ok_at.as_deref().unwrap_or("never"),
            terminal(&o.reason),
            o.restored_at
                .as_deref()
                .map_or("still down at session end".to_string(), |at| format!(
                    "back at {at}"
                ))
        );
    }
    match outcome.status {
        // A run whose report could not be written (disk full, a refused record) did not
        // deliver what it was asked for: the records are safe, `report` can be retried.
        RunStatus::Complete => {
            if print_report(inputs.workflow.clone(), &outcome.run_dir).await {
                match nothing_completed(&outcome.run_dir) {
                    Some(why) => {
                        eprintln!("error: {why}");
                        println!(
                            "exit code {EXIT_NOTHING_MEASURED} (nothing measured: {why}; \
                             docs/faults.md, \"Exit codes\")"
                        );
                        ExitCode::from(EXIT_NOTHING_MEASURED)
                    }
                    None => ExitCode::SUCCESS,
                }
            } else {
                eprintln!(
                    "the run is complete but its report was not written; after fixing the cause: \
                     openbench-inference report --run-dir {}",
                    outcome.run_dir.display()
                );
                ExitCode::FAILURE
            }
        }
        RunStatus::Interrupted => {
            if let openbench_coordinator::SittingStatus::RegionDown(gone) = &s.status {
                eprintln!(
                    "error: region {} unreachable for {} s ({}); stopped (--on-region-down stop)",
                    gone.region,
                    gone.down_for_ms / 1000,
                    terminal(&gone.reason)
                );
                println!(
                    "run stopped: region {} is down; once it is back, resume with:\n  {resume}",
                    gone.region
                );
                return ExitCode::from(EXIT_REGION_DOWN);
            }
            println!("run interrupted; resume with:\n  {resume}");
            ExitCode::from(130)
        }
        RunStatus::Incomplete => {
            let mut code = EXIT_SOME_FAILED;
            if let openbench_coordinator::SittingStatus::LanesStopped { lanes, of } = &s.status {
                for lane in lanes {
                    eprintln!(
                        "error: lane {} unreachable ({}): {} requests in a row failed before \
                         reaching the provider over {:.1} s (last: {}); stopped",
                        lane.lane,
                        lane_target(&inputs.spec.spec, &lane.lane),
                        lane.failures,
                        lane.over_ms as f64 / 1000.0,
                        terminal(&lane.last_error)
                    );
                }
                if lanes.len() >= *of {
                    code = EXIT_NOTHING_MEASURED;
                }
                // What was measured before the stop, failures included, beside the exit code.
                print_report(inputs.workflow.clone(), &outcome.run_dir).await;
                let meaning = if code == EXIT_NOTHING_MEASURED {
                    "nothing measured: every lane unreachable"
                } else {
                    "some failures: some lanes unreachable"
                };
                println!("exit code {code} ({meaning}; docs/faults.md, \"Exit codes\")");
            }
            println!("run not complete (incomplete); once fixed, resume with:\n  {resume}");
            ExitCode::from(code)
        }
        _ => {
            if let openbench_coordinator::SittingStatus::Failed(why) = &s.status {
                eprintln!("error: {}", terminal(why));
            }
            println!(
                "run not complete ({:?}); resume with:\n  {resume}",
                outcome.status
            );
            ExitCode::FAILURE
        }
    }
}

/// The provider of lane `label` (`key` or `key@region`) and where its requests go.
fn lane_target(spec: &openbench_common::spec::Spec, label: &str) -> String {
    let key = label.split('@').next().unwrap_or(label);
    spec.providers.iter().find(|p| p.key == key).map_or_else(
        || format!("provider {key}"),
        |p| format!("provider {key}, {}", p.post_target()),
    )
}

/// Asks the workflow for its report and prints the summary table; returns false (after printing
/// the error) when the report could not be computed or written.
pub async fn print_report(workflow: Arc<dyn Workflow>, run_dir: &Path) -> bool {
    let dir = run_dir.to_path_buf();
    let options = ReportOptions::default();
    let result = tokio::task::spawn_blocking(move || workflow.report(&dir, &options)).await;
    match result {
        Ok(Ok(outcome)) => {
            print!("{}", outcome.summary_table);
            for path in &outcome.written {
                println!("wrote {}", path.display());
            }
            true
        }
        Ok(Err(e)) => {
            eprintln!("error: report: {e}");
            false
        }
        Err(e) => {
            eprintln!("error: report task failed: {e}");
            false
        }
    }
}

/// A progress bar fed by the coordinator, a stop channel fed by Ctrl-C and SIGTERM (the first
/// signal stops after the current round, the second abandons it) and this machine's targets (the
/// simulator and local probes).
fn sitting_options(label: &str, inputs: &RunInputs) -> anyhow::Result<(RunOptions, ProgressBar)> {
    let targets = LocalTargets::for_inputs(inputs)?;
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template(
        "{prefix} [{elapsed_precise}] {bar:30} {pos}/{len} requests {msg} (eta {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_prefix(label.to_string());
    let shown = bar.clone();
    let progress = Arc::new(move |p: &Progress| {
        shown.set_length(p.requests_total as u64);
        shown.set_position(p.requests_done as u64);
        let harness = if p.harness_errors > 0 {
            format!(", {} harness", p.harness_errors)
        } else {
            String::new()
        };
        shown.set_message(format!(
            "· rounds {}/{}{harness}",
            p.rounds_done, p.rounds_total
        ));
    });
    let (tx, rx) = watch::channel(StopRequest::None);
    let notice = bar.clone();
    tokio::spawn(async move {
        let mut count = 0;
        while super::wait_for_signal().await.is_ok() {
            count += 1;
            if count == 1 {
                notice.println("stopping after the current round (Ctrl-C again to abandon it)");
                let _ = tx.send(StopRequest::Finish);
            } else {
                notice.println("abandoning the current round");
                let _ = tx.send(StopRequest::Abandon);
                break;
            }
        }
    });
    let options = RunOptions {
        progress: Some(progress),
        stop: Some(rx),
        targets: Some(Arc::new(targets)),
        faults: FaultPolicy::default(),
    };
    Ok((options, bar))
}
