//! Canned simulator answers from the gold: one correct and one schema-valid wrong answer per row.

use super::load::rows_from_files;
use super::{Category, DatasetError, Gold, Priority, Problem, ReleaseFormat, Row, load_release};
use openbench_common::workflow::{CannedAnswer, DatasetRelease};
use serde_json::json;

/// For each row of the release: its user prompt, the gold as compact JSON (meeting notes:
/// `{"answer": gold}`) and a schema-valid wrong answer (a different value of the right type).
pub fn canned_answers(dataset: &DatasetRelease) -> Result<Vec<CannedAnswer>, DatasetError> {
    let rows = if is_reference(dataset) {
        reference_rows(dataset)?
    } else {
        rows_from_files(&dataset.dir, &dataset.file_hashes)?
    };
    Ok(rows.iter().map(canned_answer).collect())
}

/// The reference runner's manifest name: its releases always call it this.
const REFERENCE_MANIFEST: &str = "manifest.json";

/// True when the release folder holds a reference-format manifest, whose hash keys are not paths
/// inside the folder (`data/README.md`), so its rows are re-read by loading it again.
fn is_reference(dataset: &DatasetRelease) -> bool {
    openbench_common::input_file::read_regular_string(
        &dataset.dir.join(REFERENCE_MANIFEST),
        openbench_common::input_file::DATASET_FILE_BYTES,
    )
    .is_ok_and(|text| ReleaseFormat::detect(&text) == ReleaseFormat::Reference)
}

/// The rows of a reference-format release, loaded again and checked to be the same release.
fn reference_rows(dataset: &DatasetRelease) -> Result<Vec<Row>, DatasetError> {
    let release = load_release(&dataset.dir, REFERENCE_MANIFEST)?;
    if release.release_hash != dataset.release_hash {
        return Err(DatasetError::Invalid {
            dir: dataset.dir.clone(),
            problems: vec![Problem {
                file: REFERENCE_MANIFEST.into(),
                line: None,
                field: "release_hash".into(),
                message: format!(
                    "the release changed since loading: expected {}, actual {}",
                    dataset.release_hash, release.release_hash
                ),
            }],
        });
    }
    Ok(release.rows().to_vec())
}

/// The canned answer pair of one row.
pub fn canned_answer(row: &Row) -> CannedAnswer {
    CannedAnswer {
        group: row.family.as_str().to_string(),
        user_prompt: row.user.clone(),
        correct: row.gold.to_json().to_string(),
        incorrect: wrong_answer(&row.gold).to_string(),
    }
}

/// A schema-valid answer that scores as incorrect against `gold` (also the load workflow's
/// wrong answer to a conversation's follow-up).
pub fn wrong_answer(gold: &Gold) -> serde_json::Value {
    match gold {
        Gold::MeetingNotes { .. } => json!({ "answer": "Not stated in the notes" }),
        Gold::TicketTriage(t) => {
            let category = match t.category {
                Category::Bug => Category::Improvement,
                Category::Feature => Category::Bug,
                Category::Improvement => Category::Feature,
                Category::CustomerSupport => Category::Bug,
            };
            let priority = match t.priority {
                Priority::P0 => Priority::P3,
                Priority::P1 => Priority::P2,
                Priority::P2 => Priority::P1,
                Priority::P3 => Priority::P0,
            };
            json!({ "category": category.as_str(), "priority": priority.as_str() })
        }
        Gold::Contract(c) => {
            let mut wrong = c.clone();
            wrong.payment_terms_days = Some(c.payment_terms_days.map_or(30, |d| d + 15));
            wrong.auto_renews = !c.auto_renews;
            wrong.to_json()
        }
    }
}
