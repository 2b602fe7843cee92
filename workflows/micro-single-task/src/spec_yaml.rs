//! The fixed part of a micro-single-task spec as YAML, for the specs that programs write (the
//! fidelity bench, the tests' simulated runs): the benchmark identity and the request contract of
//! METHODOLOGY §1, written once here so every generated spec asks for the same contract as the
//! bundled `specs/simulated.yaml`.

/// The `benchmark:` and `request:` sections with the given deadline and harness grace, followed
/// by the `providers:` key, ready for provider entries.
pub fn contract_sections(timeout_ms: u64, harness_grace_ms: u64) -> String {
    format!(
        "benchmark:
  slug: inference-micro-single-task
  workflow: micro-single-task
  schedule_version: micro-single-task-paired-round-robin-sha256-v1
  families: [meeting-notes-lookup, ticket-triage, contract-terms-extraction]
request:
  temperature: 0
  top_p: 1
  presence_penalty: 0
  frequency_penalty: 0
  max_output_tokens: 256
  response_format: json_object
  reasoning_effort: low
  timeout_ms: {timeout_ms}
  harness_grace_ms: {harness_grace_ms}
providers:
"
    )
}

#[cfg(test)]
mod tests {
    use super::contract_sections;
    use serde_json::Value;

    /// The bundled spec, which `scripts/hostile-rss.sh` copies its contract from.
    const BUNDLED: &str = include_str!("../specs/simulated.yaml");

    fn yaml(text: &str) -> Value {
        serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    /// Generated specs and the bundled one must ask providers for the same request: the two
    /// texts are kept in step by this test, not by hand.
    #[test]
    fn the_generated_contract_is_the_bundled_specs_contract() {
        let bundled = yaml(BUNDLED);
        // The bundled spec's own deadline and grace, so every other field must match as is.
        let generated = yaml(&format!("{}  []\n", contract_sections(600, 2000)));
        assert_eq!(generated["request"], bundled["request"]);
        let mut benchmark = bundled["benchmark"].clone();
        // The one field a generated spec leaves out: its model label is the run's own.
        let label = benchmark
            .as_object_mut()
            .and_then(|b| b.remove("model_label"));
        assert_eq!(label, Some(Value::from("GLM-5.3-Flash")));
        assert_eq!(generated["benchmark"], benchmark);
        assert_eq!(generated["request"]["max_output_tokens"], 256);
    }
}
