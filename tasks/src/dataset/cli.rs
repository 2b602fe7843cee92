//! The `dataset generate` and `dataset validate` commands as the registry reaches them
//! (`Workflow::generate_dataset`, `Workflow::validate_dataset`): run the generator or the
//! validator and describe the result, one line per family, for the terminal.

use super::generate::{self, Generated};
use super::{DatasetError, Family, Release};
use openbench_common::workflow::{GeneratedDataset, WorkflowError};
use std::fmt::Write;
use std::path::Path;

/// Generates the release (or the public sample) into `out`; `seed` defaults to
/// [`generate::DEFAULT_SEED`], the committed release's.
pub fn generate_release(
    out: &Path,
    seed: Option<u64>,
    public_sample: bool,
) -> Result<GeneratedDataset, WorkflowError> {
    let seed = seed.unwrap_or(generate::DEFAULT_SEED);
    let generated =
        generate::generate(out, seed, public_sample).map_err(|e| WorkflowError(Box::new(e)))?;
    Ok(GeneratedDataset {
        seed,
        release_hash: generated.manifest.release_hash.clone(),
        details: generated_details(&generated),
    })
}

/// Validates a release (the contract only, or also the token recount and the rule-based gold
/// re-check) and describes it.
pub fn validate_release(
    dir: &Path,
    manifest: &str,
    contract_only: bool,
) -> Result<String, WorkflowError> {
    let release: Result<Release, DatasetError> = if contract_only {
        super::load_release(dir, manifest)
    } else {
        super::validate_strict(dir, manifest)
    };
    let release = release.map_err(|e| WorkflowError(Box::new(e)))?;
    let mut out = format!(
        "{}: valid ({} {}, status {}), release hash {}\n",
        release.dir.display(),
        release.manifest.dataset_id,
        release.manifest.version,
        release.manifest.status,
        release.release_hash
    );
    for family in Family::ALL {
        let _ = writeln!(
            out,
            "  {:<26} {} rows",
            family.as_str(),
            release.family_rows(family).count()
        );
    }
    Ok(out)
}

/// Per family: rows, bytes, token spread against its band, and what the generator rejected.
fn generated_details(generated: &Generated) -> String {
    let mut out = String::new();
    for s in &generated.stats {
        let _ = writeln!(
            out,
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
            let _ = writeln!(out, "    rejected {reason}");
        }
    }
    out
}
