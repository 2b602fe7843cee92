//! The spec's reference, derived from the structs the parser reads: a JSON Schema
//! (`docs/spec.schema.json`, for editors' completion and checking) and the field reference
//! `docs/spec.md`, both generated from the schema (with the doc comments as descriptions), so a
//! field added, renamed or given a default shows in both. `tests/spec_reference.rs` fails when
//! the checked-in files differ from what this build generates; `openbench-inference
//! spec-reference --write docs` regenerates them.

use serde_json::{Map, Value, json};
use std::fmt::Write;

/// File name of the generated reference.
pub const MARKDOWN_FILE: &str = "spec.md";
/// File name of the generated JSON Schema.
pub const SCHEMA_FILE: &str = "spec.schema.json";

/// The spec's JSON Schema: the generic sections, plus the `load:` workflow section.
pub fn json_schema() -> Value {
    let mut root = serde_json::to_value(schemars::schema_for!(openbench_common::spec::Spec))
        .unwrap_or_default();
    let load = serde_json::to_value(schemars::schema_for!(openbench_load::spec::LoadSection))
        .unwrap_or_default();
    let mut load = match load {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let load_defs = load.remove("$defs");
    load.remove("$schema");
    load.remove("title");
    if let Value::Object(map) = &mut root {
        map.insert(
            "title".into(),
            json!("openbench-inference spec (docs/spec.md)"),
        );
        let defs = map
            .entry("$defs")
            .or_insert_with(|| Value::Object(Map::new()));
        if let (Value::Object(defs), Some(Value::Object(extra))) = (defs, load_defs) {
            defs.extend(extra);
            defs.insert("LoadSection".into(), Value::Object(load));
        }
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            props.insert(
                "load".into(),
                json!({
                    "description": "The load workflow's section (docs/load.md): steps or a \
                                    saturation search, phases, SLO, workload.",
                    "$ref": "#/$defs/LoadSection"
                }),
            );
        }
    }
    root
}

/// The JSON Schema file's text.
pub fn schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&json_schema()).unwrap_or_default();
    text.push('\n');
    text
}

/// `docs/spec.md`: every section and field, its type, default and description.
pub fn markdown() -> String {
    let schema = json_schema();
    let mut out = String::from(
        "# Spec reference\n\n\
         Generated from the spec structs by `openbench-inference spec-reference --write docs` \
         (do not edit by hand; `tests/spec_reference.rs` fails when this file is stale). The \
         same schema is `docs/spec.schema.json`, for editors: add \
         `# yaml-language-server: $schema=<path>/docs/spec.schema.json` to a spec.\n\n\
         A field with a default may be left out. The smallest spec a load run needs is its \
         `providers` (key, base URL, model) and a `load:` section; \
         `openbench-inference load --target URL --model NAME --concurrency 1,2,4` writes one for \
         you. Endpoints are base URLs (`https://api.together.xyz/v1`): the adapter adds the path of \
         the provider's `api:` dialect, `/chat/completions` by default (a URL already ending in \
         it is kept). `api: anthropic-messages` adds `/messages` and sends the key in \
         `x-api-key` (`auth: {scheme: headers, headers: {x-api-key: ANTHROPIC_API_KEY}}`), \
         `openai-responses` adds `/responses`, `openai-completions` adds `/completions`; \
         docs/methodology.md maps each dialect's events onto the timings.\n\n",
    );
    out.push_str("## Top level\n\n");
    object_table(&mut out, &schema);
    if let Some(Value::Object(defs)) = schema.get("$defs") {
        for (name, def) in defs {
            let _ = writeln!(out, "## {name}\n");
            if let Some(d) = def.get("description").and_then(Value::as_str) {
                let _ = writeln!(out, "{}\n", one_line(d));
            }
            if def.get("properties").is_some() {
                object_table(&mut out, def);
            }
            if let Some(Value::Array(variants)) = def.get("oneOf").or_else(|| def.get("anyOf")) {
                variants_list(&mut out, variants);
            }
            if let Some(Value::Array(values)) = def.get("enum") {
                let values: Vec<String> =
                    values.iter().map(|v| format!("`{}`", plain(v))).collect();
                let _ = writeln!(out, "One of {}.\n", values.join(", "));
            }
        }
    }
    out
}

/// A table of an object schema's properties.
fn object_table(out: &mut String, schema: &Value) {
    let Some(Value::Object(props)) = schema.get("properties") else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    out.push_str("| field | type | required | default | description |\n|---|---|---|---|---|\n");
    for (name, prop) in props {
        let required = if required.contains(&name.as_str()) {
            "yes"
        } else {
            "no"
        };
        let default = prop
            .get("default")
            .map_or(String::new(), |d| format!("`{}`", plain(d)));
        let description = prop
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("");
        let _ = writeln!(
            out,
            "| `{name}` | {} | {required} | {default} | {} |",
            type_text(prop),
            one_line(description).replace('|', "\\|")
        );
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        out.push_str("\nAny other field is refused, naming it.\n");
    }
    out.push('\n');
}

/// The variants of a tagged or externally tagged enum, one bullet each.
fn variants_list(out: &mut String, variants: &[Value]) {
    for v in variants {
        let description = v.get("description").and_then(Value::as_str).unwrap_or("");
        let shape = if let Some(c) = v.get("const") {
            format!("`{}`", plain(c))
        } else if let Some(Value::Object(props)) = v.get("properties") {
            let fields: Vec<String> = props
                .iter()
                .map(|(k, p)| match p.get("const") {
                    Some(c) => format!("{k}: {}", plain(c)),
                    None => format!("{k}: {}", type_text(p).replace('`', "")),
                })
                .collect();
            format!("`{{{}}}`", fields.join(", "))
        } else {
            type_text(v)
        };
        let _ = writeln!(out, "- {shape}: {}", one_line(description));
    }
    out.push('\n');
}

/// A property's type in words: `string`, `[Name](#name)`, `list of …`, `… or null`.
fn type_text(p: &Value) -> String {
    if let Some(r) = p.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or(r);
        return format!("[{name}](#{})", name.to_lowercase());
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(options)) = p.get(key) {
            let parts: Vec<String> = options.iter().map(type_text).collect();
            return parts.join(" or ");
        }
    }
    let base = match p.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts.iter().map(plain).collect::<Vec<_>>().join(" or "),
        _ => String::from("any"),
    };
    if base.starts_with("array")
        && let Some(items) = p.get("items")
    {
        return format!("list of {}", type_text(items));
    }
    if base == "object"
        && let Some(values) = p.get("additionalProperties").filter(|v| v.is_object())
    {
        return format!("map of {}", type_text(values));
    }
    base
}

/// A JSON value without quotes around a bare string.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) if s.is_empty() => String::from("\"\""),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Text on one line (doc comments wrap).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
