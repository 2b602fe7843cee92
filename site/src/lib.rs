//! The published side of the benchmark: a static, self-contained site built from the results
//! store's published snapshots — a leaderboard per benchmark (one workflow, one model: its
//! latest snapshot), analysis pages whose every number is a stored figure, history per provider
//! with the store's regressions, the methodology, the public dataset's card, the results JSON
//! with its JSON Schema, and `llms.txt`.
//!
//! Deterministic: inputs are read in key order and nothing depends on the clock, so two builds
//! from one store are byte-identical. Self-contained: inline CSS and a few lines of inline
//! script (sorting; the tables read without it), SVG charts inline, relative links only, so the
//! site works from `file://` or any static host. How to use it: docs/site.md.

pub mod analysis;
pub mod chart;
pub mod docs;
pub mod history_page;
pub mod leaderboard;
pub mod load_history_page;
pub mod load_page;
pub mod model;
pub mod page;
pub mod pages;
pub mod paired;

use model::{IndexEntry, ResultsIndex, SCHEMA_VERSION, SnapshotResults};
use openbench_common::spec::RegressionRule;
use openbench_store::Store;
use openbench_store::history::{self, HistoryOptions};
use openbench_task_metrics::compare::CompareOptions;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What can stop a build.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] openbench_store::StoreError),
    /// A stored row is not what the schema promises.
    #[error("run {run_id}: {detail}")]
    Corrupt {
        /// The run.
        run_id: String,
        /// What is wrong.
        detail: String,
    },
    /// A compiled-in input did not parse.
    #[error("{what}: {detail}")]
    Input {
        /// The input.
        what: String,
        /// What failed.
        detail: String,
    },
    /// A file could not be written.
    #[error("{}: {detail}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
}

/// Every file of the site: path relative to the output folder → bytes, in path order.
pub type Files = BTreeMap<String, String>;

/// Reads every published snapshot, in benchmark then start-time order.
pub fn snapshots(store: &mut Store) -> Result<Vec<SnapshotResults>, SiteError> {
    let mut all = Vec::new();
    for snap in openbench_store::snapshot::list(store)? {
        all.push(model::read(store, &snap)?);
    }
    all.sort_by(|a, b| {
        (&a.benchmark, &a.started_at, &a.run_id).cmp(&(&b.benchmark, &b.started_at, &b.run_id))
    });
    Ok(all)
}

/// Builds every file of the site from the store (nothing written); `rule` flags regressions on
/// the history pages (`history`'s rule: the spec's `results.regression`, or the defaults).
pub fn render(store: &mut Store, rule: RegressionRule) -> Result<Files, SiteError> {
    let all = snapshots(store)?;
    let mut latest: BTreeMap<&str, &SnapshotResults> = BTreeMap::new();
    for s in &all {
        latest.insert(&s.benchmark, s);
    }
    let latest: Vec<&SnapshotResults> = latest.into_values().collect();
    let mut files = Files::new();
    let mut entries = Vec::new();
    for s in &all {
        let file = pages::results_file(s);
        files.insert(file.clone(), model::pretty(s));
        entries.push(IndexEntry {
            benchmark: s.benchmark.clone(),
            run_id: s.run_id.clone(),
            file: file.trim_start_matches("results/").to_string(),
            latest: latest.iter().any(|l| l.run_id == s.run_id),
            simulated: s.simulated,
        });
    }
    let schema = format!("schema-v{SCHEMA_VERSION}.json");
    files.insert(format!("results/{schema}"), model::snapshot_schema());
    files.insert(
        format!("results/index.schema-v{SCHEMA_VERSION}.json"),
        model::index_schema(),
    );
    files.insert(
        "results/index.json".into(),
        model::pretty(&ResultsIndex {
            schema_version: SCHEMA_VERSION,
            schema,
            snapshots: entries,
        }),
    );
    for s in &latest {
        files.insert(pages::leaderboard_file(s), leaderboard::page(s));
        if s.load.is_some() {
            files.insert(pages::file(s, "load"), load_page::page(s));
            let h = history::load_history::compute(store, &s.workflow, Some(&s.model), rule, None)?;
            files.insert(pages::file(s, "history"), load_history_page::page(s, &h));
            continue;
        }
        files.insert(pages::file(s, "latency"), analysis::latency_page(s));
        files.insert(pages::file(s, "speed"), analysis::speed_page(s));
        files.insert(pages::file(s, "accuracy"), analysis::accuracy_page(s));
        if let Some(p) = &s.paired {
            files.insert(pages::file(s, "paired"), paired::page(s, p));
        }
        let options = HistoryOptions {
            rule,
            compare: CompareOptions::default(),
            baseline: None,
            model: Some(s.model.clone()),
        };
        let h = history::compute(store, &s.workflow, options)?;
        files.insert(pages::file(s, "history"), history_page::page(s, &h));
    }
    files.insert("index.html".into(), pages::index(&latest));
    files.insert("methodology.html".into(), docs::methodology_page());
    files.insert("dataset.html".into(), docs::dataset_page()?);
    files.insert("llms.txt".into(), docs::llms_txt(&latest));
    Ok(files)
}

/// Builds the site from the store into `out` (created if needed) with regression `rule`;
/// returns the files written.
pub fn build(
    store: &mut Store,
    out: &Path,
    rule: RegressionRule,
) -> Result<Vec<PathBuf>, SiteError> {
    let files = render(store, rule)?;
    let mut written = Vec::new();
    for (name, text) in &files {
        let path = out.join(name);
        let fail = |e: std::io::Error| SiteError::Write {
            path: path.clone(),
            detail: e.to_string(),
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(fail)?;
        }
        openbench_common::rundir::write_atomic(&path, text.as_bytes()).map_err(|e| {
            SiteError::Write {
                path: path.clone(),
                detail: e.to_string(),
            }
        })?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod unit_tests;
