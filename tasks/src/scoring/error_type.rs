//! The `error_type` of an evaluation: why an answer is not a valid result, or why its request
//! failed. One enum, so scoring, metrics and the artifacts name the same labels the same way;
//! serde writes exactly the labels of METHODOLOGY §5 (`invalid_json`, `schema_enum`, …) and, for
//! a failed request, the record's own failure label (`http_429`, `timeout`, …).

use openbench_common::record::{ErrorType, Outcome};
use openbench_report_kit::observe::{error_type_label, outcome_label};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Why an evaluation is not a valid result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvalErrorType {
    /// The answer text is empty or whitespace.
    EmptyAnswer,
    /// Not JSON at all (syntax, NaN/Infinity, code fences, comments).
    InvalidJson,
    /// An object repeats a key.
    DuplicateKey,
    /// More non-whitespace text after the JSON value.
    TrailingValue,
    /// A value of the wrong JSON type (or an answer that is not an object).
    SchemaType,
    /// A required key is missing.
    SchemaMissingKey,
    /// A key the schema does not allow.
    SchemaExtraKey,
    /// A string outside its field's allowed values.
    SchemaEnum,
    /// A date string that is not a real `YYYY-MM-DD` date.
    InvalidDate,
    /// The request offered a tool and the stream carried no call of it (text instead).
    NoToolCall,
    /// A call of another tool than the one offered, or more than one call.
    WrongToolCall,
    /// The call's arguments are not JSON (the record's `tool_call_error`).
    MalformedToolCall,
    /// The call was cut off: length stop or stream end inside it (the record's
    /// `tool_call_error`).
    TruncatedToolCall,
    /// A failed request: the record's failure type, written as its own label.
    #[serde(untagged)]
    Failure(ErrorType),
    /// A failed request whose record names no failure type: its outcome label.
    #[serde(untagged)]
    Outcome(Outcome),
}

impl EvalErrorType {
    /// The label written in `evaluations.jsonl` (the serde form).
    pub fn as_str(self) -> &'static str {
        match self {
            EvalErrorType::EmptyAnswer => "empty_answer",
            EvalErrorType::InvalidJson => "invalid_json",
            EvalErrorType::DuplicateKey => "duplicate_key",
            EvalErrorType::TrailingValue => "trailing_value",
            EvalErrorType::SchemaType => "schema_type",
            EvalErrorType::SchemaMissingKey => "schema_missing_key",
            EvalErrorType::SchemaExtraKey => "schema_extra_key",
            EvalErrorType::SchemaEnum => "schema_enum",
            EvalErrorType::InvalidDate => "invalid_date",
            EvalErrorType::NoToolCall => "no_tool_call",
            EvalErrorType::WrongToolCall => "wrong_tool_call",
            EvalErrorType::MalformedToolCall => "malformed_tool_call",
            EvalErrorType::TruncatedToolCall => "truncated_tool_call",
            EvalErrorType::Failure(e) => error_type_label(e),
            EvalErrorType::Outcome(o) => outcome_label(o),
        }
    }

    /// The evaluation error of a request that did not complete: its failure type, else its
    /// outcome.
    pub fn of_failure(error_type: Option<ErrorType>, outcome: Outcome) -> EvalErrorType {
        error_type.map_or(EvalErrorType::Outcome(outcome), EvalErrorType::Failure)
    }
}

impl fmt::Display for EvalErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant, with the label written by hand.
    fn every_label() -> Vec<(EvalErrorType, &'static str)> {
        vec![
            (EvalErrorType::EmptyAnswer, "empty_answer"),
            (EvalErrorType::InvalidJson, "invalid_json"),
            (EvalErrorType::DuplicateKey, "duplicate_key"),
            (EvalErrorType::TrailingValue, "trailing_value"),
            (EvalErrorType::SchemaType, "schema_type"),
            (EvalErrorType::SchemaMissingKey, "schema_missing_key"),
            (EvalErrorType::SchemaExtraKey, "schema_extra_key"),
            (EvalErrorType::SchemaEnum, "schema_enum"),
            (EvalErrorType::InvalidDate, "invalid_date"),
            (EvalErrorType::NoToolCall, "no_tool_call"),
            (EvalErrorType::WrongToolCall, "wrong_tool_call"),
            (EvalErrorType::MalformedToolCall, "malformed_tool_call"),
            (EvalErrorType::TruncatedToolCall, "truncated_tool_call"),
            (EvalErrorType::Failure(ErrorType::Http429), "http_429"),
            (
                EvalErrorType::Failure(ErrorType::OtherHttp4xx),
                "other_http_4xx",
            ),
            (EvalErrorType::Failure(ErrorType::Harness), "harness"),
            (EvalErrorType::Outcome(Outcome::HttpError), "http_error"),
            (
                EvalErrorType::Outcome(Outcome::TransportError),
                "transport_error",
            ),
        ]
    }

    #[test]
    fn serde_and_as_str_write_the_methodology_labels() {
        for (error_type, label) in every_label() {
            assert_eq!(error_type.as_str(), label);
            assert_eq!(
                serde_json::to_string(&error_type).unwrap(),
                format!("\"{label}\"")
            );
        }
    }

    #[test]
    fn labels_read_back_to_the_same_error_type() {
        for (error_type, label) in every_label() {
            let read: EvalErrorType = serde_json::from_str(&format!("\"{label}\"")).unwrap();
            assert_eq!(read, error_type, "{label}");
        }
    }

    #[test]
    fn a_failure_without_a_type_is_labelled_by_its_outcome() {
        assert_eq!(
            EvalErrorType::of_failure(None, Outcome::HttpError).as_str(),
            "http_error"
        );
        assert_eq!(
            EvalErrorType::of_failure(Some(ErrorType::Http5xx), Outcome::HttpError).as_str(),
            "http_5xx"
        );
    }
}
