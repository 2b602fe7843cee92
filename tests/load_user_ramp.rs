//! A closed-loop step's user ramp through the real load runner (`ramp_up_s`, docs/load.md): 4
//! users over 2 s on two regions of one provider, against the embedded simulator. Each user's
//! first request carries its planned start (user g of 4 at g × 500 ms: region a's users at 0 and
//! 500 ms, region b's at 1000 and 1500 ms) as its think time and is sent no earlier; later
//! requests plan none.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use openbench_common::record::TerminalRecord;
use std::collections::BTreeMap;

const SPEC: &str = "benchmark: {slug: load-ramp, workflow: load, schedule_version: load-ramp-v1}
request: {temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 20000,
  harness_grace_ms: 60000}
providers:
  - {key: p, endpoint: 'sim://plain', model: m, auth: {scheme: none}, max_tokens_field: max_tokens}
regions:
  - {name: a, probe: local}
  - {name: b, probe: local}
dataset: {source: ., manifest: none}
simulator: {time_scale: 0.05, seed: 7}
run_root: runs
load:
  seed: 1
  phases: {warmup_s: 2, measure: {duration_s: 0.5}, cooldown_s: 0}
  steps: [{model: closed, concurrency: 4, ramp_up_s: 2}]
  workload:
    kind: synthetic
    input_tokens: {dist: fixed, tokens: 20}
    output_tokens: {dist: fixed, tokens: 8}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ramped_closed_steps_users_start_at_their_planned_offsets() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("spec.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    let (dir, _results) = coordinator_support::run_load(&spec, "T-RAMP").await;
    let records = coordinator_support::records(&dir.join("raw/results.jsonl"));
    let first: BTreeMap<(String, u32), &TerminalRecord> = records
        .iter()
        .filter(|r| r.sequence == Some(0))
        .map(|r| ((r.lane.clone(), r.slot.unwrap()), r))
        .collect();
    let planned = [
        (("p@a", 0), None),
        (("p@a", 1), Some(500.0)),
        (("p@b", 0), Some(1000.0)),
        (("p@b", 1), Some(1500.0)),
    ];
    assert_eq!(
        first.len(),
        planned.len(),
        "every user sent its first request"
    );
    for ((lane, slot), start) in planned {
        let r = first[&(lane.to_string(), slot)];
        assert_eq!(r.think_ms, start, "{lane} user {slot}");
        let sent = r.sent_offset_ms.unwrap();
        assert!(
            sent >= start.unwrap_or(0.0),
            "{lane} user {slot} sent at {sent} ms"
        );
    }
    // Later requests wait for nothing but their previous one.
    assert!(
        records
            .iter()
            .filter(|r| r.sequence.is_some_and(|s| s > 0))
            .all(|r| r.think_ms.is_none())
    );
    // The step says it ramps.
    let plan = std::fs::read_to_string(dir.join("artifacts/full-plan.json")).unwrap();
    assert!(plan.contains("\"step-0 closed c=4 ramp 2s\""), "{plan}");
}
