//! Exact scoring (METHODOLOGY §5): strict JSON, exact schemas, no partial credit.
//!
//! `score_answer` turns one answer text and its gold into a [`Scored`]; `Evaluation` is the
//! line written to `artifacts/evaluations.jsonl` and by `score`.

pub mod answers;
pub mod error_type;
pub mod gold;
pub mod schema;
pub mod strict_json;
pub mod tool_call;

pub use error_type::EvalErrorType;
pub use gold::{Family, GoldRef, family_fields};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use unicase::UniCase;

/// The four evaluation classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvalClass {
    /// Schema-valid and correct.
    ValidResult,
    /// Schema-valid and wrong.
    IncorrectResult,
    /// Malformed JSON or a schema error.
    InvalidResult,
    /// An operational failure: no answer to score.
    FailedRequest,
}

/// The verdict on one answer text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scored {
    /// Class of the answer.
    pub classification: EvalClass,
    /// Why it is invalid (`invalid_json`, `duplicate_key`, `schema_enum`, …); `None` when valid.
    pub error_type: Option<EvalErrorType>,
    /// Human-readable detail of the error.
    pub error_detail: Option<String>,
    /// True when the answer parsed and met the family's schema.
    pub schema_valid: bool,
    /// True when schema-valid and equal to the gold.
    pub correct: bool,
    /// Per-field correctness, aligned with [`family_fields`].
    pub field_correct: Vec<bool>,
}

impl Scored {
    /// Number of correct fields.
    pub fn correct_field_count(&self) -> u32 {
        self.field_correct.iter().filter(|c| **c).count() as u32
    }
}

/// Normalisation for meeting-note answers: trim, collapse whitespace runs to one space, full
/// Unicode case fold (CaseFolding.txt C+F: `ß` → `ss`, `ﬁ` → `fi`). Whitespace is Python's
/// `str.split()` set (Unicode White_Space plus U+001C–U+001F), as the reference runner uses.
pub fn normalize(text: &str) -> String {
    let is_space = |c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c);
    let collapsed: Vec<&str> = text.split(is_space).filter(|w| !w.is_empty()).collect();
    UniCase::new(collapsed.join(" ")).to_folded_case()
}

/// Scores one answer text against its gold.
pub fn score_answer(gold: &GoldRef, answer_text: &str) -> Scored {
    let family = gold.family();
    let invalid = |error_type: EvalErrorType, detail: String, field_correct: Vec<bool>| Scored {
        classification: EvalClass::InvalidResult,
        error_type: Some(error_type),
        error_detail: Some(detail),
        schema_valid: false,
        correct: false,
        field_correct,
    };
    let none_correct = vec![false; family_fields(family).len()];
    if answer_text.trim().is_empty() {
        return invalid(
            EvalErrorType::EmptyAnswer,
            "the answer is empty".into(),
            none_correct,
        );
    }
    let value = match strict_json::parse_strict(answer_text) {
        Ok(v) => v,
        Err(e) => return invalid(e.error_type(), e.to_string(), none_correct),
    };
    let map = match schema::as_object(&value) {
        Ok(m) => m,
        Err(p) => return invalid(p.error_type, p.message, none_correct),
    };
    let field_correct = fields_correct(gold, map);
    let check = match family {
        Family::MeetingNotesLookup => schema::check_meeting(map),
        Family::TicketTriage => schema::check_ticket(map),
        Family::ContractTermsExtraction => schema::check_contract(map),
    };
    if let Err(p) = check {
        return invalid(p.error_type, p.message, field_correct);
    }
    let correct = field_correct.iter().all(|c| *c);
    Scored {
        classification: if correct {
            EvalClass::ValidResult
        } else {
            EvalClass::IncorrectResult
        },
        error_type: None,
        error_detail: None,
        schema_valid: true,
        correct,
        field_correct,
    }
}

/// Per-field correctness of a parsed object: a field counts when it is type-valid on its own and
/// equals the gold, even if another field breaks the schema (diagnostics only).
fn fields_correct(gold: &GoldRef, map: &Map<String, Value>) -> Vec<bool> {
    match gold {
        GoldRef::MeetingNotes { value, aliases } => {
            let ok = match map.get("answer") {
                Some(Value::String(answer)) => {
                    let answer = normalize(answer);
                    std::iter::once(value)
                        .chain(aliases.iter())
                        .any(|g| normalize(g) == answer)
                }
                _ => false,
            };
            vec![ok]
        }
        GoldRef::TicketTriage { category, priority } => vec![
            map.get("category").and_then(Value::as_str) == Some(category.as_str()),
            map.get("priority").and_then(Value::as_str) == Some(priority.as_str()),
        ],
        GoldRef::Contract(expected) => gold::CONTRACT_FIELDS
            .iter()
            .map(|field| {
                let got = map.get(*field);
                schema::check_contract_field(field, got).is_ok() && got == expected.get(*field)
            })
            .collect(),
    }
}

/// One evaluation line (`artifacts/evaluations.jsonl`, `score` output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// Dataset item id.
    pub item_id: String,
    /// Request id, when the answer comes from a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Round index, when the answer comes from a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_index: Option<u64>,
    /// Provider key, when the answer comes from a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Lane label, when it differs from the provider key (several regions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    /// Task family.
    pub task_family: String,
    /// Evaluation class.
    pub classification: EvalClass,
    /// Scoring error (`invalid_json`, …) or, for a failed request, its failure type.
    pub error_type: Option<EvalErrorType>,
    /// True when the answer met its schema.
    pub schema_valid: bool,
    /// True when schema-valid and exactly right.
    pub correct: bool,
    /// Number of correct fields.
    pub correct_field_count: u32,
    /// Field → correct.
    pub field_correct: BTreeMap<String, bool>,
}

impl Evaluation {
    /// The evaluation of a scored answer for `item_id`, without run identity.
    pub fn from_scored(item_id: &str, family: Family, scored: &Scored) -> Evaluation {
        Evaluation {
            item_id: item_id.to_string(),
            request_id: None,
            round_index: None,
            provider: None,
            lane: None,
            task_family: family.as_str().to_string(),
            classification: scored.classification,
            error_type: scored.error_type,
            schema_valid: scored.schema_valid,
            correct: scored.correct,
            correct_field_count: scored.correct_field_count(),
            field_correct: family_fields(family)
                .iter()
                .zip(&scored.field_correct)
                .map(|(f, c)| (f.to_string(), *c))
                .collect(),
        }
    }
}

/// The verdict for a request that failed operationally: nothing to score, every field wrong.
pub fn failed(family: Family, error_type: EvalErrorType) -> Scored {
    Scored {
        classification: EvalClass::FailedRequest,
        error_type: Some(error_type),
        error_detail: None,
        schema_valid: false,
        correct: false,
        field_correct: vec![false; family_fields(family).len()],
    }
}

/// True when `answer_text` parses strictly and meets `family`'s schema (the smoke criterion).
pub fn is_schema_valid(family: Family, answer_text: &str) -> bool {
    let Ok(value) = strict_json::parse_strict(answer_text) else {
        return false;
    };
    let Ok(map) = schema::as_object(&value) else {
        return false;
    };
    match family {
        Family::MeetingNotesLookup => schema::check_meeting(map).is_ok(),
        Family::TicketTriage => schema::check_ticket(map).is_ok(),
        Family::ContractTermsExtraction => schema::check_contract(map).is_ok(),
    }
}
