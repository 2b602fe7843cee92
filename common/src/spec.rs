//! The run spec: benchmark identity, the fixed request contract, providers as adapter data,
//! regions, dataset location, plan sizes and the run root.
//!
//! Parsing denies unknown fields; validation then reports every problem at once, each naming the
//! file, the field path and the offending value.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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
    /// The YAML did not parse into the spec's shape.
    #[error("spec {path} is not valid: {message}")]
    Parse {
        /// Spec path.
        path: PathBuf,
        /// Parser message (names the field and position).
        message: String,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Who this benchmark is.
    pub benchmark: Benchmark,
    /// The fixed request contract every provider gets.
    pub request: RequestContract,
    /// Providers in rotation base order.
    pub providers: Vec<ProviderAdapter>,
    /// Where probes run. Empty means one local region.
    #[serde(default)]
    pub regions: Vec<Region>,
    /// The dataset release to select from.
    pub dataset: DatasetRef,
    /// Plan sizes.
    #[serde(default)]
    pub plans: Plans,
    /// Where run directories go, relative to the spec file unless absolute.
    #[serde(default = "default_run_root")]
    pub run_root: String,
    /// The embedded simulator, for providers whose endpoint is `sim://<profile>`.
    #[serde(default)]
    pub simulator: Option<SimulatorSettings>,
}

fn default_run_root() -> String {
    String::from("runs")
}

/// Benchmark identity: constants that feed selection seeds and ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Benchmark {
    /// Benchmark slug (`inference-micro-single-task`).
    pub slug: String,
    /// Workflow name in the registry (`micro-single-task`).
    pub workflow: String,
    /// Schedule version (`micro-single-task-paired-round-robin-sha256-v1`).
    pub schedule_version: String,
    /// Human label of the model under test, for reports.
    #[serde(default)]
    pub model_label: String,
    /// Task families in round order.
    pub families: Vec<String>,
}

/// The fixed request contract (METHODOLOGY §1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestContract {
    /// Sampling temperature (0).
    pub temperature: f64,
    /// Nucleus sampling (1).
    pub top_p: f64,
    /// Presence penalty (0).
    pub presence_penalty: f64,
    /// Frequency penalty (0).
    pub frequency_penalty: f64,
    /// Completion ceiling (256); the field name comes from each provider.
    pub max_output_tokens: u32,
    /// `response_format.type` (`json_object`).
    pub response_format: String,
    /// `reasoning_effort` (`low`); empty omits the field.
    #[serde(default)]
    pub reasoning_effort: String,
    /// Absolute client deadline in ms (20000).
    pub timeout_ms: u64,
    /// Extra time the coordinator waits for a probe past the deadline before it records a harness
    /// failure.
    #[serde(default = "default_grace_ms")]
    pub harness_grace_ms: u64,
    /// Limits on what one response may make the probe hold (optional `limits:` block).
    #[serde(default)]
    pub limits: crate::limits::StreamLimits,
}

fn default_grace_ms() -> u64 {
    5_000
}

impl RequestContract {
    /// The reference contract of METHODOLOGY §1 (temperature 0, top_p 1, no penalties, 256
    /// tokens, JSON object, reasoning effort low) with the given deadline.
    pub fn reference(timeout_ms: u64) -> RequestContract {
        RequestContract {
            temperature: 0.0,
            top_p: 1.0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            max_output_tokens: 256,
            response_format: String::from("json_object"),
            reasoning_effort: String::from("low"),
            timeout_ms,
            harness_grace_ms: default_grace_ms(),
            limits: crate::limits::StreamLimits::default(),
        }
    }
}

/// How a provider authenticates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderAdapter {
    /// Stable key (`together`).
    pub key: String,
    /// Name shown in reports (`Together AI`).
    #[serde(default)]
    pub display_name: String,
    /// Full POST URL of the chat completions endpoint, or `sim://<profile>` for the embedded
    /// simulator, or `env://<VAR>` to read the URL from the environment (a user's own deployment).
    pub endpoint: String,
    /// Model id to request; the response must echo it.
    pub model: String,
    /// Authentication.
    pub auth: Auth,
    /// Completion-ceiling field name.
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

impl ProviderAdapter {
    /// An adapter with no credentials, `max_tokens`, no extras and no prices: the starting point
    /// for ad-hoc targets (`probe once`, local servers, tests), refined field by field.
    pub fn open(key: &str, endpoint: &str, model: &str) -> ProviderAdapter {
        ProviderAdapter {
            key: key.to_string(),
            display_name: String::new(),
            endpoint: endpoint.to_string(),
            model: model.to_string(),
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input (prompt) price.
    pub input_per_mtok: f64,
    /// Output (completion) price.
    pub output_per_mtok: f64,
}

/// Where a set of probes runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// Region label (`local`, `eu-west`).
    pub name: String,
    /// `local` runs probes in-process behind a loopback gRPC server; otherwise the probe
    /// server's gRPC URL (`http://10.0.0.2:7070`).
    #[serde(default = "default_probe")]
    pub probe: String,
}

fn default_probe() -> String {
    String::from("local")
}

/// The dataset release a run selects from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// Plan sizes for the full run and the smoke.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plans {
    /// Items per family in a full run (200).
    #[serde(default = "default_full_items")]
    pub full_items_per_family: usize,
    /// Items per family in a smoke (1).
    #[serde(default = "default_smoke_items")]
    pub smoke_items_per_family: usize,
    /// Smoke attempts at most (2).
    #[serde(default = "default_smoke_attempts")]
    pub smoke_max_attempts: u32,
}

impl Default for Plans {
    fn default() -> Self {
        Plans {
            full_items_per_family: default_full_items(),
            smoke_items_per_family: default_smoke_items(),
            smoke_max_attempts: default_smoke_attempts(),
        }
    }
}

fn default_full_items() -> usize {
    200
}
fn default_smoke_items() -> usize {
    1
}
fn default_smoke_attempts() -> u32 {
    2
}

/// Settings of the embedded simulator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Reads, parses and validates a spec file.
    pub fn load(path: &Path) -> Result<LoadedSpec, SpecError> {
        let bytes = std::fs::read(path).map_err(|source| SpecError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let spec = Spec::parse(path, &bytes)?;
        Ok(LoadedSpec {
            spec,
            path: path.to_path_buf(),
            bytes,
        })
    }

    /// Resolves a path written in the spec relative to the spec file's folder.
    pub fn resolve(&self, relative: &str) -> PathBuf {
        let p = Path::new(relative);
        if p.is_absolute() {
            return p.to_path_buf();
        }
        let joined = self
            .path
            .parent()
            .map(|dir| dir.join(p))
            .unwrap_or_else(|| p.to_path_buf());
        normalize_lexically(&joined)
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
    /// Parses YAML bytes and validates them; `path` only names the file in errors.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Spec, SpecError> {
        let text = std::str::from_utf8(bytes).map_err(|e| SpecError::Parse {
            path: path.to_path_buf(),
            message: format!("not UTF-8: {e}"),
        })?;
        let spec: Spec = serde_saphyr::from_str(text).map_err(|e| SpecError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let problems = spec.problems();
        if problems.is_empty() {
            Ok(spec)
        } else {
            Err(SpecError::Invalid {
                path: path.to_path_buf(),
                problems,
            })
        }
    }

    /// Every rule the spec breaks, each naming its field and value.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let r = &self.request;
        if self.benchmark.slug.trim().is_empty() {
            problems.push("benchmark.slug: must not be empty".to_string());
        }
        if self.benchmark.families.is_empty() {
            problems.push("benchmark.families: must list at least one family".to_string());
        }
        if !(0.0..=2.0).contains(&r.temperature) {
            problems.push(format!(
                "request.temperature: {} is outside 0..=2",
                r.temperature
            ));
        }
        if !(r.top_p > 0.0 && r.top_p <= 1.0) {
            problems.push(format!("request.top_p: {} is outside (0, 1]", r.top_p));
        }
        if r.max_output_tokens == 0 {
            problems.push("request.max_output_tokens: must be at least 1".to_string());
        }
        if r.timeout_ms == 0 {
            problems.push("request.timeout_ms: must be at least 1".to_string());
        }
        problems.extend(r.limits.problems());
        if self.providers.is_empty() {
            problems.push("providers: must list at least one provider".to_string());
        }
        let mut keys = BTreeSet::new();
        for (i, p) in self.providers.iter().enumerate() {
            let at = format!("providers[{i}] ({})", p.key);
            if p.key.is_empty()
                || !p
                    .key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                problems.push(format!(
                    "{at}.key: {:?} must be non-empty [A-Za-z0-9_-]",
                    p.key
                ));
            }
            if !keys.insert(p.key.clone()) {
                problems.push(format!("{at}.key: {:?} is listed twice", p.key));
            }
            let e = &p.endpoint;
            if !(e.starts_with("https://")
                || e.starts_with("http://")
                || e.starts_with("sim://")
                || e.starts_with("env://"))
            {
                problems.push(format!(
                    "{at}.endpoint: {e:?} must start with https://, http://, sim:// or env://"
                ));
            }
            if e.starts_with("sim://") && self.simulator.is_none() {
                problems.push(format!(
                    "{at}.endpoint: {e:?} needs a `simulator:` section in the spec"
                ));
            }
            if p.model.trim().is_empty() {
                problems.push(format!("{at}.model: must not be empty"));
            }
            for name in p.auth.env_names() {
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    problems.push(format!("{at}.auth: env name {name:?} must be [A-Za-z0-9_]"));
                }
            }
            for reserved in ["model", "messages", "stream"] {
                if p.extra_body.contains_key(reserved) {
                    problems.push(format!(
                        "{at}.extra_body.{reserved}: the contract owns this field"
                    ));
                }
            }
            for header in p.extra_headers.keys() {
                if header.eq_ignore_ascii_case("authorization") {
                    problems.push(format!(
                        "{at}.extra_headers.{header}: credentials belong in `auth`, never in the spec"
                    ));
                }
            }
        }
        let mut regions = BTreeSet::new();
        for (i, region) in self.regions.iter().enumerate() {
            if region.name.is_empty() || !regions.insert(region.name.clone()) {
                problems.push(format!(
                    "regions[{i}].name: {:?} is empty or repeated",
                    region.name
                ));
            }
            if region.probe != "local" && !region.probe.starts_with("http") {
                problems.push(format!(
                    "regions[{i}].probe: {:?} must be `local` or a gRPC URL",
                    region.probe
                ));
            }
        }
        if self.plans.full_items_per_family == 0 || self.plans.smoke_items_per_family == 0 {
            problems.push("plans: items per family must be at least 1".to_string());
        }
        if !(1..=2).contains(&self.plans.smoke_max_attempts) {
            problems.push(format!(
                "plans.smoke_max_attempts: {} must be 1 or 2",
                self.plans.smoke_max_attempts
            ));
        }
        if let Some(sim) = &self.simulator
            && !(sim.time_scale > 0.0 && sim.time_scale <= 10.0)
        {
            problems.push(format!(
                "simulator.time_scale: {} is outside (0, 10]",
                sim.time_scale
            ));
        }
        problems
    }

    /// Region labels, `local` when the spec names none.
    pub fn region_names(&self) -> Vec<String> {
        if self.regions.is_empty() {
            vec![String::from("local")]
        } else {
            self.regions.iter().map(|r| r.name.clone()).collect()
        }
    }

    /// Every credential environment variable the providers need, sorted and unique.
    pub fn credential_names(&self) -> Vec<String> {
        let mut names: BTreeSet<String> = BTreeSet::new();
        for p in &self.providers {
            names.extend(p.auth.env_names());
            if let Some(var) = p.endpoint.strip_prefix("env://") {
                names.insert(var.to_string());
            }
        }
        names.into_iter().collect()
    }

    /// The provider with this key.
    pub fn provider(&self, key: &str) -> Option<&ProviderAdapter> {
        self.providers.iter().find(|p| p.key == key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
benchmark:
  slug: inference-micro-single-task
  workflow: micro-single-task
  schedule_version: micro-single-task-paired-round-robin-sha256-v1
  families: [ticket-triage]
request:
  temperature: 0
  top_p: 1
  presence_penalty: 0
  frequency_penalty: 0
  max_output_tokens: 256
  response_format: json_object
  reasoning_effort: low
  timeout_ms: 20000
providers:
  - key: zai
    endpoint: https://api.z.ai/api/paas/v4/chat/completions
    model: glm-5.3-flash
    auth: {scheme: bearer, env: ZAI_API_KEY}
    max_tokens_field: max_tokens
    extra_body: {thinking: {type: enabled}}
dataset:
  source: ../data
"#;

    #[test]
    fn parses_minimal_spec_with_defaults() {
        let spec = Spec::parse(Path::new("s.yaml"), MINIMAL.as_bytes());
        let spec = match spec {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(spec.plans.full_items_per_family, 200);
        assert_eq!(spec.request.harness_grace_ms, 5000);
        assert_eq!(spec.credential_names(), vec!["ZAI_API_KEY".to_string()]);
        assert_eq!(spec.region_names(), vec!["local".to_string()]);
    }

    #[test]
    fn resolves_relative_paths_lexically() {
        let loaded = LoadedSpec {
            spec: match Spec::parse(Path::new("s.yaml"), MINIMAL.as_bytes()) {
                Ok(s) => s,
                Err(e) => panic!("{e}"),
            },
            path: PathBuf::from("workflows/w/specs/s.yaml"),
            bytes: Vec::new(),
        };
        assert_eq!(loaded.resolve("../../../runs"), PathBuf::from("runs"));
        assert_eq!(loaded.resolve("../../../../x"), PathBuf::from("../x"));
        assert_eq!(loaded.resolve("/abs/dir"), PathBuf::from("/abs/dir"));
        assert_eq!(loaded.dataset_dir(), PathBuf::from("workflows/w/data"));
    }

    #[test]
    fn unknown_field_is_named() {
        let text = MINIMAL.replace("top_p: 1", "top_p: 1\n  topp: 1");
        let err = Spec::parse(Path::new("s.yaml"), text.as_bytes())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("topp"), "{err}");
        assert!(err.contains("s.yaml"), "{err}");
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let text = MINIMAL
            .replace("top_p: 1", "top_p: 3")
            .replace("https://api.z.ai", "ftp://api.z.ai")
            .replace("extra_body: {thinking", "extra_body: {model: x, thinking");
        let err = Spec::parse(Path::new("s.yaml"), text.as_bytes())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("3 problem(s)"), "{err}");
        assert!(err.contains("request.top_p: 3"), "{err}");
        assert!(err.contains("providers[0] (zai).endpoint"), "{err}");
        assert!(err.contains("extra_body.model"), "{err}");
    }
}
