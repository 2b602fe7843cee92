//! The validating loader: every problem is collected with its file, line and field.

use super::contract_gold::parse_contract;
use super::manifest::{Manifest, release_hash};
use super::{
    CONTRACT_FIELDS, Category, DatasetError, Family, Gold, Priority, Problem, Release, Row,
    TicketGold,
};
use openbench_common::hash::{canonical_json, sha256_hex};
use openbench_common::input_file::{DATASET_FILE_BYTES, read_regular};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Loads and validates a release in our own format (`families` in the manifest); see
/// [`super::load_release`] for the entry point that also reads the reference runner's format.
///
/// Refuses (listing every problem) a release whose file hashes, row counts, private counts or
/// release hash disagree with the manifest, or any row with a bad field: duplicate id, wrong
/// `use_case`, unknown split, empty prompt, gold of the wrong shape, an invalid date, aliases that
/// are not strings, a prompt-token count outside the declared band.
pub(super) fn load_own_release(
    dir: &Path,
    manifest: &str,
    text: String,
) -> Result<Release, DatasetError> {
    let mut problems = Vec::new();
    let refuse = |problems: Vec<Problem>| DatasetError::Invalid {
        dir: dir.to_path_buf(),
        problems,
    };
    let Some(parsed) = Manifest::parse(manifest, &text, &mut problems) else {
        return Err(refuse(problems));
    };
    let mut rows = Vec::new();
    let mut file_hashes = BTreeMap::new();
    for (family, entry) in &parsed.families {
        let bytes = match read_regular(&dir.join(&entry.file), DATASET_FILE_BYTES) {
            Ok(b) => b,
            Err(e) => {
                problems.push(whole(&entry.file, format!("cannot read: {e}")));
                continue;
            }
        };
        let actual = sha256_hex(&bytes);
        if actual != entry.sha256 {
            problems.push(Problem {
                file: entry.file.clone(),
                line: None,
                field: "sha256".into(),
                message: format!(
                    "hash disagrees with {manifest}: expected {}, actual {actual}",
                    entry.sha256
                ),
            });
        }
        file_hashes.insert(entry.file.clone(), actual);
        let Ok(text) = String::from_utf8(bytes) else {
            problems.push(whole(&entry.file, "not UTF-8".into()));
            continue;
        };
        let family_rows = parse_file(*family, &entry.file, &text, &mut problems);
        if family_rows.len() != entry.rows {
            problems.push(Problem {
                file: entry.file.clone(),
                line: None,
                field: "rows".into(),
                message: format!(
                    "row count disagrees with {manifest}: expected {}, actual {}",
                    entry.rows,
                    family_rows.len()
                ),
            });
        }
        let private = family_rows.iter().filter(|r| r.split == "private").count();
        if private != entry.private_items {
            problems.push(Problem {
                file: entry.file.clone(),
                line: None,
                field: "private_items".into(),
                message: format!(
                    "private row count disagrees with {manifest}: expected {}, actual {private}",
                    entry.private_items
                ),
            });
        }
        if let Some(band) = entry.token_band {
            for row in family_rows
                .iter()
                .filter(|r| r.prompt_tokens < band.min || r.prompt_tokens > band.max)
            {
                problems.push(Problem {
                    file: entry.file.clone(),
                    line: Some(row.line),
                    field: "tokens.prompt".into(),
                    message: format!(
                        "{} outside the band {}..={}",
                        row.prompt_tokens, band.min, band.max
                    ),
                });
            }
        }
        rows.extend(family_rows);
    }
    let mut seen: HashMap<&str, (&str, usize)> = HashMap::new();
    for row in &rows {
        if let Some((file, line)) = seen.insert(&row.id, (&row.file, row.line)) {
            problems.push(Problem {
                file: row.file.clone(),
                line: Some(row.line),
                field: "id".into(),
                message: format!("duplicate id {:?}, first at {file}:{line}", row.id),
            });
        }
    }
    let computed = release_hash(
        file_hashes
            .iter()
            .map(|(path, hash)| (path.as_str(), hash.as_str())),
    );
    if problems.is_empty() && computed != parsed.release_hash {
        problems.push(Problem {
            file: manifest.to_string(),
            line: None,
            field: "release_hash".into(),
            message: format!("expected {}, actual {computed}", parsed.release_hash),
        });
    }
    if !problems.is_empty() {
        return Err(refuse(problems));
    }
    Ok(Release::new(
        dir.to_path_buf(),
        super::ReleaseFormat::Own,
        parsed,
        computed,
        file_hashes,
        rows,
    ))
}

/// [`super::load_release`] plus checks only our generated corpora pass: `tokens.prompt` recounted with
/// o200k_base, and every gold re-derived from the prompt text by [`super::extract`].
pub fn validate_strict(dir: &Path, manifest: &str) -> Result<Release, DatasetError> {
    let release = super::load_release(dir, manifest)?;
    let mut problems = Vec::new();
    for row in release.rows() {
        let counted = super::generate::prompt_tokens(&row.system, &row.user);
        if counted != row.prompt_tokens {
            problems.push(Problem {
                file: row.file.clone(),
                line: Some(row.line),
                field: "tokens.prompt".into(),
                message: format!(
                    "recorded {}, o200k_base counts {counted}",
                    row.prompt_tokens
                ),
            });
        }
        if let Err(why) = super::extract::recheck(&row.gold, &row.aliases, &row.user) {
            problems.push(Problem {
                file: row.file.clone(),
                line: Some(row.line),
                field: "gold".into(),
                message: format!("the rule-based extractor disagrees: {why}"),
            });
        }
    }
    if problems.is_empty() {
        Ok(release)
    } else {
        Err(DatasetError::Invalid {
            dir: dir.to_path_buf(),
            problems,
        })
    }
}

pub(super) fn whole(file: &str, message: String) -> Problem {
    Problem {
        file: file.to_string(),
        line: None,
        field: "-".into(),
        message,
    }
}

/// Parses every line of one family file (`file` names it in problems); bad rows add problems
/// and are left out. Public for the fuzz target of the row validator.
pub fn parse_file(family: Family, file: &str, text: &str, problems: &mut Vec<Problem>) -> Vec<Row> {
    let mut rows = Vec::new();
    let body = text.strip_suffix('\n').unwrap_or(text);
    if body.is_empty() {
        return rows;
    }
    for (index, line) in body.split('\n').enumerate() {
        let number = index + 1;
        let mut bad = |field: &str, message: String| {
            problems.push(Problem {
                file: file.to_string(),
                line: Some(number),
                field: field.to_string(),
                message,
            })
        };
        if line.trim().is_empty() {
            bad("-", "blank line".into());
            continue;
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                bad("-", format!("not valid JSON: {e}"));
                continue;
            }
        };
        if let Some(row) = parse_row(family, file, number, &value, &mut bad) {
            rows.push(row);
        }
    }
    rows
}

fn parse_row(
    family: Family,
    file: &str,
    line: usize,
    value: &Value,
    bad: &mut impl FnMut(&str, String),
) -> Option<Row> {
    let Value::Object(obj) = value else {
        bad("-", "a row must be a JSON object".into());
        return None;
    };
    let mut ok = true;
    let RowTexts {
        id,
        use_case,
        split,
        system,
        user,
    } = RowTexts::read(obj, bad, &mut ok);
    if !use_case.is_empty() && use_case != family.as_str() {
        let what = match Family::parse(&use_case) {
            Some(_) => "belongs to another family's file",
            None => "unknown family",
        };
        bad(
            "use_case",
            format!("{what}: expected {:?}, found {use_case:?}", family.as_str()),
        );
        ok = false;
    }
    if !split.is_empty() && split != "private" && split != "public" {
        bad(
            "split",
            format!("must be \"private\" or \"public\", found {split:?}"),
        );
        ok = false;
    }
    if !matches!(obj.get("output_schema"), Some(Value::Object(_))) {
        bad(
            "output_schema",
            format!(
                "must be an object, found {}",
                show(obj.get("output_schema"))
            ),
        );
        ok = false;
    }
    let aliases = match obj.get("aliases") {
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) if !s.trim().is_empty() => out.push(s.clone()),
                    other => {
                        bad(
                            &format!("aliases[{i}]"),
                            format!("must be a non-empty string, found {other}"),
                        );
                        ok = false;
                    }
                }
            }
            out
        }
        other => {
            bad(
                "aliases",
                format!("must be an array of strings, found {}", show(other)),
            );
            ok = false;
            Vec::new()
        }
    };
    if family != Family::MeetingNotesLookup && !aliases.is_empty() {
        bad(
            "aliases",
            "only meeting-notes-lookup rows may have aliases".into(),
        );
        ok = false;
    }
    let prompt_tokens = match obj.get("tokens").and_then(|t| t.get("prompt")) {
        Some(v) if v.as_u64().is_some() => v.as_u64().unwrap_or(0),
        other => {
            bad(
                "tokens.prompt",
                format!("must be a non-negative integer, found {}", show(other)),
            );
            ok = false;
            0
        }
    };
    let gold = match obj.get("gold") {
        Some(Value::Object(g)) => parse_gold(family, g, bad),
        other => {
            bad("gold", format!("must be an object, found {}", show(other)));
            None
        }
    };
    let gold = gold?;
    if !ok {
        return None;
    }
    Some(Row {
        id,
        family,
        split,
        system,
        user,
        output_schema: obj.get("output_schema").cloned().unwrap_or(Value::Null),
        gold,
        aliases,
        prompt_tokens,
        item_hash: sha256_hex(canonical_json(value).as_bytes()),
        file: file.to_string(),
        line,
    })
}

/// The five text fields every row format has, each required to be a non-empty string.
pub(super) struct RowTexts {
    /// `id`.
    pub id: String,
    /// `use_case` (the family).
    pub use_case: String,
    /// `split`.
    pub split: String,
    /// `prompt.system`.
    pub system: String,
    /// `prompt.user`.
    pub user: String,
}

impl RowTexts {
    /// Reads the fields of `obj`, reporting each bad one to `bad` (by its dotted path) and
    /// clearing `ok`; a bad field reads as the empty string.
    pub(super) fn read(
        obj: &Map<String, Value>,
        bad: &mut impl FnMut(&str, String),
        ok: &mut bool,
    ) -> RowTexts {
        let mut text = |key: &str, v: Option<&Value>| match v {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            other => {
                bad(
                    key,
                    format!("must be a non-empty string, found {}", show(other)),
                );
                *ok = false;
                String::new()
            }
        };
        let prompt = obj.get("prompt");
        RowTexts {
            id: text("id", obj.get("id")),
            use_case: text("use_case", obj.get("use_case")),
            split: text("split", obj.get("split")),
            system: text("prompt.system", prompt.and_then(|p| p.get("system"))),
            user: text("prompt.user", prompt.and_then(|p| p.get("user"))),
        }
    }
}

pub(super) fn show(value: Option<&Value>) -> String {
    match value {
        None => "nothing".into(),
        Some(v) => {
            let text = v.to_string();
            if text.len() > 60 {
                format!("{}…", &text[..text.floor_char_boundary(60)])
            } else {
                text
            }
        }
    }
}

/// Checks the gold's shape for the family (METHODOLOGY §5) and types it.
pub(super) fn parse_gold(
    family: Family,
    gold: &Map<String, Value>,
    bad: &mut impl FnMut(&str, String),
) -> Option<Gold> {
    let expected: &[&str] = match family {
        Family::MeetingNotesLookup => &["answer"],
        Family::TicketTriage => &["category", "priority"],
        Family::ContractTermsExtraction => &CONTRACT_FIELDS,
    };
    let mut ok = true;
    for key in gold.keys() {
        if !expected.contains(&key.as_str()) {
            bad(&format!("gold.{key}"), "unexpected key".into());
            ok = false;
        }
    }
    for key in expected {
        if !gold.contains_key(*key) {
            bad(&format!("gold.{key}"), "missing".into());
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    let mut fail = |key: &str, message: String| {
        bad(&format!("gold.{key}"), message);
        None::<()>
    };
    match family {
        Family::MeetingNotesLookup => match gold.get("answer") {
            Some(Value::String(s)) if !s.trim().is_empty() => {
                Some(Gold::MeetingNotes { answer: s.clone() })
            }
            other => {
                fail(
                    "answer",
                    format!("must be a non-empty string, found {}", show(other)),
                );
                None
            }
        },
        Family::TicketTriage => {
            let category = gold
                .get("category")
                .and_then(Value::as_str)
                .and_then(Category::parse);
            let priority = gold
                .get("priority")
                .and_then(Value::as_str)
                .and_then(Priority::parse);
            if category.is_none() {
                fail(
                    "category",
                    format!(
                        "must be one of bug, feature, improvement, customer_support; found {}",
                        show(gold.get("category"))
                    ),
                );
            }
            if priority.is_none() {
                fail(
                    "priority",
                    format!(
                        "must be one of p0, p1, p2, p3; found {}",
                        show(gold.get("priority"))
                    ),
                );
            }
            Some(Gold::TicketTriage(TicketGold {
                category: category?,
                priority: priority?,
            }))
        }
        Family::ContractTermsExtraction => parse_contract(gold, &mut fail).map(Gold::Contract),
    }
}

/// Re-reads the rows of an already loaded release from its files (the runner's
/// [`openbench_common::workflow::DatasetRelease`] keeps no gold), checking each file's hash again.
pub fn rows_from_files(
    dir: &Path,
    file_hashes: &BTreeMap<String, String>,
) -> Result<Vec<Row>, DatasetError> {
    let mut problems = Vec::new();
    let mut rows = Vec::new();
    for (file, expected) in file_hashes {
        let bytes = match read_regular(&dir.join(file), DATASET_FILE_BYTES) {
            Ok(b) => b,
            Err(e) => {
                problems.push(whole(file, format!("cannot read: {e}")));
                continue;
            }
        };
        let actual = sha256_hex(&bytes);
        if &actual != expected {
            problems.push(Problem {
                file: file.clone(),
                line: None,
                field: "sha256".into(),
                message: format!(
                    "file changed since loading: expected {expected}, actual {actual}"
                ),
            });
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let family = text
            .lines()
            .next()
            .and_then(|line| serde_json::from_str::<Value>(line).ok())
            .and_then(|v| {
                v.get("use_case")
                    .and_then(Value::as_str)
                    .and_then(Family::parse)
            });
        match family {
            Some(family) => rows.extend(parse_file(family, file, &text, &mut problems)),
            None => problems.push(Problem {
                file: file.clone(),
                line: Some(1),
                field: "use_case".into(),
                message: "no known family on the first row".into(),
            }),
        }
    }
    if problems.is_empty() {
        Ok(rows)
    } else {
        Err(DatasetError::Invalid {
            dir: dir.to_path_buf(),
            problems,
        })
    }
}
