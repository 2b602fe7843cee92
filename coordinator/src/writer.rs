//! The run writer: where one plan's raw files live and how an execution lands in them. The
//! terminal record is the commit point: its events and answer are appended first, then the record
//! is appended and fsynced. Resume repairs half lines and drops events of uncommitted requests.

use crate::rundir::{JsonlWriter, RunDirError, repair_jsonl, write_atomic};
use openbench_common::layout;
use openbench_common::record::{Execution, Outcome, TerminalRecord};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// The raw files of one plan (attempt 0 = full run, N = smoke attempt N).
#[derive(Debug, Clone)]
pub struct RunFiles {
    /// Plan artifact.
    pub plan: PathBuf,
    /// Terminal records.
    pub results: PathBuf,
    /// Parsed stream events.
    pub events: PathBuf,
    /// Reconstructed answers.
    pub reconstructed: PathBuf,
    /// Per-round barrier lines.
    pub rounds: PathBuf,
    /// Checkpoint file.
    pub checkpoint: PathBuf,
}

impl RunFiles {
    /// File names for a full run (`attempt == 0`) or a smoke attempt.
    pub fn new(run_dir: &Path, attempt: u32) -> RunFiles {
        let at = |name: &str| layout::path(run_dir, name);
        if attempt == 0 {
            RunFiles {
                plan: at(layout::FULL_PLAN),
                results: at(layout::FULL_RESULTS),
                events: at(layout::STREAM_EVENTS),
                reconstructed: at(layout::RECONSTRUCTED),
                rounds: at(layout::ROUNDS),
                checkpoint: at(&format!("{}/full.json", layout::CHECKPOINTS)),
            }
        } else {
            RunFiles {
                plan: at(&layout::smoke_plan(attempt)),
                results: at(&layout::smoke_results(attempt)),
                events: at(&format!("raw/stream-events-attempt-{attempt}.jsonl")),
                reconstructed: at(&format!(
                    "raw/reconstructed-responses-attempt-{attempt}.jsonl"
                )),
                rounds: at(&format!("raw/rounds-attempt-{attempt}.jsonl")),
                checkpoint: at(&format!(
                    "{}/smoke-attempt-{attempt}.json",
                    layout::CHECKPOINTS
                )),
            }
        }
    }
}

/// One line of `raw/reconstructed-responses.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reconstructed {
    /// Request id.
    pub request_id: String,
    /// Provider key.
    pub provider: String,
    /// Lane label.
    pub lane: String,
    /// Item id.
    pub item_id: String,
    /// Task family.
    pub task_family: String,
    /// Visible answer.
    pub answer_text: String,
    /// Reasoning text.
    pub reasoning_text: String,
    /// Final finish reason.
    pub finish_reason: Option<String>,
}

/// One line of `raw/rounds.jsonl`: what the barrier saw for one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundLine {
    /// Round index.
    pub round_index: u64,
    /// Round id.
    pub round_id: String,
    /// Wall-clock release time, RFC 3339 UTC.
    pub released_at: String,
    /// Release time in ms since this session started.
    pub released_offset_ms: f64,
    /// max − min dispatch instant over the round's lanes, ms.
    pub launch_skew_ms: f64,
    /// Previous round's last terminal record → this release, ms (absent for a session's first
    /// round).
    pub coordinator_overhead_ms: Option<f64>,
    /// Release → last terminal record of this round, ms.
    pub round_ms: f64,
    /// Lanes dispatched in this round (fewer than all on a resumed round).
    pub lanes_dispatched: usize,
    /// Lanes that ended with a harness failure.
    pub harness_errors: usize,
    /// Lane labels in launch order.
    pub launch_order: Vec<String>,
}

/// The checkpoint written after every round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Rounds whose every lane has a terminal record.
    pub rounds_done: usize,
    /// Rounds in the plan.
    pub rounds_total: usize,
    /// Last round finished in this session.
    pub last_round_index: Option<u64>,
    /// Requests with a committed (non-harness) terminal record.
    pub requests_done: usize,
    /// When written, RFC 3339 UTC.
    pub updated_at: String,
}

/// Appends executions and round lines for one plan.
pub struct RunWriter {
    files: RunFiles,
    results: JsonlWriter,
    events: JsonlWriter,
    reconstructed: JsonlWriter,
    rounds: JsonlWriter,
}

impl RunWriter {
    /// Opens every raw file of the plan for appending.
    pub fn open(files: RunFiles) -> Result<RunWriter, RunDirError> {
        Ok(RunWriter {
            results: JsonlWriter::open(&files.results, true)?,
            events: JsonlWriter::open(&files.events, false)?,
            reconstructed: JsonlWriter::open(&files.reconstructed, false)?,
            rounds: JsonlWriter::open(&files.rounds, true)?,
            files,
        })
    }

    /// Writes one execution: events and answer first, then the record (fsynced), the commit point.
    pub fn append_execution(&mut self, execution: &Execution) -> Result<(), RunDirError> {
        let record = &execution.record;
        if record.outcome != Outcome::HarnessError {
            let mut buf = Vec::new();
            for event in &execution.events {
                let mut line = serde_json::to_vec(event).map_err(|e| RunDirError::Json {
                    path: self.files.events.display().to_string(),
                    message: e.to_string(),
                })?;
                line.push(b'\n');
                buf.extend(line);
            }
            if !buf.is_empty() {
                self.events.append_raw(&buf)?;
            }
            self.reconstructed.append(&reconstructed(record))?;
        }
        self.results.append(record)
    }

    /// Appends a round line (fsynced).
    pub fn append_round(&mut self, line: &RoundLine) -> Result<(), RunDirError> {
        self.rounds.append(line)
    }

    /// Replaces the checkpoint atomically.
    pub fn checkpoint(&self, checkpoint: &Checkpoint) -> Result<(), RunDirError> {
        let bytes = crate::rundir::json_bytes(&self.files.checkpoint, checkpoint)?;
        write_atomic(&self.files.checkpoint, &bytes)
    }
}

fn reconstructed(record: &TerminalRecord) -> Reconstructed {
    Reconstructed {
        request_id: record.request_id.clone(),
        provider: record.provider.clone(),
        lane: record.lane.clone(),
        item_id: record.item_id.clone(),
        task_family: record.task_family.clone(),
        answer_text: record.answer_text.clone(),
        reasoning_text: record.reasoning_text.clone(),
        finish_reason: record.finish_reason.clone(),
    }
}

/// Crash repair before a resume: drop half-written last lines of every raw file, then keep in the
/// events and answers files only lines of requests in `committed` (at most one answer per
/// request), so a request interrupted between its events and its record leaves nothing behind.
pub fn repair(files: &RunFiles, committed: &BTreeSet<String>) -> Result<(), RunDirError> {
    for path in [
        &files.results,
        &files.events,
        &files.reconstructed,
        &files.rounds,
    ] {
        repair_jsonl(path)?;
    }
    compact(&files.events, committed, false)?;
    compact(&files.reconstructed, committed, true)?;
    Ok(())
}

#[derive(Deserialize)]
struct IdOnly {
    request_id: String,
    #[serde(default)]
    index: Option<u32>,
}

/// Rewrites `path` keeping lines whose `request_id` is committed (and, with `unique`, the first
/// line per request; otherwise the first per (request, index)). Untouched when nothing drops.
fn compact(path: &Path, committed: &BTreeSet<String>, unique: bool) -> Result<(), RunDirError> {
    let io = |source| RunDirError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(e)),
    };
    let mut seen: HashSet<(String, Option<u32>)> = HashSet::new();
    let mut kept: Vec<u8> = Vec::new();
    let mut dropped = 0usize;
    for line in BufReader::new(file).lines() {
        let line = line.map_err(io)?;
        let keep = match serde_json::from_str::<IdOnly>(&line) {
            Ok(id) if committed.contains(&id.request_id) => {
                let key = (id.request_id, if unique { None } else { id.index });
                seen.insert(key)
            }
            _ => false,
        };
        if keep {
            kept.extend_from_slice(line.as_bytes());
            kept.push(b'\n');
        } else {
            dropped += 1;
        }
    }
    if dropped == 0 {
        return Ok(());
    }
    let tmp = path.with_extension("compact.tmp");
    let mut out = File::create(&tmp).map_err(|source| RunDirError::Io {
        path: tmp.clone(),
        source,
    })?;
    out.write_all(&kept).map_err(io)?;
    out.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    Ok(())
}
