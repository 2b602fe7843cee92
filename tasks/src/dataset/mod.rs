//! The dataset contract: a frozen release (manifest + one JSONL file per family), its typed rows,
//! the validating loader, the deterministic generator and an independent rule-based checker.
//!
//! The contract itself is documented in `data/README.md`. Everything here is plain data: the
//! scoring code looks gold up by item id with [`Release::row`] and matches on [`Gold`].

pub mod canned;
pub mod cli;
mod contract_gold;
pub mod extract;
pub mod generate;
mod load;
pub mod manifest;
pub mod reference;
mod types;

pub use load::{parse_file, rows_from_files, validate_strict};
pub use manifest::{FamilyEntry, Manifest, TokenBand, release_hash};
pub use types::{
    AgreementType, Category, ContractGold, Family, Gold, Priority, TicketGold, is_iso_date,
};

use openbench_common::workflow::{DatasetRelease, WorkItem};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

/// Names of the ten contract fields, in the order the system prompt lists them.
pub const CONTRACT_FIELDS: [&str; 10] = [
    "agreement_type",
    "effective_date",
    "initial_term_end_date",
    "auto_renews",
    "renewal_term_months",
    "non_renewal_notice_days",
    "payment_terms_days",
    "termination_for_convenience",
    "termination_notice_days",
    "security_incident_notice_hours",
];

/// Which row format a release folder holds, told apart by its manifest's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseFormat {
    /// Ours (`data/README.md`): the manifest lists `families` with file hashes and a release hash.
    Own,
    /// The reference Python runner's frozen release: the manifest lists `use_cases` (see
    /// [`reference`]).
    Reference,
}

impl ReleaseFormat {
    /// Detects the format from the manifest text: `use_cases` without `families` is the
    /// reference runner's; anything else is read (and refused, if need be) as ours.
    pub fn detect(manifest_text: &str) -> ReleaseFormat {
        match serde_json::from_str::<Value>(manifest_text) {
            Ok(Value::Object(obj))
                if obj.contains_key("use_cases") && !obj.contains_key("families") =>
            {
                ReleaseFormat::Reference
            }
            _ => ReleaseFormat::Own,
        }
    }
}

/// Loads and validates the release in `dir` described by the manifest file `manifest`, in either
/// format ([`ReleaseFormat::detect`]). Every problem is listed with its file, line and field.
pub fn load_release(dir: &Path, manifest: &str) -> Result<Release, DatasetError> {
    let text = openbench_common::input_file::read_regular_string(
        &dir.join(manifest),
        openbench_common::input_file::DATASET_FILE_BYTES,
    )
    .map_err(|source| DatasetError::ManifestUnreadable {
        dir: dir.to_path_buf(),
        manifest: manifest.to_string(),
        source,
    })?;
    match ReleaseFormat::detect(&text) {
        ReleaseFormat::Own => load::load_own_release(dir, manifest, text),
        ReleaseFormat::Reference => reference::load(dir, manifest, &text),
    }
}

/// One validated dataset row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Item id, unique within the release.
    pub id: String,
    /// Task family (the row's `use_case`).
    pub family: Family,
    /// `private` (frozen release) or `public` (sample).
    pub split: String,
    /// System prompt.
    pub system: String,
    /// User prompt.
    pub user: String,
    /// The JSON Schema the answer must follow (informational; scoring applies METHODOLOGY §5).
    pub output_schema: Value,
    /// Typed gold answer.
    pub gold: Gold,
    /// Accepted alternative answers (meeting notes only; empty elsewhere).
    pub aliases: Vec<String>,
    /// `tokens.prompt`: o200k_base tokens of system + user as recorded in the row.
    pub prompt_tokens: u64,
    /// sha256 of the row's canonical JSON (the selection's item hash).
    pub item_hash: String,
    /// File (as written in the manifest) and 1-based line the row came from.
    pub file: String,
    /// 1-based line number inside `file`.
    pub line: usize,
}

/// A loaded, fully validated release.
#[derive(Debug, Clone)]
pub struct Release {
    /// Folder the release was loaded from.
    pub dir: PathBuf,
    /// The parsed manifest (for a reference-format release, our view of its `use_cases`).
    pub manifest: Manifest,
    /// The row format the release was read in.
    pub format: ReleaseFormat,
    /// sha256 of the sorted `path:hash` lines (METHODOLOGY §7).
    pub release_hash: String,
    /// Hash key → sha256 of the file's bytes: the path as written in our manifest, or for a
    /// reference-format release the path string the reference runner keys it by.
    pub file_hashes: BTreeMap<String, String>,
    rows: Vec<Row>,
    by_id: HashMap<String, usize>,
}

impl Release {
    /// Builds a release from already validated parts (the loader's last step).
    fn new(
        dir: PathBuf,
        format: ReleaseFormat,
        manifest: Manifest,
        release_hash: String,
        file_hashes: BTreeMap<String, String>,
        rows: Vec<Row>,
    ) -> Release {
        let by_id = rows
            .iter()
            .enumerate()
            .map(|(i, row)| (row.id.clone(), i))
            .collect();
        Release {
            dir,
            format,
            manifest,
            release_hash,
            file_hashes,
            rows,
            by_id,
        }
    }

    /// The row with this item id, for gold lookup while scoring.
    pub fn row(&self, item_id: &str) -> Option<&Row> {
        self.by_id.get(item_id).and_then(|&i| self.rows.get(i))
    }

    /// Every row, families in contract order, rows in file order.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The rows of one family, in file order.
    pub fn family_rows(&self, family: Family) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(move |row| row.family == family)
    }

    /// True for a frozen release (`status: "frozen"`, `freeze_ready: true`), the only kind a
    /// full run may use; the public sample is `status: "sample"`.
    pub fn is_frozen(&self) -> bool {
        self.manifest.status == "frozen" && self.manifest.freeze_ready
    }

    /// The runner's view of the release: ids, prompts and item hashes per family.
    pub fn to_dataset_release(&self) -> DatasetRelease {
        let mut items: BTreeMap<String, Vec<WorkItem>> = BTreeMap::new();
        for row in &self.rows {
            items
                .entry(row.family.as_str().to_string())
                .or_default()
                .push(WorkItem {
                    group: row.family.as_str().to_string(),
                    item_id: row.id.clone(),
                    system: row.system.clone(),
                    user: row.user.clone(),
                    item_hash: row.item_hash.clone(),
                });
        }
        DatasetRelease {
            dir: self.dir.clone(),
            release_hash: self.release_hash.clone(),
            file_hashes: self.file_hashes.clone(),
            items,
        }
    }
}

/// One problem found in a dataset: where (file, line, field) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// File name as written in the manifest (or the manifest's own name).
    pub file: String,
    /// 1-based line, when the problem belongs to one row.
    pub line: Option<usize>,
    /// The field (dotted path), or `-` for the whole file or line.
    pub field: String,
    /// What is wrong, with expected and actual values where there are any.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(
                f,
                "{}:{}: {}: {}",
                self.file, line, self.field, self.message
            ),
            None => write!(f, "{}: {}: {}", self.file, self.field, self.message),
        }
    }
}

/// Why a dataset was refused: every problem found, not just the first.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The release failed validation.
    #[error("dataset {} refused, {} problem(s):\n{}", dir.display(), problems.len(), list(problems))]
    Invalid {
        /// Folder that was loaded.
        dir: PathBuf,
        /// Every problem, in file and line order.
        problems: Vec<Problem>,
    },
    /// The manifest could not be read, so nothing else could be checked.
    #[error("dataset {} refused: cannot read {}: {source}", dir.display(), manifest)]
    ManifestUnreadable {
        /// Folder that was loaded.
        dir: PathBuf,
        /// The manifest's file name.
        manifest: String,
        /// The read error.
        source: std::io::Error,
    },
}

impl DatasetError {
    /// The problems behind the refusal.
    pub fn problems(&self) -> &[Problem] {
        match self {
            DatasetError::Invalid { problems, .. } => problems,
            DatasetError::ManifestUnreadable { .. } => &[],
        }
    }
}

fn list(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| format!("  {p}"))
        .collect::<Vec<_>>()
        .join("\n")
}
