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
