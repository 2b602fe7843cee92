//! Exact answer schemas of the three families (METHODOLOGY §5) and per-field comparison.
//!
//! A schema check names the first problem found, in a fixed order: missing keys, extra keys,
//! then each field in the family's field order (type before enum/date).

use super::EvalErrorType;
use super::gold::{
    CONTRACT_BOOL_FIELDS, CONTRACT_DATE_FIELDS, CONTRACT_FIELDS, agreement_types,
    ticket_categories, ticket_priorities,
};
pub use crate::dataset::is_iso_date;
use serde_json::{Map, Value};

/// Why a parsed answer breaks its family's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaProblem {
    /// `SchemaType`, `SchemaMissingKey`, `SchemaExtraKey`, `SchemaEnum` or `InvalidDate`.
    pub error_type: EvalErrorType,
    /// What was wrong, naming the field.
    pub message: String,
}

fn problem(error_type: EvalErrorType, message: String) -> SchemaProblem {
    SchemaProblem {
        error_type,
        message,
    }
}

/// The answer as an object, or a `schema_type` problem.
pub fn as_object(value: &Value) -> Result<&Map<String, Value>, SchemaProblem> {
    value.as_object().ok_or_else(|| {
        problem(
            EvalErrorType::SchemaType,
            "the answer must be a JSON object".into(),
        )
    })
}

/// Checks that `map` has exactly the keys `expected`.
fn exact_keys(map: &Map<String, Value>, expected: &[&str]) -> Result<(), SchemaProblem> {
    if let Some(missing) = expected.iter().find(|k| !map.contains_key(**k)) {
        return Err(problem(
            EvalErrorType::SchemaMissingKey,
            format!("missing key {missing:?}"),
        ));
    }
    let mut extra: Vec<&String> = map
        .keys()
        .filter(|k| !expected.contains(&k.as_str()))
        .collect();
    extra.sort();
    if let Some(extra) = extra.first() {
        return Err(problem(
            EvalErrorType::SchemaExtraKey,
            format!("unexpected key {extra:?}"),
        ));
    }
    Ok(())
}

/// A string field whose value must be one of `allowed` (exact, lowercase).
fn enum_field(map: &Map<String, Value>, key: &str, allowed: &[&str]) -> Result<(), SchemaProblem> {
    match map.get(key) {
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(()),
        Some(Value::String(s)) => Err(problem(
            EvalErrorType::SchemaEnum,
            format!("{key}: {s:?} is not one of {}", allowed.join(", ")),
        )),
        _ => Err(problem(
            EvalErrorType::SchemaType,
            format!("{key}: expected a string"),
        )),
    }
}

/// `{"answer": string}`.
pub fn check_meeting(map: &Map<String, Value>) -> Result<(), SchemaProblem> {
    exact_keys(map, &["answer"])?;
    match map.get("answer") {
        Some(Value::String(_)) => Ok(()),
        _ => Err(problem(
            EvalErrorType::SchemaType,
            "answer: expected a string".into(),
        )),
    }
}

/// `{"category": …, "priority": …}` with lowercase enum values.
pub fn check_ticket(map: &Map<String, Value>) -> Result<(), SchemaProblem> {
    exact_keys(map, &["category", "priority"])?;
    enum_field(map, "category", &ticket_categories())?;
    enum_field(map, "priority", &ticket_priorities())
}

/// The ten typed contract fields.
pub fn check_contract(map: &Map<String, Value>) -> Result<(), SchemaProblem> {
    exact_keys(map, &CONTRACT_FIELDS)?;
    for field in CONTRACT_FIELDS {
        check_contract_field(field, map.get(field))?;
    }
    Ok(())
}

/// One contract field against its type: enum, ISO date, JSON boolean, or JSON integer / null.
pub fn check_contract_field(field: &str, value: Option<&Value>) -> Result<(), SchemaProblem> {
    let Some(value) = value else {
        return Err(problem(
            EvalErrorType::SchemaMissingKey,
            format!("missing key {field:?}"),
        ));
    };
    if field == "agreement_type" {
        let mut map = Map::new();
        map.insert(field.to_string(), value.clone());
        return enum_field(&map, field, &agreement_types());
    }
    if CONTRACT_DATE_FIELDS.contains(&field) {
        return match value {
            Value::String(s) if is_iso_date(s) => Ok(()),
            Value::String(s) => Err(problem(
                EvalErrorType::InvalidDate,
                format!("{field}: {s:?} is not a real YYYY-MM-DD date"),
            )),
            _ => Err(problem(
                EvalErrorType::SchemaType,
                format!("{field}: expected a date string"),
            )),
        };
    }
    if CONTRACT_BOOL_FIELDS.contains(&field) {
        return match value {
            Value::Bool(_) => Ok(()),
            _ => Err(problem(
                EvalErrorType::SchemaType,
                format!("{field}: expected a JSON boolean"),
            )),
        };
    }
    match value {
        Value::Null => Ok(()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(()),
        _ => Err(problem(
            EvalErrorType::SchemaType,
            format!("{field}: expected a JSON integer or null"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates_must_exist() {
        assert!(is_iso_date("2027-02-28"));
        assert!(is_iso_date("2028-02-29")); // 2028 is a leap year (divisible by 4, not by 100)
        assert!(!is_iso_date("2027-02-29")); // 2027 is not
        assert!(!is_iso_date("2100-02-29")); // divisible by 100, not by 400
        assert!(is_iso_date("2000-02-29")); // divisible by 400
        assert!(!is_iso_date("2027-02-30"));
        assert!(!is_iso_date("2027-04-31"));
        assert!(!is_iso_date("2027-13-01"));
        assert!(!is_iso_date("2027-00-10"));
        assert!(!is_iso_date("0000-01-01"));
        assert!(is_iso_date("0001-01-01"));
        assert!(!is_iso_date("2027-1-01"));
        assert!(!is_iso_date("2027/01/01"));
        assert!(!is_iso_date("2027-01-01T00:00:00"));
        assert!(!is_iso_date("２０２７-01-01")); // full-width digits are not ASCII digits
    }
}
