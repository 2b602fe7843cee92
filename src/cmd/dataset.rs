//! `dataset generate` and `dataset validate`: the synthetic micro-single-task corpus.

use openbench_micro_single_task::dataset::{self, generate};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// `dataset` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum DatasetCommand {
    /// Generate the release (or the public sample) deterministically from a seed.
    Generate {
        /// Output folder (created if missing); its manifest and family files are overwritten.
        #[arg(long)]
        out: PathBuf,
        /// Generator seed; the committed release uses the default.
        #[arg(long, default_value_t = generate::DEFAULT_SEED)]
        seed: u64,
        /// Write the 13/6/10-row public sample (`pub-` ids, status "sample") instead.
        #[arg(long)]
        public_sample: bool,
    },
    /// Validate a release: manifest, hashes, every row; then recount tokens and re-derive gold.
    Validate {
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
            out,
            seed,
            public_sample,
        } => {
            let started = Instant::now();
            let generated = tokio::task::spawn_blocking(move || {
                generate::generate(&out, seed, public_sample).map(|g| (g, out))
            })
            .await??;
            let (generated, out) = generated;
            println!(
                "wrote {} (seed {seed}, release hash {}) in {:.2} s",
                out.display(),
                generated.manifest.release_hash,
                started.elapsed().as_secs_f64()
            );
            for s in &generated.stats {
                println!(
                    "  {:<26} rows {:>3}  bytes {:>8}  tokens min/median/max {}/{}/{} (band {}..={})  rejected: extractor {}, band {}",
                    s.family.as_str(),
                    s.rows,
                    s.bytes,
                    s.tokens_min,
                    s.tokens_median,
                    s.tokens_max,
                    s.band.min,
                    s.band.max,
                    s.rejected_by_extractor,
                    s.rejected_by_band
                );
                for reason in &s.sample_rejections {
                    println!("    rejected {reason}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        DatasetCommand::Validate {
            dir,
            manifest,
            contract_only,
        } => {
            let result = tokio::task::spawn_blocking(move || {
                if contract_only {
                    dataset::load_release(&dir, &manifest)
                } else {
                    dataset::validate_strict(&dir, &manifest)
                }
            })
            .await?;
            match result {
                Ok(release) => {
                    println!(
                        "{}: valid ({} {}, status {}), release hash {}",
                        release.dir.display(),
                        release.manifest.dataset_id,
                        release.manifest.version,
                        release.manifest.status,
                        release.release_hash
                    );
                    for family in dataset::Family::ALL {
                        println!(
                            "  {:<26} {} rows",
                            family.as_str(),
                            release.family_rows(family).count()
                        );
                    }
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
