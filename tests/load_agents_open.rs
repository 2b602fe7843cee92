//! Agent runs in open loops (`agent:` on constant, Poisson, gamma, ramp and trace steps;
//! docs/agents.md) against the simulator over loopback, through the logging proxy of
//! tests/agent_support. Release k starts agent run k (slot k) asking agent item k; its later steps
//! follow their tool results after their think time, unscheduled, and the slot stops when the
//! run ends. The simulated agent makes its two scripted calls and then answers (a 3-step run), so
//! every count below is worked out by hand from the releases.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent_support;
mod coordinator_support;
mod load_workflow_support;

use agent_support::{ANSWER_0, MEETING_0, TICKET_2, chat_call, start};
use load_workflow_support::{
    copy_azure_sample, run, slot_records, stopped_then_resumed, write_spec,
};
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_load::agent_family::{SYSTEM, item};
use openbench_load::arrivals::{OpenSchedule, Phase};
use openbench_load::report::agents::AgentRunRow;
use openbench_load::report::compute::compute;
use openbench_load::spec::LoadSection;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Chat lanes through the proxy: a good agent, one calling the wrong tool, one whose calls are
/// cut short.
fn providers(proxy: &str) -> String {
    [
        ("chat", "m"),
        ("wrong", "m+agent-wrong-tool"),
        ("cut", "m+truncated-tool-call"),
    ]
    .iter()
    .map(|(key, model)| {
        format!(
            "  - {{key: {key}, endpoint: '{proxy}/{key}/v1', model: '{model}', \
                 auth: {{scheme: none}}}}\n"
        )
    })
    .collect()
}

/// Constant 4/s for 2 s (releases at k × 250 ms, k < 8) with a 30 ms think before each later
/// step; Poisson 4/s (seeded); and a closed step of one user per lane to score against.
const SECTION: &str = "seed: 5
phases: {warmup_s: 0, measure: {duration_s: 2}, cooldown_s: 0}
steps:
  - {model: constant, rate_per_s: 4, agent: {max_steps: 4, think_ms: {dist: fixed, tokens: 30}}}
  - {model: poisson, rate_per_s: 4, agent: {max_steps: 4}}
  - {model: closed, concurrency: 1, agent: {max_steps: 4}}
workload:
  kind: synthetic
  input_tokens: {dist: fixed, tokens: 20}
  output_tokens: {dist: fixed, tokens: 16}";

/// `section` indented under `load:`.
fn indented(section: &str) -> String {
    section
        .lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The step index of a record (`agent-0003/step-2` is step 2).
fn step_of(r: &TerminalRecord) -> u64 {
    r.item_id
        .split_once("/step-")
        .map_or(0, |(_, s)| s.parse().unwrap())
}

/// The figures that say how runs were scored, without the counts and times.
fn scores(r: &AgentRunRow) -> (Option<f64>, Option<f64>, Option<f64>, bool, bool) {
    (
        r.answer_success,
        r.tool_call_success,
        r.model_calls_mean,
        r.answered == r.runs,
        r.failed == r.runs,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loop_agent_step_starts_one_run_per_release_and_scores_as_the_closed_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (proxy, log) = start();
    let spec = write_spec(tmp.path(), &providers(&proxy), &indented(SECTION), "");
    let (dir, results) = run(&spec).await;
    let log = log.lock().unwrap().clone();

    // Constant: release k of every lane is slot k, its first step scheduled at k × 250 ms and
    // asking item k; the later steps follow unscheduled, 30 ms after the previous step's end.
    let constant = slot_records(&dir, Some(0));
    for lane in ["chat", "wrong", "cut"] {
        let mine: Vec<u32> = constant
            .keys()
            .filter(|(l, _)| l == lane)
            .map(|(_, s)| *s)
            .collect();
        assert_eq!(mine, (0..8).collect::<Vec<u32>>(), "{lane}");
    }
    for ((lane, slot), records) in &constant {
        let first = &records[0];
        assert_eq!(first.scheduled_offset_ms, Some(f64::from(*slot) * 250.0));
        assert_eq!(first.item_id, format!("agent-{slot:04}"));
        let steps: Vec<u64> = records.iter().map(step_of).collect();
        let expected: &[u64] = if lane == "cut" { &[0] } else { &[0, 1, 2] };
        assert_eq!(steps, expected, "{lane} slot {slot}");
        for pair in records.windows(2) {
            assert_eq!(pair[1].think_ms, Some(30.0));
            assert_eq!(pair[1].scheduled_offset_ms, None);
            let ended = pair[0].sent_offset_ms.unwrap() + pair[0].stream_end_ms.unwrap();
            assert!(pair[1].sent_offset_ms.unwrap() >= ended + 30.0 - 1.0);
        }
    }
    // Release 0 of the chat lane is item 0: the messages worked out by hand in load_agents.rs.
    let run0 = &constant[&("chat".to_string(), 0)];
    assert_eq!(run0[2].answer_text, ANSWER_0);
    let (a, b) = (
        run0[0].tool_calls[0].id.clone(),
        run0[1].tool_calls[0].id.clone(),
    );
    let mut messages = vec![
        json!({"role": "system", "content": SYSTEM}),
        json!({"role": "user", "content": item(0).question}),
    ];
    messages.push(json!({"role": "assistant", "content": null,
        "tool_calls": [chat_call(&a, "lookup_meeting", r#"{"id":"mtg-0000"}"#)]}));
    messages.push(json!({"role": "tool", "tool_call_id": a, "content": MEETING_0}));
    messages.push(json!({"role": "assistant", "content": null,
        "tool_calls": [chat_call(&b, "get_ticket", r#"{"id":"tkt-0002"}"#)]}));
    messages.push(json!({"role": "tool", "tool_call_id": b, "content": TICKET_2}));
    let sent = log["chat"]
        .iter()
        .find(|body| body["messages"].as_array().unwrap().len() == 6)
        .filter(|body| body["messages"][1] == messages[1])
        .unwrap();
    assert_eq!(sent["messages"], Value::Array(messages));

    // Poisson: release k's first step is scheduled at the arrival process's release k.
    let section = LoadSection::from_yaml(SECTION, "s.yaml").unwrap();
    let steps = section.sweep_steps(&openbench_load::trace::Traces::new());
    let due: Vec<f64> = OpenSchedule::new(&steps[1], 5)
        .unwrap()
        .releases()
        .map(|r| r.offset_ns as f64 / 1e6)
        .collect();
    let poisson = slot_records(&dir, Some(1));
    let chat: Vec<&Vec<TerminalRecord>> = poisson
        .iter()
        .filter(|((l, _), _)| l == "chat")
        .map(|(_, v)| v)
        .collect();
    assert_eq!(chat.len(), due.len());
    assert!(due.len() >= 2, "{due:?}");
    for (k, records) in chat.iter().enumerate() {
        let at = records[0].scheduled_offset_ms.unwrap();
        assert!(
            (at - due[k]).abs() < 1e-3,
            "release {k}: {at} vs {}",
            due[k]
        );
        assert_eq!(records[0].item_id, format!("agent-{k:04}"));
    }

    // The report: every release of the constant step is a measured run (scheduled inside
    // [0, 2000) ms) that ended, 8 per lane: the good lane answers all right in 3 calls, the
    // wrong-tool lane answers all wrong in 3, the cut lane fails all at its first call.
    let metrics = compute(&results);
    let agent = metrics.steps[0].agent.as_ref().expect("an agent step");
    let row = |name: &str| agent.runs.iter().find(|r| r.name == name).unwrap().clone();
    let counts = |r: &AgentRunRow| (r.runs, r.answered, r.step_limit, r.failed, r.unfinished);
    assert_eq!(counts(&row("chat")), (8, 8, 0, 0, 0));
    assert_eq!(counts(&row("wrong")), (8, 8, 0, 0, 0));
    assert_eq!(counts(&row("cut")), (8, 0, 0, 8, 0));
    assert_eq!(counts(&row("pooled")), (24, 16, 0, 8, 0));
    let pooled = row("pooled");
    assert_eq!(pooled.model_calls_mean, Some((24.0 + 24.0 + 8.0) / 24.0));
    assert_eq!(pooled.answer_success, Some(8.0 / 24.0));
    assert_eq!(pooled.tool_call_success, Some(8.0 / 24.0));
    assert_eq!(
        scores(&row("chat")),
        (Some(1.0), Some(1.0), Some(3.0), true, false)
    );
    assert_eq!(
        scores(&row("wrong")),
        (Some(0.0), Some(0.0), Some(3.0), true, false)
    );
    assert_eq!(
        scores(&row("cut")),
        (Some(0.0), Some(0.0), Some(1.0), false, true)
    );
    // Scored exactly as the closed step scores the same lanes.
    let closed = metrics.steps[2].agent.as_ref().expect("an agent step");
    for lane in ["chat", "wrong", "cut"] {
        let c = closed.runs.iter().find(|r| r.name == lane).unwrap();
        assert!(c.runs >= 1, "{lane}");
        assert_eq!(scores(c), scores(&row(lane)), "{lane}");
    }
    // Step index rows (pooled): all 24 first steps measured; a later step counts when it was
    // sent inside the window (unscheduled), as the records say.
    let mut measured: BTreeMap<u64, usize> = BTreeMap::new();
    for r in constant.values().flatten() {
        if r.scheduled_offset_ms.or(r.sent_offset_ms).unwrap() < 2000.0 {
            *measured.entry(step_of(r)).or_default() += 1;
        }
    }
    assert_eq!(measured[&0], 24);
    let rows: BTreeMap<u64, usize> = agent
        .steps
        .iter()
        .filter(|s| s.name == "pooled")
        .map(|s| (s.step, s.requests))
        .collect();
    assert_eq!(rows, measured);
    assert!(
        constant
            .values()
            .flatten()
            .all(|r| r.outcome == Outcome::Completed)
    );
}

/// An open loop stopped after its first committed request and resumed: the resumed sitting
/// rebuilds each release's run from the records on disk, so every later step continues the body
/// the first sitting sent (the calls with the provider's ids, one result each), every id is
/// its position's, and no body is sent twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_open_loop_rebuilds_the_same_runs_and_sends_nothing_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let (proxy, log) = start();
    let providers = format!(
        "  - {{key: chat, endpoint: '{proxy}/chat/v1', model: m, auth: {{scheme: none}}}}\n"
    );
    let section = "  seed: 5
  phases: {warmup_s: 0, measure: {duration_s: 1}, cooldown_s: 0}
  steps:
    - {model: constant, rate_per_s: 4, agent: {max_steps: 4}}
  workload:
    kind: synthetic
    input_tokens: {dist: fixed, tokens: 20}
    output_tokens: {dist: fixed, tokens: 16}";
    let spec = write_spec(tmp.path(), &providers, section, "");
    let dir = stopped_then_resumed(&spec).await;

    // Four releases (0, 250, 500, 750 ms), three steps each, every one sent once.
    let runs = slot_records(&dir, Some(0));
    assert_eq!(runs.len(), 4);
    let records: Vec<&TerminalRecord> = runs.values().flatten().collect();
    assert_eq!(records.len(), 12);
    let bodies = &log.lock().unwrap()["chat"];
    assert_eq!(bodies.len(), 12, "one body per record, none resent");
    // Each body, found by its run's question and length, is the one its position rebuilds.
    let body_of = |r: &TerminalRecord| {
        let k = u64::from(r.slot.unwrap());
        let length = 2 + 2 * step_of(r) as usize;
        let found: Vec<&Value> = bodies
            .iter()
            .filter(|b| b["messages"][1]["content"] == json!(item(k).question))
            .filter(|b| b["messages"].as_array().unwrap().len() == length)
            .collect();
        assert_eq!(found.len(), 1, "{}", r.item_id);
        found[0].clone()
    };
    let mut continued_across = 0;
    for ((_, slot), mine) in &runs {
        for (s, r) in mine.iter().enumerate() {
            let at = openbench_common::schedule::LoadPosition {
                phase: 0,
                lane: "chat".into(),
                lane_index: 0,
                slot: *slot,
                sequence: s as u64,
            };
            assert_eq!(
                r.request_id,
                openbench_common::schedule::load_request_id("load-test-v1", &at, 0)
            );
            assert_eq!(step_of(r), s as u64);
            if s == 0 {
                continue;
            }
            agent_support::assert_continues(&body_of(&mine[s - 1]), &body_of(r), &mine[s - 1]);
            if mine[s - 1].sitting != r.sitting {
                continued_across += 1;
            }
        }
        assert_eq!(mine[2].answer_text, item_answer(u64::from(*slot)));
    }
    eprintln!(
        "later steps sent by the resumed sitting on the first one's records: {continued_across}"
    );
    assert!(continued_across >= 1);
    assert_eq!(runs[&("chat".to_string(), 0)][2].answer_text, ANSWER_0);
}

/// The gold answer of item `k`, as the simulated agent gives it.
fn item_answer(k: u64) -> String {
    item(k).gold.to_string()
}

#[test]
fn the_arrival_phase_of_every_constant_release_is_measured() {
    // The 8 releases counted above are all inside the measured window.
    let section = LoadSection::from_yaml(SECTION, "s.yaml").unwrap();
    let steps = section.sweep_steps(&openbench_load::trace::Traces::new());
    let phases: Vec<Phase> = OpenSchedule::new(&steps[0], 5)
        .unwrap()
        .releases()
        .map(|r| r.phase)
        .collect();
    assert_eq!(phases, vec![Phase::Measured; 8]);
}

/// Gamma, ramp and trace steps start agent runs as constant and Poisson ones do (the one
/// open-loop path): release k's first step is scheduled at the arrival process's release k
/// (the trace's at its recorded offset × 0.5), asks item k (step s numbers its prompts from
/// s × 10¹², a multiple of 64), and its run of three steps ends the slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gamma_ramp_and_trace_steps_start_one_agent_run_per_release() {
    let tmp = tempfile::tempdir().unwrap();
    let name = copy_azure_sample(tmp.path());
    let agent = "agent: {max_steps: 4}";
    let section = format!(
        "seed: 11
phases: {{warmup_s: 0, measure: {{duration_s: 2}}, cooldown_s: 0}}
steps:
  - {{model: gamma, rate_per_s: 4, burstiness: 0.5, {agent}}}
  - {{model: ramp, arrivals: constant, from_rate_per_s: 0, to_rate_per_s: 4, ramp_s: 1, {agent}}}
  - {{model: trace, path: {name}, format: azure_csv, time_scale: 0.5, {agent}}}
workload:
  kind: synthetic
  input_tokens: {{dist: fixed, tokens: 20}}
  output_tokens: {{dist: fixed, tokens: 16}}"
    );
    let providers =
        "  - {key: p, endpoint: 'sim://plain?slots=64', model: m, auth: {scheme: none}}\n";
    let spec = write_spec(tmp.path(), providers, &indented(&section), "");
    let (dir, results) = run(&spec).await;
    let load = LoadSection::from_yaml(&section, "s.yaml").unwrap();
    let traces = openbench_load::trace::read_traces(&load, tmp.path(), 64).unwrap();
    let steps = load.sweep_steps(&traces);
    let metrics = compute(&results);
    for phase in 0..3u32 {
        let due: Vec<f64> = OpenSchedule::new(&steps[phase as usize], 11)
            .unwrap()
            .releases()
            .map(|r| r.offset_ns as f64 / 1e6)
            .collect();
        let runs = slot_records(&dir, Some(phase));
        assert!(due.len() >= 2, "phase {phase}: {due:?}");
        assert_eq!(runs.len(), due.len(), "phase {phase}");
        for ((_, slot), records) in &runs {
            let k = *slot as usize;
            let at = records[0].scheduled_offset_ms.unwrap();
            assert!(
                (at - due[k]).abs() < 1e-3,
                "phase {phase} release {k}: {at}"
            );
            assert_eq!(records[0].item_id, format!("agent-{:04}", k % 64));
            let steps: Vec<u64> = records.iter().map(step_of).collect();
            assert_eq!(steps, [0, 1, 2], "phase {phase} release {k}");
            assert!(records[1..].iter().all(|r| r.scheduled_offset_ms.is_none()));
        }
        let agent = metrics.steps[phase as usize].agent.as_ref().unwrap();
        let pooled = agent.runs.iter().find(|r| r.name == "pooled").unwrap();
        assert_eq!(
            scores(pooled),
            (Some(1.0), Some(1.0), Some(3.0), true, false),
            "phase {phase}"
        );
    }
}
