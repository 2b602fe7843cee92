//! `manifest.json`: what a release holds and the hashes that pin it (METHODOLOGY §7).

use super::{Family, Problem};
use openbench_common::hash::sha256_hex;
use serde::Serialize;
use serde_json::Value;

/// Inclusive prompt-token band a family's rows must lie in (`tokens.prompt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TokenBand {
    /// Smallest allowed `tokens.prompt`.
    pub min: u64,
    /// Largest allowed `tokens.prompt`.
    pub max: u64,
}

/// One family's entry in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FamilyEntry {
    /// JSONL file, relative to the release folder (the path hashed into the release hash).
    pub file: String,
    /// Number of rows (non-empty lines) in the file.
    pub rows: usize,
    /// Number of rows with `split: "private"`.
    pub private_items: usize,
    /// sha256 of the file's bytes.
    pub sha256: String,
    /// Prompt-token band, when the release declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_band: Option<TokenBand>,
}

/// The parsed manifest. Unknown extra keys are kept in `extra` and written back unchanged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Manifest {
    /// Stable dataset name.
    pub dataset_id: String,
    /// Release version.
    pub version: String,
    /// `frozen` for a benchmark release, `sample` for the public sample.
    pub status: String,
    /// True only for a release a full run may use.
    pub freeze_ready: bool,
    /// Families in contract order.
    #[serde(serialize_with = "families_as_object")]
    pub families: Vec<(Family, FamilyEntry)>,
    /// Release hash over the family files (see [`release_hash`]).
    pub release_hash: String,
    /// Any other keys (generator, tokenizer notes …), in file order.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

fn families_as_object<S: serde::Serializer>(
    families: &[(Family, FamilyEntry)],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(Some(families.len()))?;
    for (family, entry) in families {
        map.serialize_entry(family.as_str(), entry)?;
    }
    map.end()
}

impl Manifest {
    /// The entry of one family, if the manifest lists it.
    pub fn family(&self, family: Family) -> Option<&FamilyEntry> {
        self.families
            .iter()
            .find(|(f, _)| *f == family)
            .map(|(_, e)| e)
    }

    /// Pretty JSON with a trailing newline, as written to disk.
    pub fn to_pretty_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Parses a manifest, pushing one [`Problem`] per bad field; `None` if unusable.
    pub fn parse(file: &str, text: &str, problems: &mut Vec<Problem>) -> Option<Manifest> {
        let mut bad = |field: &str, message: String| {
            problems.push(Problem {
                file: file.to_string(),
                line: None,
                field: field.to_string(),
                message,
            })
        };
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                bad("-", format!("not valid JSON: {e}"));
                return None;
            }
        };
        let Value::Object(mut obj) = value else {
            bad("-", "must be a JSON object".into());
            return None;
        };
        let mut take_str = |key: &str| match obj.remove(key) {
            Some(Value::String(s)) if !s.is_empty() => s,
            Some(other) => {
                bad(key, format!("must be a non-empty string, found {other}"));
                String::new()
            }
            None => {
                bad(key, "missing".into());
                String::new()
            }
        };
        let dataset_id = take_str("dataset_id");
        let version = take_str("version");
        let status = take_str("status");
        let release_hash = take_str("release_hash");
        if !status.is_empty() && status != "frozen" && status != "sample" {
            bad(
                "status",
                format!("must be \"frozen\" or \"sample\", found {status:?}"),
            );
        }
        let freeze_ready = match obj.remove("freeze_ready") {
            Some(Value::Bool(b)) => b,
            Some(other) => {
                bad("freeze_ready", format!("must be a boolean, found {other}"));
                false
            }
            None => {
                bad("freeze_ready", "missing".into());
                false
            }
        };
        if status == "frozen" && !freeze_ready {
            bad(
                "freeze_ready",
                "a frozen release must be freeze_ready".into(),
            );
        }
        let families = match obj.remove("families") {
            Some(Value::Object(map)) => parse_families(&map, &mut bad),
            Some(other) => {
                bad("families", format!("must be an object, found {other}"));
                Vec::new()
            }
            None => {
                bad("families", "missing".into());
                Vec::new()
            }
        };
        Some(Manifest {
            dataset_id,
            version,
            status,
            freeze_ready,
            families,
            release_hash,
            extra: obj,
        })
    }
}

fn parse_families(
    map: &serde_json::Map<String, Value>,
    bad: &mut impl FnMut(&str, String),
) -> Vec<(Family, FamilyEntry)> {
    let mut out = Vec::new();
    for (name, entry) in map {
        let field = format!("families.{name}");
        let Some(family) = Family::parse(name) else {
            bad(&field, "unknown family".into());
            continue;
        };
        let Value::Object(e) = entry else {
            bad(&field, "must be an object".into());
            continue;
        };
        let file = match e.get("file") {
            Some(Value::String(s)) if is_plain_relative(s) => s.clone(),
            other => {
                bad(
                    &format!("{field}.file"),
                    format!("must be a relative file name inside the release, found {other:?}"),
                );
                continue;
            }
        };
        let mut count = |key: &str| match e.get(key).and_then(Value::as_u64) {
            Some(n) => n as usize,
            None => {
                bad(
                    &format!("{field}.{key}"),
                    "must be a non-negative integer".into(),
                );
                0
            }
        };
        let rows = count("rows");
        let private_items = count("private_items");
        let sha256 = match e.get("sha256").and_then(Value::as_str) {
            Some(s) if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) => s.to_string(),
            _ => {
                bad(
                    &format!("{field}.sha256"),
                    "must be 64 hex characters".into(),
                );
                String::new()
            }
        };
        let token_band = match e.get("token_band") {
            None => None,
            Some(v) => match (
                v.get("min").and_then(Value::as_u64),
                v.get("max").and_then(Value::as_u64),
            ) {
                (Some(min), Some(max)) if min <= max => Some(TokenBand { min, max }),
                _ => {
                    bad(
                        &format!("{field}.token_band"),
                        "must be {\"min\": n, \"max\": m} with n <= m".into(),
                    );
                    None
                }
            },
        };
        out.push((
            family,
            FamilyEntry {
                file,
                rows,
                private_items,
                sha256,
                token_band,
            },
        ));
    }
    out.sort_by_key(|(family, _)| *family);
    for family in Family::ALL {
        if !out.iter().any(|(f, _)| *f == family) {
            bad(&format!("families.{}", family.as_str()), "missing".into());
        }
    }
    out
}

/// A file name that stays inside the release folder (no absolute path, no `..`).
fn is_plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path.split('/').all(|part| !part.is_empty() && part != "..")
}

/// The release hash (METHODOLOGY §7): sha256 of the lines `path:sha256`, sorted by path and
/// joined by `\n` (no trailing newline), paths exactly as written in the manifest.
pub fn release_hash<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut files: Vec<(&str, &str)> = files.into_iter().collect();
    files.sort_by(|a, b| a.0.cmp(b.0));
    let lines: Vec<String> = files
        .iter()
        .map(|(path, hash)| format!("{path}:{hash}"))
        .collect();
    sha256_hex(lines.join("\n").as_bytes())
}
