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

use super::load::{parse_gold, show, whole};
use super::manifest::{FamilyEntry, Manifest, TokenBand, release_hash};
use super::{CONTRACT_FIELDS, DatasetError, Family, Gold, Problem, Release, ReleaseFormat, Row};
use openbench_common::hash::{canonical_json, sha256_hex};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Optional file in the release folder that overrides [`ReferenceLayout::default`]. It is not
/// part of the release and not hashed.
pub const LAYOUT_FILE: &str = "reference-layout.json";

/// Where the reference runner finds a release's files and which path strings it keys their
/// hashes by. The defaults are the reference runner's bundled spec, run from its repository root;
/// item counts are not pinned by default (the manifest's `private_items` must match the files).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReferenceLayout {
    /// Folder of the prompt templates, relative to the release folder.
    pub template_dir: String,
    /// Hash key of the manifest.
    pub manifest_key: String,
    /// Prefix of the family files' hash keys (`<prefix>/<family>.jsonl`).
    pub dataset_key_prefix: String,
    /// Prefix of the templates' hash keys (`<prefix>/<template file>`).
    pub template_key_prefix: String,
    /// Per family: template file name and token band.
    pub families: BTreeMap<String, FamilyLayout>,
    /// Total rows the reference spec expects (`dataset.available_items`), when pinned.
    pub available_items: Option<usize>,
}

/// One family's entry in a [`ReferenceLayout`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyLayout {
    /// Template file name inside `template_dir`.
    pub prompt_template: String,
    /// Inclusive band of the family's token field (`input_total` or `user`).
    pub input_tokens: TokenBandSpec,
    /// Rows the reference spec expects (`available_items`), when pinned.
    #[serde(default)]
    pub available_items: Option<usize>,
}

/// An inclusive `{min, max}` band as written in the layout file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenBandSpec {
    /// Smallest allowed count.
    pub min: u64,
    /// Largest allowed count.
    pub max: u64,
}

impl Default for ReferenceLayout {
    fn default() -> ReferenceLayout {
        let family = |template: &str, min, max| FamilyLayout {
            prompt_template: template.to_string(),
            input_tokens: TokenBandSpec { min, max },
            available_items: None,
        };
        ReferenceLayout {
            template_dir: "prompt_templates".into(),
            manifest_key: "data/micro-single-task/manifest.json".into(),
            dataset_key_prefix: "data/micro-single-task".into(),
            template_key_prefix:
                "src/openbenchmarks_inference/workflows/micro_single_task/assets/prompt_templates"
                    .into(),
            families: BTreeMap::from([
                (
                    "meeting-notes-lookup".to_string(),
                    family("meeting-notes.system.txt", 500, 1000),
                ),
                (
                    "ticket-triage".to_string(),
                    family("ticket-triage.system.txt", 50, 100),
                ),
                (
                    "contract-terms-extraction".to_string(),
                    family("contract-terms.system.txt", 500, 1000),
                ),
            ]),
            available_items: None,
        }
    }
}

impl ReferenceLayout {
    /// The layout of the release in `dir`: [`LAYOUT_FILE`] when present, else the defaults.
    pub fn read(dir: &Path, problems: &mut Vec<Problem>) -> Option<ReferenceLayout> {
        let path = dir.join(LAYOUT_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Some(ReferenceLayout::default());
            }
            Err(e) => {
                problems.push(whole(LAYOUT_FILE, format!("cannot read: {e}")));
                return None;
            }
        };
        match serde_json::from_str::<ReferenceLayout>(&text) {
            Ok(layout) => {
                for family in Family::ALL {
                    if !layout.families.contains_key(family.as_str()) {
                        problems.push(Problem {
                            file: LAYOUT_FILE.into(),
                            line: None,
                            field: format!("families.{}", family.as_str()),
                            message: "missing".into(),
                        });
                    }
                }
                Some(layout)
            }
            Err(e) => {
                problems.push(whole(LAYOUT_FILE, format!("invalid layout: {e}")));
                None
            }
        }
    }

    fn key(prefix: &str, file: &str) -> String {
        if prefix.is_empty() {
            file.to_string()
        } else {
            format!("{}/{file}", prefix.trim_end_matches('/'))
        }
    }
}

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
        let template = match std::fs::read(dir.join(&template_file)) {
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
        let bytes = match std::fs::read(dir.join(&file)) {
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

/// What every row of one family file is checked against.
struct FamilyCheck<'a> {
    family: Family,
    file: &'a str,
    /// The template text the system prompt must equal (`None` when unreadable: reported once).
    template: Option<&'a str>,
    band: TokenBand,
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
    fn parse_file(&self, text: &str, problems: &mut Vec<Problem>) -> Vec<Row> {
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
        let mut text = |key: &str, v: Option<&Value>, ok: &mut bool| match v {
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
        let id = text("id", obj.get("id"), &mut ok);
        let use_case = text("use_case", obj.get("use_case"), &mut ok);
        let split = text("split", obj.get("split"), &mut ok);
        let prompt = obj.get("prompt");
        let system = text(
            "prompt.system",
            prompt.and_then(|p| p.get("system")),
            &mut ok,
        );
        let user = text("prompt.user", prompt.and_then(|p| p.get("user")), &mut ok);
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
