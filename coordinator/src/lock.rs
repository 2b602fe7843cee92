//! The run lock: hashes of every input (spec, dataset release, the workflow's other input files,
//! adapters, tokenizer ranks, code), written once by `init` or the first run, and checked on every
//! resume.
//!
//! A region's probe address is a placement, not an input: the spec hash a resume checks
//! ([`spec_inputs_sha256`]) leaves it out, so a probe moved to a new address resumes; its
//! endpoint, model or `extra_body` are in the adapters hash, so changing them does not.

use openbench_common::hash::{canonical_json, sha256_hex};
use openbench_common::rundir::{LockedProvider, RunLock};
use openbench_common::spec::LoadedSpec;
use openbench_common::workflow::{DatasetRelease, input_files_sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Version of the lock layout this crate writes.
pub const LOCK_VERSION: u32 = 1;

/// The input hashes a lock pins, computed from what is on disk now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputHashes {
    /// sha256 of the spec file bytes.
    pub spec: String,
    /// sha256 of the spec without its probe addresses ([`spec_inputs_sha256`]).
    pub spec_inputs: String,
    /// Dataset release hash.
    pub dataset: String,
    /// sha256 of the canonical JSON of the providers' adapter data.
    pub adapters: String,
    /// sha256 of the tokenizer ranks.
    pub tokenizer: String,
    /// Digest of the sources built into the binary.
    pub code: String,
    /// sha256 of the workflow's other input files, by name ([`input_files_sha256`]).
    pub files: BTreeMap<String, String>,
}

impl InputHashes {
    /// Hashes the current inputs; `code_sha256` comes from the binary (`OPENBENCH_CODE_SHA256`),
    /// `files` are the workflow's other input files
    /// ([`openbench_common::workflow::Workflow::input_files`]).
    pub fn compute(
        spec: &LoadedSpec,
        dataset: &DatasetRelease,
        code_sha256: &str,
        files: &[(String, PathBuf)],
    ) -> InputHashes {
        InputHashes {
            files: input_files_sha256(files),
            spec: sha256_hex(&spec.bytes),
            spec_inputs: spec_inputs_sha256(spec),
            dataset: dataset.release_hash.clone(),
            adapters: adapters_sha256(spec),
            tokenizer: openbench_common::tokenizer::ranks_sha256(),
            code: code_sha256.to_string(),
        }
    }

    /// Names (with both values) of every hash that differs from the lock's, in a fixed order.
    /// The spec is compared without its probe addresses when the lock holds that hash, else
    /// (locks written before it) by its bytes.
    pub fn changes_against(&self, lock: &RunLock) -> Vec<String> {
        let spec = match &lock.spec_inputs_sha256 {
            Some(locked) => (locked, &self.spec_inputs),
            None => (&lock.spec_sha256, &self.spec),
        };
        let pairs = [
            ("spec", spec.0, spec.1),
            ("dataset", &lock.dataset_release_hash, &self.dataset),
            ("adapters", &lock.adapters_sha256, &self.adapters),
            ("tokenizer", &lock.tokenizer_ranks_sha256, &self.tokenizer),
            ("code", &lock.code_sha256, &self.code),
        ];
        let mut changes: Vec<String> = pairs
            .into_iter()
            .filter(|(_, locked, now)| locked != now)
            .map(|(name, locked, now)| {
                format!(
                    "{name} changed (locked {}…, now {}…)",
                    short(locked),
                    short(now)
                )
            })
            .collect();
        let names: BTreeSet<&String> = lock
            .input_files_sha256
            .keys()
            .chain(self.files.keys())
            .collect();
        for name in names {
            let locked = lock
                .input_files_sha256
                .get(name)
                .map_or("none", String::as_str);
            let now = self.files.get(name).map_or("none", String::as_str);
            if locked != now {
                changes.push(format!(
                    "input file {name} changed (locked {}…, now {}…)",
                    short(locked),
                    short(now)
                ));
            }
        }
        changes
    }
}

/// The first 12 characters of a hash, as errors show it.
pub(crate) fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// sha256 of the canonical JSON of the providers' adapter data, in spec order.
pub fn adapters_sha256(spec: &LoadedSpec) -> String {
    let value = serde_json::to_value(&spec.spec.providers).unwrap_or(serde_json::Value::Null);
    sha256_hex(canonical_json(&value))
}

/// sha256 of the spec's canonical JSON with every region's `probe` (and replica) emptied: the spec as an
/// input, without where its probes happen to listen (comments and layout of the file drop out
/// too, as they change nothing a run does).
pub fn spec_inputs_sha256(spec: &LoadedSpec) -> String {
    let mut inputs = spec.spec.clone();
    for region in &mut inputs.regions {
        region.probe.clear();
        // How many replicas share the region's lanes is an input (it splits the load); where
        // each listens is not.
        region.replicas.iter_mut().for_each(String::clear);
    }
    let value = serde_json::to_value(&inputs).unwrap_or(serde_json::Value::Null);
    sha256_hex(canonical_json(&value))
}

/// sha256 of the lock's canonical JSON: the lock hash each probe session names.
pub fn lock_sha256(lock: &RunLock) -> String {
    let value = serde_json::to_value(lock).unwrap_or(serde_json::Value::Null);
    sha256_hex(canonical_json(&value))
}

/// Lock fields that do not follow from the inputs: where the run and its inputs live, when and
/// by whom it was made, and the spec's bytes (a moved probe changes them; the spec is compared
/// by [`spec_inputs_sha256`]).
const NOT_DERIVED: [&str; 6] = [
    "run_id",
    "spec_path",
    "spec_sha256",
    "dataset_dir",
    "approval_id",
    "created_at",
];

/// Every field of `locked` that differs from `rebuilt` (the lock the same inputs give now),
/// besides [`NOT_DERIVED`]: an edited `run-lock.json` (say its `timeout_ms`) whose hashes still
/// match. Named with both values, in the lock's field order.
pub fn lock_drift(locked: &RunLock, rebuilt: &RunLock) -> Vec<String> {
    let (Ok(serde_json::Value::Object(locked)), Ok(serde_json::Value::Object(rebuilt))) =
        (serde_json::to_value(locked), serde_json::to_value(rebuilt))
    else {
        return vec!["run-lock.json cannot be compared with its inputs".to_string()];
    };
    let null = serde_json::Value::Null;
    let names = locked
        .keys()
        .chain(rebuilt.keys().filter(|name| !locked.contains_key(*name)));
    names
        .filter(|name| !NOT_DERIVED.contains(&name.as_str()))
        .filter_map(|name| {
            let held = locked.get(name).unwrap_or(&null);
            let now = rebuilt.get(name).unwrap_or(&null);
            // A lock written before the spec's input hash existed holds none: nothing to compare.
            let unrecorded = name == "spec_inputs_sha256" && held.is_null();
            (held != now && !unrecorded).then(|| {
                format!(
                    "run-lock.json field {name} was edited (it holds {held}, the locked inputs \
                     give {now})"
                )
            })
        })
        .collect()
}

/// Builds the lock of a new run; `item_groups` are the workflow's (micro-single-task: its
/// families in round order).
pub fn build_lock(
    run_id: &str,
    spec: &LoadedSpec,
    dataset: &DatasetRelease,
    hashes: &InputHashes,
    item_groups: Vec<String>,
    approval_id: Option<String>,
) -> RunLock {
    let s = &spec.spec;
    let dataset_dir = std::fs::canonicalize(&dataset.dir).unwrap_or_else(|_| dataset.dir.clone());
    RunLock {
        lock_version: LOCK_VERSION,
        run_id: run_id.to_string(),
        workflow: s.benchmark.workflow.clone(),
        benchmark_slug: s.benchmark.slug.clone(),
        schedule_version: s.benchmark.schedule_version.clone(),
        model_label: s.benchmark.model_label.clone(),
        families: item_groups,
        spec_path: spec.path.display().to_string(),
        spec_sha256: hashes.spec.clone(),
        spec_inputs_sha256: Some(hashes.spec_inputs.clone()),
        dataset_dir: dataset_dir.display().to_string(),
        dataset_manifest: s.dataset.manifest.clone(),
        dataset_release_hash: hashes.dataset.clone(),
        input_files_sha256: hashes.files.clone(),
        adapters_sha256: hashes.adapters.clone(),
        tokenizer: openbench_common::tokenizer::TOKENIZER_NAME.to_string(),
        tokenizer_ranks_sha256: hashes.tokenizer.clone(),
        code_sha256: hashes.code.clone(),
        program_version: openbench_common::VERSION.to_string(),
        providers: s
            .providers
            .iter()
            .map(|p| LockedProvider {
                key: p.key.clone(),
                display_name: if p.display_name.is_empty() {
                    p.key.clone()
                } else {
                    p.display_name.clone()
                },
                model: p.model.clone(),
                input_price_per_mtok: p.price.as_ref().map(|x| x.input_per_mtok),
                output_price_per_mtok: p.price.as_ref().map(|x| x.output_per_mtok),
                cached_input_price_per_mtok: p.price.and_then(|x| x.cached_input_per_mtok),
                cache_write_input_price_per_mtok: p
                    .price
                    .and_then(|x| x.cache_write_input_per_mtok),
            })
            .collect(),
        regions: s.region_names(),
        simulator_time_scale: s.simulator.as_ref().map(|x| x.time_scale),
        timeout_ms: s.request.timeout_ms,
        approval_id,
        created_at: openbench_common::clock::now_rfc3339(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openbench_common::spec::Spec;
    use std::path::Path;

    fn loaded(text: &str) -> LoadedSpec {
        let spec = Spec::parse(Path::new("spec.yaml"), text.as_bytes()).unwrap();
        LoadedSpec {
            spec,
            path: "spec.yaml".into(),
            bytes: text.as_bytes().to_vec(),
        }
    }

    const SPEC: &str = "benchmark: {slug: s, workflow: w, schedule_version: v, families: [a]}
request: {temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 16, response_format: json_object, timeout_ms: 100}
providers:
  - {key: p, endpoint: 'https://x.test/v1', model: m, auth: {scheme: none}, max_tokens_field: max_tokens}
regions:
  - {name: east, probe: 'https://10.0.0.1:7070'}
dataset: {source: d}
";

    #[test]
    fn a_probe_address_is_left_out_of_the_spec_hash_but_the_region_is_not() {
        let base = spec_inputs_sha256(&loaded(SPEC));
        let moved = SPEC.replace("https://10.0.0.1:7070", "https://10.9.9.9:443");
        assert_eq!(spec_inputs_sha256(&loaded(&moved)), base);
        assert_ne!(sha256_hex(moved.as_bytes()), sha256_hex(SPEC.as_bytes()));
        let renamed = SPEC.replace("name: east", "name: west");
        assert_ne!(spec_inputs_sha256(&loaded(&renamed)), base);
        let endpoint = SPEC.replace("https://x.test/v1", "https://y.test/v1");
        assert_ne!(spec_inputs_sha256(&loaded(&endpoint)), base);
        assert_ne!(
            adapters_sha256(&loaded(&endpoint)),
            adapters_sha256(&loaded(SPEC))
        );
        assert_eq!(
            adapters_sha256(&loaded(&moved)),
            adapters_sha256(&loaded(SPEC))
        );
    }
}
