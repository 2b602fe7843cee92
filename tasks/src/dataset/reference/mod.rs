//! The reference Python runner's frozen release format, read as it is (`data/README.md`,
//! "Reference-format releases").
//!
//! Its manifest lists `use_cases.{family}.private_items`; meeting-notes gold is `{type, value}`;
//! `output_schema` is compact (`"string"`, `"enum"`, `"bool"`, `"int | null"`); the token count
//! checked against the family's band is `tokens.input_total` (meeting notes) or `tokens.user`;
//! every system prompt must equal the release's prompt template. The release hash covers the
//! manifest, the three templates and the three family files, each keyed by the path string the
//! reference runner writes for it ([`ReferenceLayout`]), so the same files seed the same
//! selection as the reference runner.

mod layout;
mod rows;

pub use layout::{FamilyLayout, LAYOUT_FILE, ReferenceLayout, TokenBandSpec};

use super::load::{show, whole};
use super::manifest::{FamilyEntry, Manifest, TokenBand, release_hash};
use super::{CONTRACT_FIELDS, DatasetError, Family, Problem, Release, ReleaseFormat, Row};
use openbench_common::hash::sha256_hex;
use rows::FamilyCheck;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The token field a family's band applies to.
pub fn token_field(family: Family) -> &'static str {
    match family {
        Family::MeetingNotesLookup => "input_total",
        _ => "user",
    }
}

/// The compact `output_schema` every row of the family must carry.
pub fn expected_schema(family: Family) -> Value {
    match family {
        Family::MeetingNotesLookup => json!({"answer": "string"}),
        Family::TicketTriage => json!({"category": "enum", "priority": "enum"}),
        Family::ContractTermsExtraction => {
            let mut schema = Map::new();
            for field in CONTRACT_FIELDS {
                let kind = match field {
                    "agreement_type" => "enum",
                    "effective_date" | "initial_term_end_date" => "string",
                    "auto_renews" | "termination_for_convenience" => "bool",
                    _ => "int | null",
                };
                schema.insert(field.to_string(), Value::String(kind.to_string()));
            }
            Value::Object(schema)
        }
    }
}

/// Text as Python's `read_text()` returns it: `\r\n` and `\r` read as `\n`.
fn universal_newlines(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// Loads and validates a reference-format release (`manifest_text` already read from `manifest`).
pub(super) fn load(
    dir: &Path,
    manifest: &str,
    manifest_text: &str,
) -> Result<Release, DatasetError> {
    let mut problems = Vec::new();
    let refuse = |problems| DatasetError::Invalid {
        dir: dir.to_path_buf(),
        problems,
    };
    let Some(layout) = ReferenceLayout::read(dir, &mut problems) else {
        return Err(refuse(problems));
    };
    let Some(counts) = parse_manifest(manifest, manifest_text, &mut problems) else {
        return Err(refuse(problems));
    };
    let mut hashes = BTreeMap::new();
    hashes.insert(
        layout.manifest_key.clone(),
        sha256_hex(manifest_text.as_bytes()),
    );
    let mut rows = Vec::new();
    let mut entries = Vec::new();
    for family in Family::ALL {
        let Some(spec) = layout.families.get(family.as_str()) else {
            continue;
        };
        let template_file = format!("{}/{}", layout.template_dir, spec.prompt_template);
        let template = match openbench_common::input_file::read_regular(
            &dir.join(&template_file),
            openbench_common::input_file::DATASET_FILE_BYTES,
        ) {
            Ok(bytes) => {
                hashes.insert(
                    ReferenceLayout::key(&layout.template_key_prefix, &spec.prompt_template),
                    sha256_hex(&bytes),
                );
                match String::from_utf8(bytes) {
                    Ok(text) => {
                        let text = universal_newlines(&text);
                        Some(text.strip_suffix('\n').unwrap_or(&text).to_string())
                    }
                    Err(_) => {
                        problems.push(whole(&template_file, "not UTF-8".into()));
                        None
                    }
                }
            }
            Err(e) => {
                problems.push(whole(&template_file, format!("cannot read: {e}")));
                None
            }
        };
        let file = family.file_name();
        let bytes = match openbench_common::input_file::read_regular(
            &dir.join(&file),
            openbench_common::input_file::DATASET_FILE_BYTES,
        ) {
            Ok(b) => b,
            Err(e) => {
                problems.push(whole(&file, format!("cannot read: {e}")));
                continue;
            }
        };
        let sha = sha256_hex(&bytes);
        hashes.insert(
            ReferenceLayout::key(&layout.dataset_key_prefix, &file),
            sha.clone(),
        );
        let Ok(text) = String::from_utf8(bytes) else {
            problems.push(whole(&file, "not UTF-8".into()));
            continue;
        };
        let band = TokenBand {
            min: spec.input_tokens.min,
            max: spec.input_tokens.max,
        };
        let check = FamilyCheck {
            family,
            file: &file,
            template: template.as_deref(),
            band,
        };
        let family_rows = check.parse_file(&text, &mut problems);
        let declared = counts.get(&family).copied().unwrap_or(0);
        let mut count_problem = |field: &str, message: String| {
            problems.push(Problem {
                file: file.clone(),
                line: None,
                field: field.into(),
                message,
            })
        };
        if family_rows.len() != declared {
            count_problem(
                "private_items",
                format!(
                    "{manifest} declares {declared} private items, the file holds {} valid rows",
                    family_rows.len()
                ),
            );
        }
        if let Some(expected) = spec.available_items.filter(|n| *n != declared) {
            count_problem(
                "private_items",
                format!("the layout expects {expected} items, {manifest} declares {declared}"),
            );
        }
        entries.push((
            family,
            FamilyEntry {
                file,
                rows: family_rows.len(),
                private_items: declared,
                sha256: sha,
                token_band: Some(band),
            },
        ));
        rows.extend(family_rows);
    }
    check_unique_ids(&rows, &mut problems);
    if let Some(total) = layout.available_items.filter(|n| *n != rows.len()) {
        problems.push(whole(
            manifest,
            format!(
                "the layout expects {total} items in all, the release holds {}",
                rows.len()
            ),
        ));
    }
    if !problems.is_empty() {
        return Err(refuse(problems));
    }
    let computed = release_hash(hashes.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let manifest_view = own_view(manifest_text, entries, &computed);
    Ok(Release::new(
        dir.to_path_buf(),
        ReleaseFormat::Reference,
        manifest_view,
        computed,
        hashes,
        rows,
    ))
}

/// Checks the reference manifest; returns each family's declared `private_items`.
fn parse_manifest(
    file: &str,
    text: &str,
    problems: &mut Vec<Problem>,
) -> Option<HashMap<Family, usize>> {
    let mut bad = |field: &str, message: String| {
        problems.push(Problem {
            file: file.to_string(),
            line: None,
            field: field.to_string(),
            message,
        })
    };
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(text) else {
        bad("-", "must be a JSON object".into());
        return None;
    };
    if obj.get("status") != Some(&json!("frozen")) {
        bad(
            "status",
            format!("must be \"frozen\", found {}", show(obj.get("status"))),
        );
    }
    if obj.get("freeze_ready") != Some(&json!(true)) {
        bad(
            "freeze_ready",
            format!("must be true, found {}", show(obj.get("freeze_ready"))),
        );
    }
    let Some(Value::Object(use_cases)) = obj.get("use_cases") else {
        bad("use_cases", "must be an object".into());
        return None;
    };
    let mut counts = HashMap::new();
    for (name, entry) in use_cases {
        let field = format!("use_cases.{name}");
        let Some(family) = Family::parse(name) else {
            bad(&field, "unknown family".into());
            continue;
        };
        match entry.get("private_items") {
            Some(Value::Number(n)) if n.as_u64().is_some() => {
                counts.insert(family, n.as_u64().unwrap_or(0) as usize);
            }
            other => bad(
                &format!("{field}.private_items"),
                format!("must be a non-negative integer, found {}", show(other)),
            ),
        }
    }
    for family in Family::ALL {
        if !use_cases.contains_key(family.as_str()) {
            bad(&format!("use_cases.{}", family.as_str()), "missing".into());
        }
    }
    Some(counts)
}

/// Our [`Manifest`] view of a reference release, so reports and `dataset validate` read both.
fn own_view(text: &str, families: Vec<(Family, FamilyEntry)>, release_hash: &str) -> Manifest {
    let mut extra: Map<String, Value> = serde_json::from_str(text).unwrap_or_default();
    let mut take = |key: &str, fallback: &str| match extra.remove(key) {
        Some(Value::String(s)) => s,
        _ => fallback.to_string(),
    };
    let dataset_id = take("dataset_id", "reference-release");
    let version = take("version", "");
    extra.remove("status");
    extra.remove("freeze_ready");
    extra.insert("format".into(), json!("reference"));
    Manifest {
        dataset_id,
        version,
        status: "frozen".into(),
        freeze_ready: true,
        families,
        release_hash: release_hash.to_string(),
        extra,
    }
}

fn check_unique_ids(rows: &[Row], problems: &mut Vec<Problem>) {
    let mut seen: HashMap<&str, (&str, usize)> = HashMap::new();
    for row in rows {
        if let Some((file, line)) = seen.insert(&row.id, (&row.file, row.line)) {
            problems.push(Problem {
                file: row.file.clone(),
                line: Some(row.line),
                field: "id".into(),
                message: format!("duplicate id {:?}, first at {file}:{line}", row.id),
            });
        }
    }
}
