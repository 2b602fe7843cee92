//! The spec's rules: parsing (unknown fields denied) and validation that reports every problem
//! at once, each naming its field path and the offending value.

use super::{
    CONTRACT_BODY_FIELDS, Endpoint, MAX_GRACE_MS, MAX_TIMEOUT_MS, ProviderAdapter, RequestContract,
    Spec, SpecError,
};
use std::collections::BTreeSet;
use std::path::Path;

impl Spec {
    /// Parses YAML bytes and validates their generic part; `path` only names the file in errors.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Spec, SpecError> {
        Spec::parse_checked(path, bytes, |_| Vec::new())
    }

    /// Parses YAML bytes and validates them: the generic rules, then `workflow`'s, which may
    /// normalise its section; every problem of both is reported at once.
    pub fn parse_checked(
        path: &Path,
        bytes: &[u8],
        workflow: impl FnOnce(&mut Spec) -> Vec<String>,
    ) -> Result<Spec, SpecError> {
        let text = std::str::from_utf8(bytes).map_err(|source| SpecError::NotUtf8 {
            path: path.to_path_buf(),
            source,
        })?;
        let mut spec: Spec = serde_saphyr::from_str(text).map_err(|source| SpecError::Parse {
            path: path.to_path_buf(),
            source: Box::new(source),
        })?;
        // The workflow first: it may fill defaults (benchmark identity) the generic rules check.
        let workflow_problems = workflow(&mut spec);
        let mut problems = spec.problems();
        problems.extend(workflow_problems);
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
        // A spec naming no workflow gets its identity from the workflow a command selects
        // (`Spec::fill_benchmark_defaults`); once named, a blank slug is a mistake.
        if self.benchmark.slug.trim().is_empty() && !self.benchmark.workflow.is_empty() {
            problems.push("benchmark.slug: must not be empty".to_string());
        }
        problems.extend(self.request.problems());
        if self.providers.is_empty() {
            problems.push("providers: must list at least one provider".to_string());
        }
        let mut keys = BTreeSet::new();
        for (i, p) in self.providers.iter().enumerate() {
            let at = format!("providers[{i}] ({})", p.key);
            problems.extend(p.problems(&at));
            if !keys.insert(p.key.clone()) {
                problems.push(format!("{at}.key: {:?} is listed twice", p.key));
            }
            if matches!(p.endpoint_kind(), Endpoint::Simulator { .. }) && self.simulator.is_none() {
                problems.push(format!(
                    "{at}.endpoint: {:?} needs a `simulator:` section in the spec",
                    p.endpoint
                ));
            }
        }
        if let Some(results) = &self.results {
            let rule = results.regression;
            if !(rule.min_relative_change_pct.is_finite() && rule.min_relative_change_pct >= 0.0) {
                problems.push(format!(
                    "results.regression.min_relative_change_pct: {} must be a percentage >= 0",
                    rule.min_relative_change_pct
                ));
            }
            if !(rule.min_rate_change_points.is_finite()
                && (0.0..=100.0).contains(&rule.min_rate_change_points))
            {
                problems.push(format!(
                    "results.regression.min_rate_change_points: {} must be between 0 and 100",
                    rule.min_rate_change_points
                ));
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
            problems.extend(region.problems(i));
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
}

impl RequestContract {
    /// Every rule the contract breaks, each naming its `request.` field and value (shared by the
    /// spec and a probe checking the contract a session sent it).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let r = self;
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
        if r.timeout_ms == 0 || r.timeout_ms > MAX_TIMEOUT_MS {
            problems.push(format!(
                "request.timeout_ms: {} is outside 1..={MAX_TIMEOUT_MS}",
                r.timeout_ms
            ));
        }
        if r.harness_grace_ms > MAX_GRACE_MS {
            problems.push(format!(
                "request.harness_grace_ms: {} is above {MAX_GRACE_MS}",
                r.harness_grace_ms
            ));
        }
        problems.extend(r.limits.problems());
        problems
    }
}

impl ProviderAdapter {
    /// Every rule this adapter breaks on its own, each prefixed with `at` (its place in the
    /// spec): key, endpoint, model, credential names, contract-owned body fields, credentials in
    /// headers. Shared by the spec and a probe checking the adapters a session sent it.
    pub fn problems(&self, at: &str) -> Vec<String> {
        let mut problems = Vec::new();
        let p = self;
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
        let e = &p.endpoint;
        if let Endpoint::Unknown(_) = p.endpoint_kind() {
            problems.push(format!(
                "{at}.endpoint: {e:?} must start with https://, http://, sim:// or env://"
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
        for reserved in CONTRACT_BODY_FIELDS.iter().chain(p.api.contract_fields()) {
            if p.extra_body.contains_key(*reserved) {
                problems.push(format!(
                    "{at}.extra_body.{reserved}: the contract owns this field"
                ));
            }
        }
        if let Some(price) = &p.price {
            let fields = [
                ("input_per_mtok", Some(price.input_per_mtok)),
                ("output_per_mtok", Some(price.output_per_mtok)),
                ("cached_input_per_mtok", price.cached_input_per_mtok),
                (
                    "cache_write_input_per_mtok",
                    price.cache_write_input_per_mtok,
                ),
            ];
            for (field, value) in fields {
                if let Some(v) = value.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                    problems.push(format!("{at}.price.{field}: {v} must be a price >= 0"));
                }
            }
        }
        for header in p.extra_headers.keys() {
            if header.eq_ignore_ascii_case("authorization") {
                problems.push(format!(
                    "{at}.extra_headers.{header}: credentials belong in `auth`, never in the spec"
                ));
            }
        }
        problems
    }
}
