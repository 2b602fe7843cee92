#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A micro-single-task run mixing API dialects on one simulator profile: three providers that
//! differ only in `api:` get the same seeded answers, so their task-success columns (pooled and
//! per family) and every answer are the same.

mod coordinator_support;

use coordinator_support::*;
use openbench_common::rundir as layout;
use openbench_micro_single_task::spec_yaml::contract_sections;
use std::collections::BTreeMap;

/// (outcome, answer text) by (round, item).
type Answers = BTreeMap<(u64, String), (String, String)>;

#[test]
fn providers_differing_only_in_api_have_the_same_success_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let mut text = contract_sections(2_000, HARNESS_GRACE_MS);
    // nebius: 85% task success and 15% failures drawn, so the columns are not trivially full.
    for (key, api) in [
        ("chat", "openai-chat"),
        ("messages", "anthropic-messages"),
        ("responses", "openai-responses"),
    ] {
        text.push_str(&format!(
            "  - key: {key}\n    endpoint: sim://nebius\n    model: m-same\n    api: {api}\n    \
             auth: {{scheme: none}}\n"
        ));
    }
    text.push_str(&format!(
        "dataset:\n  source: {}\nplans:\n  full_items_per_family: 4\n  smoke_items_per_family: 1\n\
         run_root: runs\nsimulator:\n  time_scale: 0.01\n  seed: 7\n",
        data.display()
    ));
    let spec = tmp.path().join("spec.yaml");
    std::fs::write(&spec, text).unwrap();
    let o = run_bin(
        tmp.path(),
        &[
            "run",
            "--spec",
            spec.to_str().unwrap(),
            "--full",
            "--approve-full",
            "--approval-id",
            "MIX-1",
        ],
        &[],
    );
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}");
    let dir = printed_run_dir(&o.stdout);

    let metrics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(layout::METRICS)).unwrap()).unwrap();
    let columns: BTreeMap<String, Vec<serde_json::Value>> = metrics["providers"]
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
        .collect();
    assert_eq!(columns.len(), 3, "{columns:?}");
    let chat = &columns["chat"];
    assert_eq!(&columns["messages"], chat);
    assert_eq!(&columns["responses"], chat);
    assert!(chat[0].as_f64().is_some(), "{chat:?}");

    // Answer by answer: the same text and outcome for the same round and item.
    let mut by_provider: BTreeMap<String, Answers> = BTreeMap::new();
    for r in records(&dir.join(layout::FULL_RESULTS)) {
        by_provider.entry(r.provider.clone()).or_default().insert(
            (r.round_index, r.item_id.clone()),
            (format!("{:?}", r.outcome), r.answer_text.clone()),
        );
    }
    let chat = &by_provider["chat"];
    assert!(chat.len() >= 4, "{chat:?}");
    assert_eq!(&by_provider["messages"], chat);
    assert_eq!(&by_provider["responses"], chat);
}
