//! `score`: offline scoring of an answers file against the dataset's gold or self-contained gold.

use anyhow::Context;
use openbench_common::input_file;
use openbench_micro_single_task::report::GoldTable;
use openbench_micro_single_task::scoring::GoldRef;
use openbench_micro_single_task::scoring::answers::score_stream;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `score`.
#[derive(Debug, clap::Args)]
pub struct ScoreArgs {
    /// Workflow whose scoring rules apply.
    #[arg(long, default_value = "micro-single-task")]
    workflow: String,
    /// Dataset folder, for lines that carry only `item_id` and `answer_text`.
    #[arg(long, default_value = "data/micro-single-task")]
    dataset: PathBuf,
    /// Manifest file name inside the dataset folder.
    #[arg(long, default_value = "manifest.json")]
    manifest: String,
    /// JSONL answers: `{"item_id", "answer_text"}` or self-contained
    /// `{"item_id", "task_family", "gold", "aliases", "answer_text"}`.
    #[arg(long)]
    answers: PathBuf,
    /// Write evaluations here instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Runs `score`: one evaluation per good line; exit code 1 when any line was bad.
pub async fn run(args: ScoreArgs) -> anyhow::Result<ExitCode> {
    let workflow = crate::registry::find(&args.workflow)?;
    if workflow.name() != "micro-single-task" {
        anyhow::bail!("workflow {:?} has no offline scorer", workflow.name());
    }
    let file = input_file::open_regular(&args.answers, input_file::ANSWERS_BYTES)
        .with_context(|| format!("cannot open {}", args.answers.display()))?;
    if let Some(out) = &args.out {
        refuse_same_file(&args.answers, out)?;
    }
    // The dataset is loaded only when a line needs it, so self-contained files work without one.
    let mut gold: Option<Result<GoldTable, String>> = None;
    let (dataset, manifest) = (args.dataset.clone(), args.manifest.clone());
    let mut lookup = |item_id: &str| -> Result<GoldRef, String> {
        let table = gold.get_or_insert_with(|| {
            openbench_micro_single_task::dataset::load_release(&dataset, &manifest)
                .map(|release| {
                    GoldTable(
                        release
                            .rows()
                            .iter()
                            .map(|row| {
                                (row.id.clone(), GoldRef::from_gold(&row.gold, &row.aliases))
                            })
                            .collect(),
                    )
                })
                .map_err(|e| format!("dataset {}: {e}", dataset.display()))
        });
        match table {
            Ok(t) => {
                t.0.get(item_id)
                    .cloned()
                    .ok_or_else(|| format!("item_id {item_id:?} is not in {}", dataset.display()))
            }
            Err(e) => Err(e.clone()),
        }
    };
    let source = args.answers.display().to_string();
    let mut out: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut errors = std::io::stderr().lock();
    let counts = score_stream(
        &source,
        BufReader::new(file),
        &mut out,
        &mut errors,
        &mut lookup,
    )
    .with_context(|| format!("scoring {source}"))?;
    out.flush().context("writing evaluations")?;
    if counts.bad_lines > 0 {
        eprintln!(
            "{source}: {} line(s) scored, {} bad line(s)",
            counts.scored, counts.bad_lines
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses an output path that is the input file under another name (same path, another
/// spelling, a symlink or a hard link): creating it would empty the answers before they are read.
fn refuse_same_file(input: &Path, out: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(out_meta) = std::fs::metadata(out) else {
        return Ok(()); // Nothing there yet: it cannot be the input.
    };
    let in_meta = std::fs::metadata(input)
        .with_context(|| format!("cannot read the metadata of {}", input.display()))?;
    let same_inode = (in_meta.dev(), in_meta.ino()) == (out_meta.dev(), out_meta.ino());
    let same_path = matches!(
        (input.canonicalize(), out.canonicalize()),
        (Ok(a), Ok(b)) if a == b
    );
    if same_inode || same_path {
        anyhow::bail!(
            "--out {} is the answers file {} itself: refusing to overwrite an input",
            out.display(),
            input.display()
        );
    }
    Ok(())
}
