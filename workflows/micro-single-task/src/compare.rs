//! `compare RUN_A RUN_B`: both run directories scored by the report's own code
//! (`report::compute`) and compared with the shared comparison of task-scored runs
//! (`openbench_task_metrics::compare`, re-exported here), written as `compare.md` and
//! `compare.html`.

pub use openbench_task_metrics::compare::*;

use crate::report::{self, GoldTable, ReportError};
use openbench_common::rundir::{RunDirError, RunLock};
use std::path::{Path, PathBuf};

/// Why two runs cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A run could not be read or scored.
    #[error("{}: {source}", run.display())]
    Run {
        /// The run directory.
        run: PathBuf,
        /// What failed.
        source: ReportError,
    },
    /// The runs belong to different workflows.
    #[error("run A is a {a:?} run and run B a {b:?} run: only runs of one workflow compare")]
    Workflows {
        /// Run A's workflow.
        a: String,
        /// Run B's workflow.
        b: String,
    },
    /// An output file could not be written.
    #[error(transparent)]
    Write(#[from] RunDirError),
}

impl ReportError {
    /// This error as a comparison's, naming the run it came from.
    pub fn into_compare(self, run: &Path) -> CompareError {
        CompareError::Run {
            run: run.to_path_buf(),
            source: self,
        }
    }
}

/// One run to compare: its directory, lock and the gold its records are scored against.
pub struct RunInput<'a> {
    /// The run directory.
    pub dir: &'a Path,
    /// Its lock.
    pub lock: &'a RunLock,
    /// Gold by item id.
    pub gold: &'a GoldTable,
}

/// A run as the comparison holds it: the report's computation.
struct ScoredRun {
    computed: report::Computed,
}

impl ScoredRun {
    fn view(&self) -> ScoredView<'_> {
        ScoredView {
            observations: &self.computed.observations,
            lanes: &self.computed.lanes,
            metrics: &self.computed.metrics,
        }
    }
}

/// Compares run B against run A.
pub fn compare(
    a: &RunInput<'_>,
    b: &RunInput<'_>,
    options: CompareOptions,
) -> Result<Comparison, CompareError> {
    if a.lock.workflow != b.lock.workflow {
        return Err(CompareError::Workflows {
            a: a.lock.workflow.clone(),
            b: b.lock.workflow.clone(),
        });
    }
    let score = |run: &RunInput<'_>| {
        report::compute(run.dir, run.lock, run.gold)
            .map(|computed| ScoredRun { computed })
            .map_err(|source| CompareError::Run {
                run: run.dir.to_path_buf(),
                source,
            })
    };
    let (scored_a, scored_b) = (score(a)?, score(b)?);
    let lanes = compare_lanes(
        &scored_a.view(),
        &scored_b.view(),
        &b.lock.families,
        options,
    );
    let key = |p: &crate::metrics::ProviderMetrics| format!("{}@{}", p.provider, p.region);
    let lanes_a = &scored_a.computed.metrics.providers;
    let lanes_b = &scored_b.computed.metrics.providers;
    let only = |x: &[crate::metrics::ProviderMetrics], y: &[crate::metrics::ProviderMetrics]| {
        x.iter()
            .filter(|p| !y.iter().any(|q| key(q) == key(p)))
            .map(key)
            .collect::<Vec<_>>()
    };
    let mut differences = differences::between(a.lock, b.lock);
    differences.extend(differences::of_runs(
        &scored_a.computed.metrics,
        &scored_b.computed.metrics,
    ));
    Ok(Comparison {
        run_a: (a.lock.run_id.clone(), a.dir.to_path_buf()),
        run_b: (b.lock.run_id.clone(), b.dir.to_path_buf()),
        differences,
        only_in_a: only(lanes_a, lanes_b),
        only_in_b: only(lanes_b, lanes_a),
        lanes,
        options,
        repeats: scored_a
            .computed
            .metrics
            .repeats
            .as_ref()
            .zip(scored_b.computed.metrics.repeats.as_ref())
            .map(|(ra, rb)| (ra.repeats, rb.repeats)),
    })
}

/// Writes `compare.md` and `compare.html` into `out_dir` (created if needed); returns the paths.
pub fn write(out_dir: &Path, comparison: &Comparison) -> Result<Vec<PathBuf>, CompareError> {
    std::fs::create_dir_all(out_dir).map_err(|source| RunDirError::Io {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let md = out_dir.join("compare.md");
    let html = out_dir.join("compare.html");
    openbench_common::rundir::write_atomic(&md, render::markdown(comparison).as_bytes())?;
    openbench_common::rundir::write_atomic(&html, render::html(comparison).as_bytes())?;
    Ok(vec![md, html])
}
