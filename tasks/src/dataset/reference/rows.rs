//! One family file of a reference release, checked row by row.

use super::super::load::{RowTexts, parse_gold, show};
use super::super::manifest::TokenBand;
use super::super::{CONTRACT_FIELDS, Family, Gold, Problem, Row};
use super::{expected_schema, token_field, universal_newlines};
use openbench_common::hash::{canonical_json, sha256_hex};
use serde_json::Value;

/// What every row of one family file is checked against.
pub(super) struct FamilyCheck<'a> {
    pub(super) family: Family,
    pub(super) file: &'a str,
    /// The template text the system prompt must equal (`None` when unreadable: reported once).
    pub(super) template: Option<&'a str>,
    pub(super) band: TokenBand,
}

const REQUIRED: [&str; 8] = [
    "id",
    "use_case",
    "split",
    "prompt",
    "output_schema",
    "gold",
    "aliases",
    "tokens",
];

impl FamilyCheck<'_> {
    /// Every line of the file (lines as Python reads them); bad rows add problems, are left out.
    pub(super) fn parse_file(&self, text: &str, problems: &mut Vec<Problem>) -> Vec<Row> {
        let text = universal_newlines(text);
        let body = text.strip_suffix('\n').unwrap_or(&text);
        let mut rows = Vec::new();
        if body.is_empty() {
            return rows;
        }
        for (index, line) in body.split('\n').enumerate() {
            let number = index + 1;
            let mut bad = |field: &str, message: String| {
                problems.push(Problem {
                    file: self.file.to_string(),
                    line: Some(number),
                    field: field.to_string(),
                    message,
                })
            };
            match serde_json::from_str::<Value>(line) {
                Ok(value) => {
                    if let Some(row) = self.parse_row(number, &value, &mut bad) {
                        rows.push(row);
                    }
                }
                Err(e) => bad("-", format!("not valid JSON: {e}")),
            }
        }
        rows
    }

    fn parse_row(
        &self,
        line: usize,
        value: &Value,
        bad: &mut impl FnMut(&str, String),
    ) -> Option<Row> {
        let Value::Object(obj) = value else {
            bad("-", "a row must be a JSON object".into());
            return None;
        };
        let mut ok = true;
        for key in REQUIRED.iter().filter(|k| !obj.contains_key(**k)) {
            bad(key, "missing".into());
            ok = false;
        }
        let RowTexts {
            id,
            use_case,
            split,
            system,
            user,
        } = RowTexts::read(obj, bad, &mut ok);
        let prompt = obj.get("prompt");
        if let Some(Value::Object(p)) = prompt {
            for key in p.keys().filter(|k| *k != "system" && *k != "user") {
                bad(&format!("prompt.{key}"), "unexpected key".into());
                ok = false;
            }
        }
        if !use_case.is_empty() && use_case != self.family.as_str() {
            bad(
                "use_case",
                format!("expected {:?}, found {use_case:?}", self.family.as_str()),
            );
            ok = false;
        }
        if !split.is_empty() && split != "private" {
            bad("split", format!("must be \"private\", found {split:?}"));
            ok = false;
        }
        if let Some(template) = self.template
            && !system.is_empty()
            && system != template
        {
            bad(
                "prompt.system",
                "differs from the release's prompt template".into(),
            );
            ok = false;
        }
        let expected = expected_schema(self.family);
        if obj.contains_key("output_schema") && obj.get("output_schema") != Some(&expected) {
            bad(
                "output_schema",
                format!(
                    "must be {expected}, found {}",
                    show(obj.get("output_schema"))
                ),
            );
            ok = false;
        }
        let aliases = self.aliases(obj.get("aliases"), &mut ok, bad);
        let field = token_field(self.family);
        let tokens = match obj.get("tokens").and_then(|t| t.get(field)) {
            Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64().unwrap_or(0),
            other => {
                bad(
                    &format!("tokens.{field}"),
                    format!("must be a non-negative integer, found {}", show(other)),
                );
                ok = false;
                0
            }
        };
        if ok && (tokens < self.band.min || tokens > self.band.max) {
            bad(
                &format!("tokens.{field}"),
                format!(
                    "{tokens} outside the band {}..={}",
                    self.band.min, self.band.max
                ),
            );
            ok = false;
        }
        let gold = self.gold(obj.get("gold"), bad);
        let gold = gold?;
        if !ok {
            return None;
        }
        Some(Row {
            id,
            family: self.family,
            split,
            system,
            user,
            output_schema: expected,
            gold,
            aliases,
            prompt_tokens: tokens,
            item_hash: sha256_hex(canonical_json(value).as_bytes()),
            file: self.file.to_string(),
            line,
        })
    }

    /// Meeting notes: a list of non-empty strings; other families: an empty list.
    fn aliases(
        &self,
        value: Option<&Value>,
        ok: &mut bool,
        bad: &mut impl FnMut(&str, String),
    ) -> Vec<String> {
        let Some(Value::Array(items)) = value else {
            if value.is_some() {
                bad(
                    "aliases",
                    format!("must be an array of strings, found {}", show(value)),
                );
                *ok = false;
            }
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) if !s.trim().is_empty() => out.push(s.clone()),
                other => {
                    bad(
                        &format!("aliases[{i}]"),
                        format!("must be a non-empty string, found {other}"),
                    );
                    *ok = false;
                }
            }
        }
        if self.family != Family::MeetingNotesLookup && !out.is_empty() {
            bad(
                "aliases",
                "only meeting-notes-lookup rows may have aliases".into(),
            );
            *ok = false;
        }
        out
    }

    /// Meeting notes: exactly `{type, value}`; contracts: the ten fields in the reference's
    /// order; then the family's typed checks, shared with our own format.
    fn gold(&self, value: Option<&Value>, bad: &mut impl FnMut(&str, String)) -> Option<Gold> {
        let Some(Value::Object(gold)) = value else {
            if value.is_some() {
                bad("gold", format!("must be an object, found {}", show(value)));
            }
            return None;
        };
        match self.family {
            Family::MeetingNotesLookup => {
                let mut ok = true;
                for key in gold.keys().filter(|k| *k != "type" && *k != "value") {
                    bad(&format!("gold.{key}"), "unexpected key".into());
                    ok = false;
                }
                for key in ["type", "value"] {
                    match gold.get(key) {
                        Some(Value::String(s)) if !s.trim().is_empty() => {}
                        other => {
                            bad(
                                &format!("gold.{key}"),
                                format!("must be a non-empty string, found {}", show(other)),
                            );
                            ok = false;
                        }
                    }
                }
                let answer = gold.get("value").and_then(Value::as_str)?;
                ok.then(|| Gold::MeetingNotes {
                    answer: answer.to_string(),
                })
            }
            Family::ContractTermsExtraction => {
                let typed = parse_gold(self.family, gold, bad)?;
                let order: Vec<&str> = gold.keys().map(String::as_str).collect();
                if order != CONTRACT_FIELDS {
                    bad(
                        "gold",
                        format!(
                            "fields must be in the order {}; found {}",
                            CONTRACT_FIELDS.join(", "),
                            order.join(", ")
                        ),
                    );
                    return None;
                }
                Some(typed)
            }
            Family::TicketTriage => parse_gold(self.family, gold, bad),
        }
    }
}
