//! Canned simulator answers from the gold: one correct and one schema-valid wrong answer per row.

use super::load::rows_from_files;
use super::{Category, DatasetError, Gold, Priority, Row};
use openbench_common::workflow::{CannedAnswer, DatasetRelease};
use serde_json::json;

/// For each row of the release: its user prompt, the gold as compact JSON (meeting notes:
/// `{"answer": gold}`) and a schema-valid wrong answer (a different value of the right type).
pub fn canned_answers(dataset: &DatasetRelease) -> Result<Vec<CannedAnswer>, DatasetError> {
    let rows = rows_from_files(&dataset.dir, &dataset.file_hashes)?;
    Ok(rows.iter().map(canned_answer).collect())
}

/// The canned answer pair of one row.
pub fn canned_answer(row: &Row) -> CannedAnswer {
    CannedAnswer {
        family: row.family.as_str().to_string(),
        user_prompt: row.user.clone(),
        correct: row.gold.to_json().to_string(),
        incorrect: wrong_answer(&row.gold).to_string(),
    }
}

/// A schema-valid answer that scores as incorrect against `gold`.
fn wrong_answer(gold: &Gold) -> serde_json::Value {
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
