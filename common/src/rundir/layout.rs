//! Where every file of a run directory lives. Names follow the reference runner's so tools can
//! read either; nothing else in the workspace builds a run-directory path.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The lock file: hashes of every input, written by `init`, checked by every resume.
pub const RUN_LOCK: &str = "run-lock.json";
/// The advisory writer lock: held by the one process writing the run directory.
pub const WRITER_LOCK: &str = ".writer.lock";
/// Immutable selection artifact.
pub const SELECTION: &str = "artifacts/selection.json";
/// Immutable full-run plan (rounds, lanes, launch order, ids).
pub const FULL_PLAN: &str = "artifacts/full-plan.json";
/// Run manifest: status, period, counts, artifact hashes.
pub const RUN_MANIFEST: &str = "artifacts/run-manifest.json";
/// Space kept beside the manifest so a full disk can still record how the session ended
/// (`RunManifest::save` frees it only when the disk is full).
pub const MANIFEST_RESERVE: &str = "artifacts/.run-manifest.reserve";
/// Terminal records of a full run, one JSON line each, fsynced on arrival.
pub const FULL_RESULTS: &str = "raw/results.jsonl";
/// Parsed stream events, one JSON line each.
pub const STREAM_EVENTS: &str = "raw/stream-events.jsonl";
/// Reconstructed answers, one JSON line each.
pub const RECONSTRUCTED: &str = "raw/reconstructed-responses.jsonl";
/// Checkpoints folder.
pub const CHECKPOINTS: &str = "checkpoints";
/// Per-round barrier records (release time, launch skew, overhead), one JSON line each.
pub const ROUNDS: &str = "raw/rounds.jsonl";
/// Derived metrics.
pub const METRICS: &str = "artifacts/metrics.json";
/// Derived evaluations.
pub const EVALUATIONS: &str = "artifacts/evaluations.jsonl";
/// Derived failures.
pub const FAILURES: &str = "artifacts/failures.jsonl";
/// Derived paired comparisons.
pub const PAIRED: &str = "artifacts/paired-comparisons.json";
/// Markdown report.
pub const REPORT_MD: &str = "report.md";
/// HTML report.
pub const REPORT_HTML: &str = "report.html";

const SMOKE_PLAN_PREFIX: &str = "smoke-plan-attempt-";
const SMOKE_RESULTS_PREFIX: &str = "results-attempt-";

/// Smoke plan for one attempt (1-based).
pub fn smoke_plan(attempt: u32) -> String {
    format!("artifacts/{SMOKE_PLAN_PREFIX}{attempt}.json")
}

/// Smoke terminal records for one attempt (1-based).
pub fn smoke_results(attempt: u32) -> String {
    format!("raw/{SMOKE_RESULTS_PREFIX}{attempt}.jsonl")
}

/// Joins a layout name onto a run directory.
pub fn path(run_dir: &Path, name: &str) -> PathBuf {
    run_dir.join(name)
}

/// The layout names of one plan's files: attempt 0 is the full run, N ≥ 1 is smoke attempt N.
/// The one function that names per-attempt files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanFileNames {
    /// Plan artifact.
    pub plan: String,
    /// Terminal records.
    pub results: String,
    /// Parsed stream events.
    pub events: String,
    /// Reconstructed answers.
    pub reconstructed: String,
    /// Per-round barrier lines.
    pub rounds: String,
    /// Checkpoint file.
    pub checkpoint: String,
}

impl PlanFileNames {
    /// Names for a full run (`attempt == 0`) or a smoke attempt.
    pub fn of_attempt(attempt: u32) -> PlanFileNames {
        if attempt == 0 {
            PlanFileNames {
                plan: FULL_PLAN.to_string(),
                results: FULL_RESULTS.to_string(),
                events: STREAM_EVENTS.to_string(),
                reconstructed: RECONSTRUCTED.to_string(),
                rounds: ROUNDS.to_string(),
                checkpoint: format!("{CHECKPOINTS}/full.json"),
            }
        } else {
            PlanFileNames {
                plan: smoke_plan(attempt),
                results: smoke_results(attempt),
                events: format!("raw/stream-events-attempt-{attempt}.jsonl"),
                reconstructed: format!("raw/reconstructed-responses-attempt-{attempt}.jsonl"),
                rounds: format!("raw/rounds-attempt-{attempt}.jsonl"),
                checkpoint: format!("{CHECKPOINTS}/smoke-attempt-{attempt}.json"),
            }
        }
    }
}

/// The files of one plan inside a run directory (attempt 0 = full run, N = smoke attempt N).
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
    /// Paths for a full run (`attempt == 0`) or a smoke attempt.
    pub fn new(run_dir: &Path, attempt: u32) -> RunFiles {
        let names = PlanFileNames::of_attempt(attempt);
        let at = |name: &str| path(run_dir, name);
        RunFiles {
            plan: at(&names.plan),
            results: at(&names.results),
            events: at(&names.events),
            reconstructed: at(&names.reconstructed),
            rounds: at(&names.rounds),
            checkpoint: at(&names.checkpoint),
        }
    }
}

/// The smoke attempts present in a run directory (a plan or a results file exists), ascending.
/// Found by listing the folders, so no bound on the attempt count is assumed here.
pub fn smoke_attempts(run_dir: &Path) -> Vec<u32> {
    let mut found = BTreeSet::new();
    for (folder, prefix, suffix) in [
        ("artifacts", SMOKE_PLAN_PREFIX, ".json"),
        ("raw", SMOKE_RESULTS_PREFIX, ".jsonl"),
    ] {
        let Ok(entries) = std::fs::read_dir(run_dir.join(folder)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let attempt = name
                .to_str()
                .and_then(|n| n.strip_prefix(prefix))
                .and_then(|n| n.strip_suffix(suffix))
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|&n| n >= 1);
            found.extend(attempt);
        }
    }
    found.into_iter().collect()
}

/// The attempt whose records a report reads: 0 when the full run has a results file, else the
/// latest smoke attempt with a results file; `None` when there are no records at all.
pub fn reported_attempt(run_dir: &Path) -> Option<u32> {
    if path(run_dir, FULL_RESULTS).is_file() {
        return Some(0);
    }
    smoke_attempts(run_dir)
        .into_iter()
        .rev()
        .find(|&n| path(run_dir, &smoke_results(n)).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoke_attempts_are_listed_without_a_bound() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let run = dir.path();
        assert!(smoke_attempts(run).is_empty());
        assert_eq!(reported_attempt(run), None);
        for name in [
            "artifacts/smoke-plan-attempt-1.json",
            "artifacts/smoke-plan-attempt-3.json",
            "raw/results-attempt-1.jsonl",
            "raw/results-attempt-17.jsonl",
            "raw/results-attempt-x.jsonl",
            "raw/results-attempt-0.jsonl",
        ] {
            let p = run.join(name);
            std::fs::create_dir_all(p.parent().unwrap_or(run)).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(&p, b"").unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(smoke_attempts(run), vec![1, 3, 17]);
        assert_eq!(reported_attempt(run), Some(17));
        std::fs::write(run.join(FULL_RESULTS), b"").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reported_attempt(run), Some(0));
    }

    #[test]
    fn attempt_names_match_the_reference_layout() {
        let names = PlanFileNames::of_attempt(2);
        assert_eq!(names.plan, "artifacts/smoke-plan-attempt-2.json");
        assert_eq!(names.results, "raw/results-attempt-2.jsonl");
        assert_eq!(names.events, "raw/stream-events-attempt-2.jsonl");
        assert_eq!(
            names.reconstructed,
            "raw/reconstructed-responses-attempt-2.jsonl"
        );
        assert_eq!(names.rounds, "raw/rounds-attempt-2.jsonl");
        assert_eq!(names.checkpoint, "checkpoints/smoke-attempt-2.json");
        assert_eq!(
            PlanFileNames::of_attempt(0).checkpoint,
            "checkpoints/full.json"
        );
    }
}
