//! `dataset generate` and `dataset validate`: a workflow's corpus, through the registry
//! (`Workflow::generate_dataset`, `Workflow::validate_dataset`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// `dataset` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum DatasetCommand {
    /// Generate the release (or the public sample) deterministically from a seed.
    Generate {
        /// Workflow whose corpus to generate.
        #[arg(long, default_value = "micro-single-task")]
        workflow: String,
        /// Output folder (created if missing); its manifest and family files are overwritten.
        #[arg(long)]
        out: PathBuf,
        /// Generator seed; by default the workflow's own, which the committed release uses.
        #[arg(long)]
        seed: Option<u64>,
        /// Write the 13/6/10-row public sample (`pub-` ids, status "sample") instead.
        #[arg(long)]
        public_sample: bool,
    },
    /// Validate a release: manifest, hashes, every row; then recount tokens and re-derive gold.
    Validate {
        /// Workflow whose release this is.
        #[arg(long, default_value = "micro-single-task")]
        workflow: String,
        /// Release folder.
        #[arg(long)]
        dir: PathBuf,
        /// Manifest file name inside the folder.
        #[arg(long, default_value = "manifest.json")]
        manifest: String,
        /// Skip the token recount and the rule-based gold re-check (for foreign corpora).
        #[arg(long)]
        contract_only: bool,
    },
}

/// Runs a `dataset` subcommand.
pub async fn run(command: DatasetCommand) -> anyhow::Result<ExitCode> {
    match command {
        DatasetCommand::Generate {
            workflow,
            out,
            seed,
            public_sample,
        } => {
            let workflow = crate::registry::find(&workflow)?;
            let started = Instant::now();
            let (generated, out) = tokio::task::spawn_blocking(move || {
                workflow
                    .generate_dataset(&out, seed, public_sample)
                    .map(|g| (g, out))
            })
            .await??;
            println!(
                "wrote {} (seed {}, release hash {}) in {:.2} s",
                out.display(),
                generated.seed,
                generated.release_hash,
                started.elapsed().as_secs_f64()
            );
            print!("{}", generated.details);
            Ok(ExitCode::SUCCESS)
        }
        DatasetCommand::Validate {
            workflow,
            dir,
            manifest,
            contract_only,
        } => {
            let workflow = crate::registry::find(&workflow)?;
            let result = tokio::task::spawn_blocking(move || {
                workflow.validate_dataset(&dir, &manifest, contract_only)
            })
            .await?;
            match result {
                Ok(description) => {
                    print!("{description}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    eprintln!("{e}");
                    Ok(ExitCode::from(1))
                }
            }
        }
    }
}
