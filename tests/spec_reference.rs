//! docs/spec.md and docs/spec.schema.json are what this build generates from the spec structs
//! (so a field added, renamed or defaulted cannot leave them stale), and the schema knows the
//! defaults of the request contract.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use openbench_inference::spec_reference::{json_schema, markdown, schema_text};

const REGENERATE: &str =
    "stale: regenerate with `cargo run -- spec-reference --write docs` and commit the result";

#[test]
fn checked_in_reference_and_schema_equal_the_generated_ones() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let md = std::fs::read_to_string(root.join("spec.md")).unwrap();
    assert!(md == markdown(), "docs/spec.md is {REGENERATE}");
    let schema = std::fs::read_to_string(root.join("spec.schema.json")).unwrap();
    assert!(
        schema == schema_text(),
        "docs/spec.schema.json is {REGENERATE}"
    );
}

#[test]
fn the_schema_gives_the_contract_defaults_and_requires_only_providers() {
    let schema = json_schema();
    assert_eq!(schema["required"], serde_json::json!(["providers"]));
    let contract = &schema["$defs"]["RequestContract"]["properties"];
    assert_eq!(contract["temperature"]["default"], 0.0);
    assert_eq!(contract["top_p"]["default"], 1.0);
    assert_eq!(contract["presence_penalty"]["default"], 0.0);
    assert_eq!(contract["frequency_penalty"]["default"], 0.0);
    assert_eq!(contract["max_output_tokens"]["default"], 256);
    assert_eq!(contract["response_format"]["default"], "json_object");
    assert_eq!(contract["timeout_ms"]["default"], 20000);
    assert_eq!(schema["properties"]["load"]["$ref"], "#/$defs/LoadSection");
    let provider = &schema["$defs"]["ProviderAdapter"];
    assert_eq!(
        provider["required"],
        serde_json::json!(["key", "endpoint", "model"])
    );
}
