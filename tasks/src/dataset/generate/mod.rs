//! The deterministic corpus generator.
//!
//! Each row starts from a structured seed (the facts a family generator chose), is rendered into
//! prompt text, and is kept only if (1) its o200k_base prompt size lies in the family's band and
//! (2) the independent rule-based extractor ([`super::extract`]), reading only the rendered user
//! prompt, derives the same gold. Otherwise the row is drawn again from its own random stream, so
//! one rejection never shifts any other row. Same seed ⇒ byte-identical files.

mod contract;
mod meeting;
pub mod rng;
mod text;
mod ticket;
mod words;

use super::manifest::{FamilyEntry, Manifest, TokenBand, release_hash};
use super::{Family, Gold};
use openbench_common::hash::sha256_hex;
use openbench_common::tokenizer::count_tokens;
use rng::Rng;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The seed of the committed release.
pub const DEFAULT_SEED: u64 = 20_260_902;

/// Rows per family in the frozen release (the reference corpus sizes).
pub const RELEASE_ROWS: [usize; 3] = [237, 244, 240];

/// Rows per family in the public sample.
pub const SAMPLE_ROWS: [usize; 3] = [13, 6, 10];

/// Draws allowed per row before the generator gives up (a template bug, never chance).
const MAX_ATTEMPTS: usize = 200;

/// The prompt-token band of a family: `tokens.prompt` = o200k_base(system) + o200k_base(user).
pub fn token_band(family: Family) -> TokenBand {
    match family {
        Family::MeetingNotesLookup => TokenBand { min: 500, max: 750 },
        Family::TicketTriage => TokenBand { min: 380, max: 620 },
        Family::ContractTermsExtraction => TokenBand { min: 640, max: 800 },
    }
}

/// `tokens.prompt` of a row: o200k_base tokens of the system prompt plus those of the user prompt.
pub fn prompt_tokens(system: &str, user: &str) -> u64 {
    count_tokens(system) + count_tokens(user)
}

/// One candidate row, before the checks.
#[derive(Debug, Clone)]
pub struct Draft {
    /// System prompt (states the exact JSON object to return).
    pub system: String,
    /// User prompt.
    pub user: String,
    /// JSON Schema of the answer.
    pub output_schema: Value,
    /// Gold computed from the structured seed.
    pub gold: Gold,
    /// Accepted alternative answers.
    pub aliases: Vec<String>,
    /// Question kind, recorded in the row's `meta` for diagnostics.
    pub kind: &'static str,
}

/// What generating one family took.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyStats {
    /// The family.
    pub family: Family,
    /// Rows kept.
    pub rows: usize,
    /// Drafts rejected because the extractor disagreed with the seed's gold.
    pub rejected_by_extractor: usize,
    /// Drafts rejected because the prompt fell outside the token band.
    pub rejected_by_band: usize,
    /// The band applied.
    pub band: TokenBand,
    /// Smallest, median and largest `tokens.prompt` kept.
    pub tokens_min: u64,
    /// Median `tokens.prompt` (lower median).
    pub tokens_median: u64,
    /// Largest `tokens.prompt` kept.
    pub tokens_max: u64,
    /// Size of the family file in bytes.
    pub bytes: usize,
    /// The first few rejection reasons, for the terminal.
    pub sample_rejections: Vec<String>,
}

/// A generated release, in memory.
#[derive(Debug, Clone)]
pub struct Generated {
    /// File name → bytes, family files first (contract order), then `manifest.json`.
    pub files: Vec<(String, String)>,
    /// The manifest written.
    pub manifest: Manifest,
    /// Per-family figures.
    pub stats: Vec<FamilyStats>,
}

/// Why generation failed.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// A row could not be drawn within the attempt budget (a template or extractor bug).
    #[error("{family} row {index}: no acceptable draft in {MAX_ATTEMPTS} attempts; last: {last}")]
    Exhausted {
        /// Family.
        family: &'static str,
        /// 0-based row index.
        index: usize,
        /// The last rejection reason.
        last: String,
    },
    /// Writing the output failed.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// Builds the release (or with `public_sample`, the sample) for `seed`, in memory.
pub fn build(seed: u64, public_sample: bool) -> Result<Generated, GenerateError> {
    let counts = if public_sample {
        SAMPLE_ROWS
    } else {
        RELEASE_ROWS
    };
    let mut files = Vec::new();
    let mut entries = Vec::new();
    let mut stats = Vec::new();
    for (family_index, family) in Family::ALL.into_iter().enumerate() {
        let (text, mut stat) = build_family(
            seed,
            public_sample,
            family,
            family_index,
            counts[family_index],
        )?;
        stat.bytes = text.len();
        let file = family.file_name();
        entries.push((
            family,
            FamilyEntry {
                file: file.clone(),
                rows: stat.rows,
                private_items: if public_sample { 0 } else { stat.rows },
                sha256: sha256_hex(text.as_bytes()),
                token_band: Some(stat.band),
            },
        ));
        files.push((file, text));
        stats.push(stat);
    }
    let hash = release_hash(
        entries
            .iter()
            .map(|(_, e)| (e.file.as_str(), e.sha256.as_str())),
    );
    let manifest = manifest(seed, public_sample, entries, hash);
    files.push(("manifest.json".to_string(), manifest.to_pretty_json()));
    Ok(Generated {
        files,
        manifest,
        stats,
    })
}

/// Builds and writes the release into `out` (created if missing; other files left alone).
pub fn generate(out: &Path, seed: u64, public_sample: bool) -> Result<Generated, GenerateError> {
    let generated = build(seed, public_sample)?;
    std::fs::create_dir_all(out).map_err(|source| GenerateError::Io {
        path: out.to_path_buf(),
        source,
    })?;
    for (name, text) in &generated.files {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|source| GenerateError::Io { path, source })?;
    }
    Ok(generated)
}

fn manifest(
    seed: u64,
    sample: bool,
    families: Vec<(Family, FamilyEntry)>,
    hash: String,
) -> Manifest {
    let mut extra = serde_json::Map::new();
    let description = if sample {
        "Public sample of the synthetic micro-single-task corpus: for inspecting the task format; \
         not usable for a full run."
    } else {
        "Synthetic micro-single-task corpus: meeting-note lookups, ticket triage and contract \
         term extraction, generated deterministically from a seed."
    };
    extra.insert("description".into(), json!(description));
    extra.insert(
        "generator".into(),
        json!({
            "command": format!(
                "openbench-inference dataset generate --seed {seed}{}",
                if sample { " --public-sample" } else { "" }
            ),
            "seed": seed,
            "prng": "splitmix64",
        }),
    );
    extra.insert("tokenizer".into(), json!("o200k_base"));
    extra.insert(
        "tokens_prompt".into(),
        json!("o200k_base tokens of prompt.system plus those of prompt.user"),
    );
    Manifest {
        dataset_id: if sample {
            "openbench-micro-single-task-public-sample".into()
        } else {
            "openbench-micro-single-task".into()
        },
        version: "1.0.0".into(),
        status: if sample {
            "sample".into()
        } else {
            "frozen".into()
        },
        freeze_ready: !sample,
        families,
        release_hash: hash,
        extra,
    }
}

fn id_prefix(family: Family) -> &'static str {
    match family {
        Family::MeetingNotesLookup => "mn",
        Family::TicketTriage => "tt",
        Family::ContractTermsExtraction => "ce",
    }
}

fn draft(family: Family, rng: &mut Rng) -> Draft {
    match family {
        Family::MeetingNotesLookup => meeting::draft(rng),
        Family::TicketTriage => ticket::draft(rng),
        Family::ContractTermsExtraction => contract::draft(rng),
    }
}

fn build_family(
    seed: u64,
    sample: bool,
    family: Family,
    family_index: usize,
    count: usize,
) -> Result<(String, FamilyStats), GenerateError> {
    let band = token_band(family);
    let mut text = String::new();
    let mut tokens = Vec::with_capacity(count);
    let mut stat = FamilyStats {
        family,
        rows: count,
        rejected_by_extractor: 0,
        rejected_by_band: 0,
        band,
        tokens_min: 0,
        tokens_median: 0,
        tokens_max: 0,
        bytes: 0,
        sample_rejections: Vec::new(),
    };
    for index in 0..count {
        let mut rng = Rng::derive(
            seed,
            &[u64::from(sample), family_index as u64, index as u64],
        );
        let mut last = String::new();
        let mut kept = None;
        for _ in 0..MAX_ATTEMPTS {
            let d = draft(family, &mut rng);
            let n = prompt_tokens(&d.system, &d.user);
            if n < band.min || n > band.max {
                stat.rejected_by_band += 1;
                last = format!("{n} prompt tokens outside {}..={}", band.min, band.max);
                continue;
            }
            if let Err(why) = super::extract::recheck(&d.gold, &d.aliases, &d.user) {
                stat.rejected_by_extractor += 1;
                last = format!("extractor: {why}");
                if stat.sample_rejections.len() < 5 {
                    stat.sample_rejections
                        .push(format!("{} #{index}: {why}", family.as_str()));
                }
                continue;
            }
            kept = Some((d, n));
            break;
        }
        let Some((d, n)) = kept else {
            return Err(GenerateError::Exhausted {
                family: family.as_str(),
                index,
                last,
            });
        };
        let id = if sample {
            format!("pub-{}-{:03}", id_prefix(family), index + 1)
        } else {
            format!("{}-{:04}", id_prefix(family), index + 1)
        };
        let row = json!({
            "id": id,
            "use_case": family.as_str(),
            "split": if sample { "public" } else { "private" },
            "prompt": {"system": d.system, "user": d.user},
            "output_schema": d.output_schema,
            "gold": d.gold.to_json(),
            "aliases": d.aliases,
            "tokens": {
                "prompt": n,
                "system": count_tokens(&d.system),
                "user": count_tokens(&d.user),
            },
            "meta": {"kind": d.kind},
        });
        text.push_str(&row.to_string());
        text.push('\n');
        tokens.push(n);
    }
    tokens.sort_unstable();
    stat.tokens_min = tokens.first().copied().unwrap_or(0);
    stat.tokens_max = tokens.last().copied().unwrap_or(0);
    stat.tokens_median = tokens
        .get(tokens.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0);
    Ok((text, stat))
}
