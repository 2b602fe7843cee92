//! Strict one-value JSON (METHODOLOGY §5): surrounding whitespace allowed, nothing else.
//!
//! `serde_json` already rejects NaN/Infinity, comments and unquoted keys, but it silently keeps
//! the last of two equal keys when building a `Value`. This parser builds the `Value` through its
//! own visitor that refuses a repeated key, and checks that nothing but whitespace follows the
//! first value. No code-fence stripping, no repair.
//!
//! One number is read by hand: serde_json hands `-0` over as the float `-0.0`, but `-0` is a JSON
//! integer (no fraction, no exponent) whose value is 0, so it is read as the integer 0.

use super::EvalErrorType;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::fmt;

/// Why a text is not exactly one JSON value.
#[derive(Debug, thiserror::Error)]
pub enum StrictJsonError {
    /// Not JSON at all (syntax error, NaN/Infinity, code fences, comments, empty text).
    #[error("invalid JSON: {0}")]
    Invalid(#[source] serde_json::Error),
    /// An object repeats a key.
    #[error("duplicate key {0:?}")]
    DuplicateKey(String),
    /// A complete value is followed by more non-whitespace text.
    #[error("trailing value after the JSON value: {0}")]
    TrailingValue(#[source] serde_json::Error),
}

impl StrictJsonError {
    /// The evaluation's `error_type` for this error.
    pub fn error_type(&self) -> EvalErrorType {
        match self {
            StrictJsonError::Invalid(_) => EvalErrorType::InvalidJson,
            StrictJsonError::DuplicateKey(_) => EvalErrorType::DuplicateKey,
            StrictJsonError::TrailingValue(_) => EvalErrorType::TrailingValue,
        }
    }
}

/// Marker placed in the custom error message of a repeated key, so it can be told apart from
/// other data errors after serde_json wraps it.
const DUPLICATE_MARKER: &str = "\u{0}duplicate-key\u{0}";

/// Parses `text` as exactly one JSON value.
pub fn parse_strict(text: &str) -> Result<Value, StrictJsonError> {
    let text = integer_negative_zero_as_zero(text);
    let mut de = serde_json::Deserializer::from_str(&text);
    let value = match StrictValue::deserialize(&mut de) {
        Ok(StrictValue(v)) => v,
        Err(e) => {
            let message = e.to_string();
            if let Some(rest) = message.strip_prefix(DUPLICATE_MARKER) {
                let key = rest.split(DUPLICATE_MARKER).next().unwrap_or_default();
                return Err(StrictJsonError::DuplicateKey(key.to_string()));
            }
            return Err(StrictJsonError::Invalid(e));
        }
    };
    de.end().map_err(StrictJsonError::TrailingValue)?;
    Ok(value)
}

/// `text` with the sign dropped from every `-0` number token that has no fraction and no
/// exponent (outside strings); any other text is returned as it is.
fn integer_negative_zero_as_zero(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut cuts = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'-' => {
                let starts_number = i == 0 || !matches!(bytes[i - 1], b'e' | b'E');
                let zero = bytes.get(i + 1) == Some(&b'0');
                let ends = !matches!(bytes.get(i + 2), Some(b'0'..=b'9' | b'.' | b'e' | b'E'));
                if starts_number && zero && ends {
                    cuts.push(i);
                }
            }
            _ => {}
        }
    }
    if cuts.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for cut in cuts {
        out.push_str(&text[from..cut]);
        from = cut + 1;
    }
    out.push_str(&text[from..]);
    Cow::Owned(out)
}

/// A `Value` whose objects never repeat a key.
struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("non-finite number"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "{DUPLICATE_MARKER}{key}{DUPLICATE_MARKER}"
                )));
            }
            let StrictValue(value) = access.next_value()?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind(text: &str) -> &'static str {
        match parse_strict(text) {
            Ok(_) => "ok",
            Err(e) => e.error_type().as_str(),
        }
    }

    #[test]
    fn accepts_one_value_with_surrounding_whitespace() {
        assert_eq!(
            parse_strict(" \n\t{\"a\": [1, 2.5, null, true]}\r\n ").unwrap(),
            json!({"a": [1, 2.5, null, true]})
        );
        assert_eq!(parse_strict("\"x\"").unwrap(), json!("x"));
    }

    #[test]
    fn keeps_integers_and_floats_apart() {
        assert!(parse_strict("30").unwrap().is_u64());
        assert!(parse_strict("-3").unwrap().is_i64());
        assert!(parse_strict("30.0").unwrap().is_f64());
    }

    #[test]
    fn negative_zero_is_the_integer_zero_but_stays_a_float_with_a_fraction_or_exponent() {
        assert_eq!(parse_strict("-0").unwrap(), json!(0));
        assert!(parse_strict("-0").unwrap().is_u64());
        assert_eq!(
            parse_strict(r#"{"a": [-0, "-0", 1e-0, -0.0, -0e1]}"#).unwrap(),
            json!({"a": [0, "-0", 1.0, -0.0, -0.0]})
        );
        assert!(parse_strict("-0.0").unwrap().is_f64());
        // Not a number at all stays invalid.
        assert_eq!(kind("-"), "invalid_json");
        assert_eq!(kind("-01"), "invalid_json");
    }

    #[test]
    fn rejects_duplicate_keys_at_any_depth() {
        assert!(
            matches!(parse_strict(r#"{"a": 1, "a": 1}"#), Err(StrictJsonError::DuplicateKey(k)) if k == "a")
        );
        assert_eq!(kind(r#"{"o": [{"k": 1, "k": 2}]}"#), "duplicate_key");
        // Same key in two different objects is fine.
        assert_eq!(kind(r#"[{"k": 1}, {"k": 2}]"#), "ok");
    }

    #[test]
    fn rejects_trailing_values_fences_comments_and_non_finite() {
        assert_eq!(kind(r#"{"a": 1} {"a": 2}"#), "trailing_value");
        assert_eq!(kind(r#"{"a": 1} x"#), "trailing_value");
        assert_eq!(kind("```json\n{\"a\": 1}\n```"), "invalid_json");
        assert_eq!(kind("{\"a\": 1} // note"), "trailing_value");
        assert_eq!(kind("/* c */ {\"a\": 1}"), "invalid_json");
        assert_eq!(kind(r#"{"a": NaN}"#), "invalid_json");
        assert_eq!(kind(r#"{"a": Infinity}"#), "invalid_json");
        assert_eq!(kind(r#"{"a": -Infinity}"#), "invalid_json");
        assert_eq!(kind(""), "invalid_json");
        assert_eq!(kind("   "), "invalid_json");
        assert_eq!(kind(r#"{"a": 1,}"#), "invalid_json");
        assert_eq!(kind(r#"{'a': 1}"#), "invalid_json");
    }

    #[test]
    fn invalid_and_trailing_errors_keep_the_parser_error() {
        for text in ["{\"a\": NaN}", "{\"a\": 1} x"] {
            let err = parse_strict(text).expect_err("refused");
            let source = std::error::Error::source(&err).expect("the parser error is kept");
            assert!(source.is::<serde_json::Error>(), "{text}: {source:?}");
            assert!(err.to_string().ends_with(&source.to_string()), "{err}");
        }
    }
}
