//! The tool-call variant of every family (`benchmark.answer_via: tool_call`, docs/methodology.md
//! §5): the same items, asked to answer by calling one forced tool whose parameters schema is
//! the family's answer schema, and scored exactly as a JSON answer with the call's arguments as
//! the answer text, once the call itself is the one offered and whole.

use super::gold::{
    CONTRACT_BOOL_FIELDS, CONTRACT_DATE_FIELDS, CONTRACT_FIELDS, agreement_types,
    ticket_categories, ticket_priorities,
};
use super::{EvalClass, EvalErrorType, Family, GoldRef, Scored, family_fields, score_answer};
use openbench_common::record::TerminalRecord;
use openbench_common::tool::{ToolCallError, ToolChoice, ToolOffer};
use serde_json::{Map, Value, json};

/// The function each family's answer is a call of.
pub fn tool_name(family: Family) -> &'static str {
    match family {
        Family::MeetingNotesLookup => "answer_question",
        Family::TicketTriage => "triage",
        Family::ContractTermsExtraction => "record_contract_terms",
    }
}

/// The forced tool a family's requests offer: its name, a one-line description and the JSON
/// Schema of the family's answer object (exact keys, no others; enums, dates, booleans and
/// integer-or-null as METHODOLOGY §5 types them).
pub fn tool_for(family: Family) -> ToolOffer {
    let string = || json!({"type": "string"});
    let one_of = |values: &[&str]| json!({"type": "string", "enum": values});
    let (description, properties): (&str, Vec<(&str, Value)>) = match family {
        Family::MeetingNotesLookup => (
            "Give the answer to the question about the meeting notes.",
            vec![("answer", string())],
        ),
        Family::TicketTriage => (
            "File the support ticket under its category and priority.",
            vec![
                ("category", one_of(&ticket_categories())),
                ("priority", one_of(&ticket_priorities())),
            ],
        ),
        Family::ContractTermsExtraction => (
            "Record the terms extracted from the contract.",
            CONTRACT_FIELDS
                .iter()
                .map(|field| (*field, contract_field_schema(field)))
                .collect(),
        ),
    };
    let required: Vec<&str> = properties.iter().map(|(k, _)| *k).collect();
    let properties: Map<String, Value> = properties
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    ToolOffer {
        name: tool_name(family).to_string(),
        description: description.to_string(),
        parameters: json!({"type": "object", "properties": properties, "required": required,
            "additionalProperties": false}),
        choice: ToolChoice::Forced,
    }
}

fn contract_field_schema(field: &str) -> Value {
    if field == "agreement_type" {
        json!({"type": "string", "enum": agreement_types()})
    } else if CONTRACT_DATE_FIELDS.contains(&field) {
        json!({"type": "string", "format": "date"})
    } else if CONTRACT_BOOL_FIELDS.contains(&field) {
        json!({"type": "boolean"})
    } else {
        json!({"type": ["integer", "null"]})
    }
}

/// Scores a completed record: as a JSON answer when its request offered no tool; else the
/// stream must carry exactly one whole call of the offered tool, whose arguments are then
/// scored as the answer (strict JSON, the family's schema, equal to the gold).
pub fn score_record(gold: &GoldRef, record: &TerminalRecord) -> Scored {
    match answer_text(record) {
        Ok(text) => score_answer(gold, text),
        Err((error_type, detail)) => Scored {
            classification: EvalClass::InvalidResult,
            error_type: Some(error_type),
            error_detail: Some(detail),
            schema_valid: false,
            correct: false,
            field_correct: vec![false; family_fields(gold.family()).len()],
        },
    }
}

/// The text a record answered with: its answer text, or the arguments of its one call of the
/// offered tool; else why there is none to score.
pub fn answer_text(record: &TerminalRecord) -> Result<&str, (EvalErrorType, String)> {
    let Some(offered) = record.offered_tool.as_deref() else {
        return Ok(&record.answer_text);
    };
    match record.tool_call_error {
        Some(ToolCallError::MalformedToolCall) => {
            return Err((
                EvalErrorType::MalformedToolCall,
                "the tool call's arguments are not JSON".into(),
            ));
        }
        Some(ToolCallError::TruncatedToolCall) => {
            return Err((
                EvalErrorType::TruncatedToolCall,
                "the tool call was cut off".into(),
            ));
        }
        None => {}
    }
    match record.tool_calls.as_slice() {
        [] => Err((
            EvalErrorType::NoToolCall,
            format!("no call of the offered tool {offered:?}"),
        )),
        [call] if call.name == offered => Ok(&call.arguments),
        [call] => Err((
            EvalErrorType::WrongToolCall,
            format!("called {:?}, not the offered {offered:?}", call.name),
        )),
        calls => Err((
            EvalErrorType::WrongToolCall,
            format!("{} calls, not one call of {offered:?}", calls.len()),
        )),
    }
}

#[cfg(test)]
#[path = "tool_call_tests.rs"]
mod tests;
