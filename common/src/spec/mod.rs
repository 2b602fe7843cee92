//! The run spec: benchmark identity, the fixed request contract, providers as adapter data,
//! regions, dataset location, the run root and the simulator. Everything else in the file belongs
//! to the workflow the benchmark names (its section, such as micro-single-task's `plans:` and
//! `benchmark.families`), which checks it ([`crate::workflow::Workflow::check_spec`]).
//!
//! Parsing denies unknown fields inside every generic section; validation then reports every
//! problem at once (the generic ones and the workflow's), each naming the file, the field path and
//! the offending value.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use api::Api;
pub use endpoint::{CHAT_COMPLETIONS_PATH, Endpoint, chat_completions_url};
pub use region::{ProbeLocation, REPLICA_SEPARATOR, Region, region_of_probe};
pub use request::{DEFAULT_TIMEOUT_MS, RequestContract};
pub use results::{RegressionRule, ResultsSettings};

mod api;
mod endpoint;
mod region;
mod request;
mod results;
mod rules;
#[cfg(test)]
mod tests;

/// A problem with a spec file.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file could not be read.
    #[error("cannot read spec {path}: {source}")]
    Read {
        /// Spec path.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The file is not UTF-8 text.
    #[error("spec {path} is not valid: not UTF-8: {source}")]
    NotUtf8 {
        /// Spec path.
        path: PathBuf,
        /// Where the bytes stop being UTF-8.
        source: std::str::Utf8Error,
    },
    /// The YAML did not parse into the spec's shape.
    #[error("spec {path} is not valid: {source}")]
    Parse {
        /// Spec path.
        path: PathBuf,
        /// The parser's error (names the field and position), boxed: it is large.
        source: Box<serde_saphyr::Error>,
    },
    /// The spec parsed but breaks one or more rules; every problem is listed.
    #[error("spec {path} has {} problem(s):\n  - {}", problems.len(), problems.join("\n  - "))]
    Invalid {
        /// Spec path.
        path: PathBuf,
        /// One line per problem, each naming the field and value.
        problems: Vec<String>,
    },
}

/// The whole spec file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Spec {
    /// Who this benchmark is; absent, or a field absent, takes the selected workflow's name,
    /// `inference-<workflow>` and the workflow's schedule version.
    #[serde(default)]
    pub benchmark: Benchmark,
    /// The fixed request contract every provider gets; absent, or any field absent, means the
    /// benchmark contract's value (METHODOLOGY §1).
    #[serde(default)]
    pub request: RequestContract,
    /// Providers in rotation base order.
    pub providers: Vec<ProviderAdapter>,
    /// Where probes run. Empty means one local region.
    #[serde(default)]
    pub regions: Vec<Region>,
    /// The dataset release to select from (absent: none, `{source: ., manifest: none}`, which a
    /// synthetic load workload needs and a task workflow refuses, naming the manifest).
    #[serde(default)]
    pub dataset: DatasetRef,
    /// Where run directories go, relative to the spec file unless absolute.
    #[serde(default = "default_run_root")]
    pub run_root: String,
    /// The embedded simulator, for providers whose endpoint is `sim://<profile>`.
    #[serde(default)]
    pub simulator: Option<SimulatorSettings>,
    /// The results store: publishing at the end of `run` and the history's regression rule
    /// (docs/results-store.md). Absent from the canonical JSON when unset, so older specs hash
    /// as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<ResultsSettings>,
    /// Every other top-level section: the workflow's, checked and normalised by it (an unknown
    /// key is refused there, naming it).
    #[serde(flatten)]
    pub workflow_sections: BTreeMap<String, serde_json::Value>,
}

fn default_run_root() -> String {
    String::from("runs")
}

/// Benchmark identity: constants that feed selection seeds and ids. A workflow adds its own
/// keys: micro-single-task's `families` (round order) and `answer_via` (`json_object`, the
/// default, or `tool_call`: every family's tool-call variant, each item answered by a call of
/// its family's forced tool and scored exactly as the JSON answer; refused for providers of
/// `api: openai-completions`; docs/methodology.md §5).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Benchmark {
    /// Benchmark slug (default `inference-<workflow>`).
    #[serde(default)]
    pub slug: String,
    /// Workflow name in the registry (default: the workflow the command selects).
    #[serde(default)]
    pub workflow: String,
    /// Schedule version (default: the workflow's, e.g. `load-v1`).
    #[serde(default)]
    pub schedule_version: String,
    /// Human label of the model under test, for reports.
    #[serde(default)]
    pub model_label: String,
    /// The workflow's own benchmark keys, checked by it (micro-single-task: `families`, and
    /// `answer_via`: `json_object`, the default, or `tool_call` for every family's tool-call
    /// variant, which providers of `api: openai-completions` cannot take).
    #[serde(flatten)]
    pub workflow_fields: BTreeMap<String, serde_json::Value>,
}

/// How a provider authenticates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "scheme", rename_all = "snake_case", deny_unknown_fields)]
pub enum Auth {
    /// No credentials (local servers, the simulator).
    None,
    /// `Authorization: Bearer $<env>`.
    Bearer {
        /// Environment variable holding the key.
        env: String,
    },
    /// Custom headers, each from its own environment variable (header name → env name).
    Headers {
        /// Header name → environment variable name.
        headers: BTreeMap<String, String>,
    },
}

impl Auth {
    /// Every environment variable name this auth scheme reads.
    pub fn env_names(&self) -> Vec<String> {
        match self {
            Auth::None => Vec::new(),
            Auth::Bearer { env } => vec![env.clone()],
            Auth::Headers { headers } => headers.values().cloned().collect(),
        }
    }
}

/// Name of the completion-ceiling field a provider accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_tokens`.
    MaxTokens,
    /// `max_completion_tokens`.
    MaxCompletionTokens,
}

impl MaxTokensField {
    /// The JSON field name.
    pub fn as_str(self) -> &'static str {
        match self {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// A provider as data: everything needed to build its request (METHODOLOGY §2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderAdapter {
    /// Stable key (`together`).
    pub key: String,
    /// Name shown in reports (`Together AI`).
    #[serde(default)]
    pub display_name: String,
    /// The base URL from the provider's docs (`https://api.together.xyz/v1`; the adapter adds
    /// the `api:` dialect's path, `/chat/completions` by default, and a URL already ending in it
    /// is kept as it is), or
    /// `sim://<profile>` for the embedded simulator, or `env://<VAR>` to read the base URL from
    /// the environment (a user's own deployment).
    pub endpoint: String,
    /// Model id to request; the response must echo it.
    pub model: String,
    /// The API dialect (default `openai-chat`): the path added to the base URL, the request body
    /// and the event stream read (docs/spec.md, docs/methodology.md).
    #[serde(default, skip_serializing_if = "Api::is_default")]
    pub api: Api,
    /// Authentication (default `{scheme: none}`: local servers, the simulator).
    #[serde(default = "default_auth")]
    pub auth: Auth,
    /// Completion-ceiling field name (default `max_tokens`).
    #[serde(default = "default_max_tokens_field")]
    pub max_tokens_field: MaxTokensField,
    /// Adds `stream_options: {"include_usage": true}`.
    #[serde(default)]
    pub include_usage: bool,
    /// Extra top-level body fields (`thinking`, `top_k`, …).
    #[serde(default)]
    pub extra_body: BTreeMap<String, serde_json::Value>,
    /// Extra non-secret request headers.
    #[serde(default)]
    pub extra_headers: BTreeMap<String, String>,
    /// Prices per million tokens, for cost estimates.
    #[serde(default)]
    pub price: Option<Price>,
}

fn default_auth() -> Auth {
    Auth::None
}

fn default_max_tokens_field() -> MaxTokensField {
    MaxTokensField::MaxTokens
}

/// The longest request deadline a spec (or a planned request) may ask for: 10 minutes. Larger
/// values are mistakes, and bounding them keeps deadline arithmetic far from overflow.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// The longest harness grace a spec may ask for (beyond the deadline): 10 minutes.
pub const MAX_GRACE_MS: u64 = 600_000;
/// Body fields the fixed request contract owns (METHODOLOGY §1): an adapter's `extra_body` may not
/// set them, or providers would be compared under different contracts.
pub const CONTRACT_BODY_FIELDS: [&str; 14] = [
    "model",
    "messages",
    "stream",
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "max_tokens",
    "max_completion_tokens",
    "response_format",
    "reasoning_effort",
    "stream_options",
    "stop",
    "seed",
];

impl ProviderAdapter {
    /// Where this provider's requests go, for messages: the full POST URL of an http(s)
    /// endpoint, the `env://VAR` or `sim://profile` as written otherwise (an env URL may hold a
    /// secret, so it is never resolved here).
    pub fn post_target(&self) -> String {
        match self.endpoint_kind() {
            Endpoint::Url(url) => format!("POST {}", self.api.post_url(url)),
            Endpoint::FromEnv { var } => format!("POST ${var}{}", self.api.path()),
            Endpoint::Simulator { .. } | Endpoint::Unknown(_) => self.endpoint.clone(),
        }
    }

    /// What the endpoint points at.
    pub fn endpoint_kind(&self) -> Endpoint<'_> {
        Endpoint::parse(&self.endpoint)
    }

    /// An adapter with no credentials, `max_tokens`, no extras and no prices: the starting point
    /// for ad-hoc targets (`probe once`, local servers, tests), refined field by field.
    pub fn open(key: &str, endpoint: &str, model: &str) -> ProviderAdapter {
        ProviderAdapter {
            key: key.to_string(),
            display_name: String::new(),
            endpoint: endpoint.to_string(),
            model: model.to_string(),
            api: Api::OpenaiChat,
            auth: Auth::None,
            max_tokens_field: MaxTokensField::MaxTokens,
            include_usage: false,
            extra_body: BTreeMap::new(),
            extra_headers: BTreeMap::new(),
            price: None,
        }
    }
}

/// Provider list prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input (prompt) price.
    pub input_per_mtok: f64,
    /// Output (completion) price.
    pub output_per_mtok: f64,
    /// Price of cached input tokens (a prompt-cache read: the usage's cached tokens), when the
    /// provider discounts them; absent, cached tokens cost the input price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_mtok: Option<f64>,
    /// Price of prompt tokens written to the cache (Anthropic's `cache_creation_input_tokens`);
    /// absent, [`CACHE_WRITE_FACTOR`] × the input price (Anthropic's 5-minute cache write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_input_per_mtok: Option<f64>,
}

/// A cache write's price over the input price when the spec gives none: Anthropic bills a
/// 5-minute cache write at 1.25 × its input price.
pub const CACHE_WRITE_FACTOR: f64 = 1.25;

impl Price {
    /// The price of cached input tokens: `cached_input_per_mtok`, else the input price.
    pub fn cached_price(&self) -> f64 {
        self.cached_input_per_mtok.unwrap_or(self.input_per_mtok)
    }

    /// The price of cache-write input tokens: `cache_write_input_per_mtok`, else
    /// [`CACHE_WRITE_FACTOR`] × the input price.
    pub fn cache_write_price(&self) -> f64 {
        self.cache_write_input_per_mtok
            .unwrap_or(CACHE_WRITE_FACTOR * self.input_per_mtok)
    }

    /// USD for one response's usage. `prompt_tokens` holds every prompt token: the cached ones
    /// (at most the prompt) at [`Price::cached_price`], the ones written to the cache (at most
    /// the rest) at [`Price::cache_write_price`], the rest at the input price; completion
    /// tokens at the output price.
    pub fn cost_usd(
        &self,
        prompt_tokens: u64,
        cached_tokens: u64,
        cache_write_tokens: u64,
        completion_tokens: u64,
    ) -> f64 {
        let cached = cached_tokens.min(prompt_tokens);
        let written = cache_write_tokens.min(prompt_tokens - cached);
        ((prompt_tokens - cached - written) as f64 * self.input_per_mtok
            + cached as f64 * self.cached_price()
            + written as f64 * self.cache_write_price()
            + completion_tokens as f64 * self.output_per_mtok)
            / 1e6
    }
}

/// The dataset release a run selects from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DatasetRef {
    /// Directory holding the manifest and the family files, relative to the spec file.
    pub source: String,
    /// Manifest file name inside `source`.
    #[serde(default = "default_manifest")]
    pub manifest: String,
}

fn default_manifest() -> String {
    String::from("manifest.json")
}

/// The manifest name of "no dataset" (a synthetic or prompt-file load workload).
pub const NO_DATASET_MANIFEST: &str = "none";

impl Default for DatasetRef {
    /// No dataset: `{source: ., manifest: none}`.
    fn default() -> DatasetRef {
        DatasetRef {
            source: String::from("."),
            manifest: String::from(NO_DATASET_MANIFEST),
        }
    }
}

/// Settings of the embedded simulator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimulatorSettings {
    /// Multiplies every simulated delay (0.02 runs fifty times faster than life).
    pub time_scale: f64,
    /// Base seed of every simulated response.
    #[serde(default)]
    pub seed: u64,
    /// Answer from the dataset's gold (correct, wrong or malformed by profile probabilities).
    #[serde(default = "default_true")]
    pub answer_from_gold: bool,
}

fn default_true() -> bool {
    true
}

/// A spec together with the file it came from.
#[derive(Debug, Clone)]
pub struct LoadedSpec {
    /// The parsed, validated spec.
    pub spec: Spec,
    /// Path of the spec file as given.
    pub path: PathBuf,
    /// Raw bytes of the file (hashed into the lock).
    pub bytes: Vec<u8>,
}

impl LoadedSpec {
    /// Reads, parses and validates a spec file's generic part (its workflow section is
    /// unchecked: [`LoadedSpec::load_checked`] checks both).
    pub fn load(path: &Path) -> Result<LoadedSpec, SpecError> {
        LoadedSpec::load_checked(path, |_| Vec::new())
    }

    /// Reads, parses and validates a spec file; `workflow` checks (and normalises) its section,
    /// and every problem of both parts is reported at once.
    pub fn load_checked(
        path: &Path,
        workflow: impl FnOnce(&mut Spec) -> Vec<String>,
    ) -> Result<LoadedSpec, SpecError> {
        let bytes = crate::input_file::read_regular(path, crate::input_file::SPEC_BYTES).map_err(
            |source| SpecError::Read {
                path: path.to_path_buf(),
                source,
            },
        )?;
        let spec = Spec::parse_checked(path, &bytes, workflow)?;
        Ok(LoadedSpec {
            spec,
            path: path.to_path_buf(),
            bytes,
        })
    }

    /// Resolves a path written in the spec relative to the spec file's folder.
    pub fn resolve(&self, relative: &str) -> PathBuf {
        resolve_beside(&self.path, relative)
    }

    /// The dataset folder.
    pub fn dataset_dir(&self) -> PathBuf {
        self.resolve(&self.spec.dataset.source)
    }

    /// The run root folder.
    pub fn run_root(&self) -> PathBuf {
        self.resolve(&self.spec.run_root)
    }
}

/// Resolves `relative`, a path written in the spec at `spec_path`, against the spec file's
/// folder (an absolute path stays as it is): what [`LoadedSpec::resolve`] does, for callers that
/// hold only the spec's path (a spec still being checked).
pub fn resolve_beside(spec_path: &Path, relative: &str) -> PathBuf {
    let p = Path::new(relative);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    let joined = spec_path
        .parent()
        .map(|dir| dir.join(p))
        .unwrap_or_else(|| p.to_path_buf());
    normalize_lexically(&joined)
}

/// Folds `.` and `dir/..` out of a path without touching the disk, so printed paths read
/// `runs/…` rather than `workflows/micro-single-task/specs/../../../runs/…`. A leading `..` that
/// cannot be folded is kept.
fn normalize_lexically(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out: Vec<Component<'_>> = Vec::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir) | Some(Component::Prefix(_)) => {}
                _ => out.push(part),
            },
            other => out.push(other),
        }
    }
    if out.is_empty() {
        return PathBuf::from(".");
    }
    out.iter().collect()
}

impl Spec {
    /// Fills the `benchmark:` fields a spec left out from the workflow the command selected:
    /// its name, `inference-<name>` and `schedule_version`. A spec naming another workflow is
    /// left as it is (and refused for the mismatch).
    pub fn fill_benchmark_defaults(&mut self, workflow: &str, schedule_version: &str) {
        let b = &mut self.benchmark;
        if b.workflow.is_empty() {
            b.workflow = workflow.to_string();
        }
        if b.workflow != workflow {
            return;
        }
        if b.slug.is_empty() {
            b.slug = format!("inference-{workflow}");
        }
        if b.schedule_version.is_empty() {
            b.schedule_version = schedule_version.to_string();
        }
    }

    /// Region labels, `local` when the spec names none.
    pub fn region_names(&self) -> Vec<String> {
        if self.regions.is_empty() {
            vec![String::from("local")]
        } else {
            self.regions.iter().map(|r| r.name.clone()).collect()
        }
    }

    /// (probe key, probe) pairs, one per probe: a region's label for its one probe, `REGION#k`
    /// for replica `k` of a replicated region ([`Region::replicas`]); `local` or a probe URL;
    /// one `local` region when the spec names none.
    pub fn region_probes(&self) -> Vec<(String, String)> {
        if self.regions.is_empty() {
            vec![(String::from("local"), String::from("local"))]
        } else {
            self.regions.iter().flat_map(Region::probes).collect()
        }
    }

    /// The credential variables the coordinator's own process needs: every provider's when any
    /// region's probe runs in-process (its lanes call providers from here), none when every
    /// region is remote (each remote probe holds its own).
    pub fn local_credential_names(&self) -> Vec<String> {
        let any_local = self
            .region_probes()
            .iter()
            .any(|(_, probe)| ProbeLocation::parse(probe) == ProbeLocation::InProcess);
        if any_local {
            self.credential_names()
        } else {
            Vec::new()
        }
    }

    /// Every credential environment variable the providers need, sorted and unique.
    pub fn credential_names(&self) -> Vec<String> {
        let mut names: BTreeSet<String> = BTreeSet::new();
        for p in &self.providers {
            names.extend(p.auth.env_names());
            if let Endpoint::FromEnv { var } = p.endpoint_kind() {
                names.insert(var.to_string());
            }
        }
        names.into_iter().collect()
    }
}
