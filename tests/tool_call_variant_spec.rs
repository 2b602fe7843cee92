#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The tool-call variant of micro-single-task (`benchmark.answer_via: tool_call`) end to end on
//! the simulator: three providers in the three dialects with tools answer every item as a call
//! of its family's forced tool; their task-success columns equal each other and those of the
//! same run answered as JSON text, and equal what this test scores from the raw records and the
//! dataset's gold with its own code (not the workflow's scorer). A spec that asks a legacy
//! completions provider for tool calls is refused at `init`, naming the provider.

mod coordinator_support;

use coordinator_support::*;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir as layout;
use openbench_micro_single_task::scoring::Family;
use openbench_micro_single_task::scoring::tool_call::tool_for;
use openbench_micro_single_task::spec_yaml::contract_sections;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

const DIALECTS: [(&str, &str); 3] = [
    ("chat", "openai-chat"),
    ("messages", "anthropic-messages"),
    ("responses", "openai-responses"),
];

/// Writes a spec (providers on the `nebius` profile: 85% task success, 15% failures drawn)
/// answering via `answer_via`, runs it in full and returns the run directory.
fn run(
    tmp: &Path,
    data: &Path,
    name: &str,
    answer_via: &str,
    providers: &[(&str, &str)],
) -> std::path::PathBuf {
    let mut text = contract_sections(2_000, HARNESS_GRACE_MS).replace(
        "  families:",
        &format!("  answer_via: {answer_via}\n  families:"),
    );
    for (key, api) in providers {
        text.push_str(&format!(
            "  - key: {key}\n    endpoint: sim://nebius\n    model: m-same\n    api: {api}\n    \
             auth: {{scheme: none}}\n"
        ));
    }
    text.push_str(&format!(
        "dataset:\n  source: {}\nplans:\n  full_items_per_family: 4\n  smoke_items_per_family: 1\n\
         run_root: runs-{name}\nsimulator:\n  time_scale: 0.01\n  seed: 7\n",
        data.display()
    ));
    let spec = tmp.join(format!("{name}.yaml"));
    std::fs::write(&spec, text).unwrap();
    let o = run_bin(
        tmp,
        &[
            "run",
            "--spec",
            spec.to_str().unwrap(),
            "--full",
            "--approve-full",
            "--approval-id",
            "TOOL-1",
        ],
        &[],
    );
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}");
    printed_run_dir(&o.stdout)
}

/// provider → [pooled success, then per family: success rate, valid count], from metrics.json.
fn columns(dir: &Path) -> BTreeMap<String, Vec<Value>> {
    let metrics: Value =
        serde_json::from_slice(&std::fs::read(dir.join(layout::METRICS)).unwrap()).unwrap();
    metrics["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let mut column = vec![p["pooled"]["task_success_rate"].clone()];
            for family in p["families"].as_array().unwrap() {
                column.push(family["task_success_rate"].clone());
                column.push(family["valid_result_count"].clone());
            }
            (p["provider"].as_str().unwrap().to_string(), column)
        })
        .collect()
}

/// item id → (gold object, aliases) of every dataset row.
fn golds(data: &Path) -> BTreeMap<String, (Value, Vec<String>)> {
    let mut out = BTreeMap::new();
    for family in [
        "meeting-notes-lookup",
        "ticket-triage",
        "contract-terms-extraction",
    ] {
        let text = std::fs::read_to_string(data.join(format!("{family}.jsonl"))).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let row: Value = serde_json::from_str(line).unwrap();
            let aliases = row["aliases"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            out.insert(
                row["id"].as_str().unwrap().to_string(),
                (row["gold"].clone(), aliases),
            );
        }
    }
    out
}

/// This test's own verdict on one record: completed, exactly one call named as its family's
/// tool, arguments one JSON object equal to the gold (meeting answers compared trimmed,
/// whitespace-collapsed and lowercased, or equal to an alias so).
fn correct(r: &TerminalRecord, gold: &(Value, Vec<String>)) -> bool {
    let expected_name = match r.task_family.as_str() {
        "meeting-notes-lookup" => "answer_question",
        "ticket-triage" => "triage",
        _ => "record_contract_terms",
    };
    if r.outcome != Outcome::Completed
        || r.tool_calls.len() != 1
        || r.tool_calls[0].name != expected_name
    {
        return false;
    }
    let Ok(args) = serde_json::from_str::<Value>(&r.tool_calls[0].arguments) else {
        return false;
    };
    if r.task_family == "meeting-notes-lookup" {
        let norm = |s: &str| {
            s.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        };
        let Some(answer) = args.get("answer").and_then(Value::as_str) else {
            return false;
        };
        let keys_ok = args.as_object().is_some_and(|o| o.len() == 1);
        let accepted = std::iter::once(gold.0["answer"].as_str().unwrap_or_default())
            .chain(gold.1.iter().map(String::as_str))
            .any(|g| norm(g) == norm(answer));
        return keys_ok && accepted;
    }
    args == gold.0
}

#[test]
fn tool_call_variant_scores_exactly_and_like_json_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);

    // Every family's tool takes exactly the dataset's answer schema as its parameters.
    for (family, file) in [
        (Family::MeetingNotesLookup, "meeting-notes-lookup"),
        (Family::TicketTriage, "ticket-triage"),
        (Family::ContractTermsExtraction, "contract-terms-extraction"),
    ] {
        let text = std::fs::read_to_string(data.join(format!("{file}.jsonl"))).unwrap();
        let row: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(tool_for(family).parameters, row["output_schema"], "{file}");
    }

    let tools = run(tmp.path(), &data, "tools", "tool_call", &DIALECTS);
    let json = run(tmp.path(), &data, "json", "json_object", &DIALECTS[..1]);
    let tool_columns = columns(&tools);
    let chat = &tool_columns["chat"];
    assert_eq!(&tool_columns["messages"], chat);
    assert_eq!(&tool_columns["responses"], chat);
    assert_eq!(
        &columns(&json)["chat"],
        chat,
        "tool calls scored as the JSON answers"
    );

    // The independent check: success per provider and family from the raw records.
    let golds = golds(&data);
    let mut tally: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    let mut pooled: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut calls = 0;
    for r in records(&tools.join(layout::FULL_RESULTS)) {
        let ok = u64::from(correct(&r, &golds[&r.item_id]));
        calls += r.tool_calls.len();
        assert!(
            r.answer_text.is_empty(),
            "{}: answered in text",
            r.request_id
        );
        for entry in [
            tally
                .entry((r.provider.clone(), r.task_family.clone()))
                .or_default(),
            pooled.entry(r.provider.clone()).or_default(),
        ] {
            entry.0 += ok;
            entry.1 += 1;
        }
    }
    // 3 providers × 12 requests, less the failures the profile draws.
    assert!(calls >= 24, "{calls} calls");
    let metrics: Value =
        serde_json::from_slice(&std::fs::read(tools.join(layout::METRICS)).unwrap()).unwrap();
    let mut some_wrong = false;
    for p in metrics["providers"].as_array().unwrap() {
        let provider = p["provider"].as_str().unwrap().to_string();
        let (ok, all) = pooled[&provider];
        some_wrong |= ok < all;
        assert_eq!(
            p["pooled"]["task_success_rate"].as_f64(),
            Some(ok as f64 / all as f64),
            "{provider}"
        );
        for f in p["families"].as_array().unwrap() {
            let family = f["task_family"].as_str().unwrap().to_string();
            let (ok, all) = tally[&(provider.clone(), family.clone())];
            assert_eq!(
                f["valid_result_count"].as_u64(),
                Some(ok),
                "{provider} {family}"
            );
            assert_eq!(
                f["task_success_rate"].as_f64(),
                Some(ok as f64 / all as f64),
                "{provider} {family}"
            );
        }
    }
    assert!(
        some_wrong,
        "the profile draws failures, so the columns are not trivially full"
    );

    // The latency columns are the call's: one TTFA and E2E per completed call, each p50 among
    // the records' own first tool-call tokens and tool-call E2Es.
    for p in metrics["providers"].as_array().unwrap() {
        let provider = p["provider"].as_str().unwrap();
        let mine: Vec<TerminalRecord> = records(&tools.join(layout::FULL_RESULTS))
            .into_iter()
            .filter(|r| r.provider == provider && r.outcome == Outcome::Completed)
            .collect();
        let firsts: Vec<f64> = mine.iter().filter_map(|r| r.ttf_tool_call_ms).collect();
        let lasts: Vec<f64> = mine.iter().filter_map(|r| r.tool_call_e2e_ms).collect();
        let pooled = &p["pooled"];
        assert_eq!(
            pooled["ttfa_population"].as_u64(),
            Some(firsts.len() as u64),
            "{provider}"
        );
        assert_eq!(
            pooled["e2e_latency_population"].as_u64(),
            Some(lasts.len() as u64),
            "{provider}"
        );
        assert!(firsts.len() >= 8, "{provider}: {firsts:?}");
        let within =
            |v: f64, all: &[f64]| all.iter().any(|x| *x <= v) && all.iter().any(|x| *x >= v);
        assert!(
            within(pooled["ttfa_p50"].as_f64().unwrap(), &firsts),
            "{provider}"
        );
        assert!(
            within(pooled["e2e_latency_p50"].as_f64().unwrap(), &lasts),
            "{provider}"
        );
        assert!(
            pooled["output_tokens_per_second_population"]
                .as_u64()
                .unwrap()
                > 0,
            "{provider}"
        );
    }
}

#[test]
fn a_legacy_completions_provider_cannot_be_asked_for_tool_calls() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let mut text = contract_sections(2_000, HARNESS_GRACE_MS)
        .replace("  families:", "  answer_via: tool_call\n  families:");
    text.push_str(
        "  - key: raw\n    endpoint: sim://plain\n    model: m\n    api: openai-completions\n    \
         auth: {scheme: none}\n",
    );
    text.push_str(&format!(
        "dataset:\n  source: {}\nrun_root: runs\n",
        data.display()
    ));
    let spec = tmp.path().join("spec.yaml");
    std::fs::write(&spec, text).unwrap();
    let o = run_bin(tmp.path(), &["init", "--spec", spec.to_str().unwrap()], &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("providers[0] (raw): api openai-completions has no tools"),
        "{err}"
    );
}
