//! `spec-reference`: prints docs/spec.md, or writes it and docs/spec.schema.json into a folder.

use anyhow::Context;
use openbench_inference::spec_reference::{MARKDOWN_FILE, SCHEMA_FILE, markdown, schema_text};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `spec-reference`.
#[derive(Debug, clap::Args)]
pub struct SpecReferenceArgs {
    /// Write spec.md and spec.schema.json into this folder (the repository's `docs`) instead of
    /// printing the reference.
    #[arg(long)]
    write: Option<PathBuf>,
}

/// Runs `spec-reference`.
pub fn run(args: SpecReferenceArgs) -> anyhow::Result<ExitCode> {
    let Some(dir) = args.write else {
        print!("{}", markdown());
        return Ok(ExitCode::SUCCESS);
    };
    for (name, text) in [(MARKDOWN_FILE, markdown()), (SCHEMA_FILE, schema_text())] {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
