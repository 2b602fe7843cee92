//! Enum labels as the run directory's files spell them (their serde names), so a stored
//! `outcome` reads like the record's, and a stored label parses back into the same value.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The serde name of a unit enum value (`completed`, `valid_result`, `http_429`, …).
pub fn label(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// The value a label names, or `None` for a label this build does not know.
pub fn parse<T: DeserializeOwned>(label: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(label.to_string())).ok()
}
