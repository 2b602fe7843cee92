//! `score`: offline scoring of an answers file against the dataset's gold or self-contained gold,
//! by the workflow the registry names (its `Workflow::score_answers`).

use anyhow::Context;
use openbench_common::input_file;
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
    let file = input_file::open_regular(&args.answers, input_file::ANSWERS_BYTES)
        .with_context(|| format!("cannot open {}", args.answers.display()))?;
    if let Some(out) = &args.out {
        refuse_same_file(&args.answers, out)?;
    }
    let source = args.answers.display().to_string();
    let mut out: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(CreatedOnWrite {
            path: path.clone(),
            file: None,
        }),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut errors = std::io::stderr().lock();
    let counts = workflow
        .score_answers(
            &source,
            &mut BufReader::new(file),
            (&args.dataset, &args.manifest),
            &mut out,
            &mut errors,
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

/// The `--out` file, created (truncating what was there) at the first write or flush, so a
/// workflow that refuses to score leaves an existing file as it was.
struct CreatedOnWrite {
    path: PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl CreatedOnWrite {
    fn file(&mut self) -> std::io::Result<&mut std::io::BufWriter<std::fs::File>> {
        if self.file.is_none() {
            let file = std::fs::File::create(&self.path).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("cannot create {}: {e}", self.path.display()),
                )
            })?;
            self.file = Some(std::io::BufWriter::new(file));
        }
        self.file
            .as_mut()
            .ok_or_else(|| std::io::Error::other("output file not open"))
    }
}

impl Write for CreatedOnWrite {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file()?.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file()?.flush()
    }
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
