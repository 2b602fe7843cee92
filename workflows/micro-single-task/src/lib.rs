//! The micro-single-task workflow (placeholder until implemented).

use openbench_common::record::TerminalRecord;
use openbench_common::workflow::{
    CannedAnswer, DatasetRelease, ReportOutcome, Workflow, WorkflowError,
};
use std::path::{Path, PathBuf};

/// The micro-single-task workflow.
pub struct MicroSingleTask;

impl Workflow for MicroSingleTask {
    fn name(&self) -> &'static str {
        "micro-single-task"
    }
    fn description(&self) -> &'static str {
        "one latency-sensitive user, small structured tasks, paired rounds"
    }
    fn bundled_specs(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    fn load_dataset(&self, _dir: &Path, _manifest: &str) -> Result<DatasetRelease, WorkflowError> {
        Err(WorkflowError("not implemented yet".into()))
    }
    fn canned_answers(
        &self,
        _dataset: &DatasetRelease,
    ) -> Result<Vec<CannedAnswer>, WorkflowError> {
        Ok(Vec::new())
    }
    fn answer_is_schema_valid(&self, _record: &TerminalRecord) -> bool {
        false
    }
    fn report(&self, _run_dir: &Path) -> Result<ReportOutcome, WorkflowError> {
        Err(WorkflowError("not implemented yet".into()))
    }
}
