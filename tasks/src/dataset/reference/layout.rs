//! Where a reference release's files are and which path strings key their hashes.

use super::super::Family;
use super::super::Problem;
use super::super::load::whole;
use serde::Deserialize;
use std::collections::BTreeMap;
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
        let text = match openbench_common::input_file::read_regular_string(
            &path,
            openbench_common::input_file::DATASET_FILE_BYTES,
        ) {
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

    /// The hash key of `file` under `prefix` (`prefix/file`, or `file` for an empty prefix).
    pub fn key(prefix: &str, file: &str) -> String {
        if prefix.is_empty() {
            file.to_string()
        } else {
            format!("{}/{file}", prefix.trim_end_matches('/'))
        }
    }
}
