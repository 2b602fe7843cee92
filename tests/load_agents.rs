//! Agent runs in the load workflow (`agent:` on a `closed` step; docs/agents.md) against the
//! simulator over loopback, through a proxy that logs every request body it forwards.
//!
//! Each provider lane has one user; its run r asks agent item r (mod 64). Item 0 asks who
//! organised meeting mtg-0000 and who owns ticket tkt-0002; by the table's formulas (worked out
//! here by hand) meeting 0 is {title TOPICS[0] "budget review", room ROOMS[0] "Birch",
//! organizer NAMES[1] "Alan Turing"} and ticket 2 is {subject SUBJECTS[7] "mobile app crashes
//! on start", status STATUSES[2] "resolved", owner NAMES[(14 + 4) mod 16 = 2] "Grace Hopper"}.
//! The simulated agent calls lookup_meeting, then get_ticket, then answers from the results: a
//! 3-step run whose requests are checked message for message in each dialect.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent_support;
mod coordinator_support;
mod load_workflow_support;

use agent_support::{ANSWER_0, MEETING_0, TICKET_2, chat_call, lanes, start};
use load_workflow_support::{run, write_spec};
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_load::agent_family::{SYSTEM, item};
use openbench_load::report::compute::compute;
use serde_json::{Value, json};
use std::sync::Arc;

fn providers(proxy: &str) -> String {
    [
        ("chat", "m", "openai-chat"),
        ("resp", "m", "openai-responses"),
        ("anth", "m", "anthropic-messages"),
        ("wrong", "m+agent-wrong-tool", "openai-chat"),
        ("cut", "m+truncated-tool-call", "openai-chat"),
    ]
    .iter()
    .map(|(key, model, api)| {
        format!(
            "  - {{key: {key}, endpoint: '{proxy}/{key}/v1', model: '{model}', api: {api}, \
             auth: {{scheme: none}}}}\n"
        )
    })
    .collect()
}

const SECTION: &str = "  seed: 5
  phases: {warmup_s: 0, measure: {duration_s: 1.5}, cooldown_s: 0}
  steps:
    - {model: closed, concurrency: 1, agent: {max_steps: 4}}
  workload:
    kind: synthetic
    input_tokens: {dist: fixed, tokens: 20}
    output_tokens: {dist: fixed, tokens: 16}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_step_agent_run_sends_each_dialects_tool_loop_and_is_scored_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let (proxy, log) = start();
    let spec = write_spec(tmp.path(), &providers(&proxy), SECTION, "");
    let (dir, results) = run(&spec).await;
    let records = lanes(&dir);
    let log = log.lock().unwrap().clone();
    let question = item(0).question;
    let meeting_args = r#"{"id":"mtg-0000"}"#;
    let ticket_args = r#"{"id":"tkt-0002"}"#;

    // Every good lane: run 0 is three steps, the calls the script makes, then the answer.
    for lane in ["chat", "resp", "anth"] {
        let mine = &records[lane];
        assert!(mine.len() >= 3, "{lane}: {} records", mine.len());
        let keys: Vec<&str> = mine[..3].iter().map(|r| r.item_id.as_str()).collect();
        assert_eq!(
            keys,
            ["agent-0000", "agent-0000/step-1", "agent-0000/step-2"]
        );
        assert_eq!(mine[0].tool_calls.len(), 1);
        assert_eq!(mine[0].tool_calls[0].name, "lookup_meeting");
        assert_eq!(mine[0].tool_calls[0].arguments, meeting_args);
        assert_eq!(mine[1].tool_calls[0].name, "get_ticket");
        assert_eq!(mine[1].tool_calls[0].arguments, ticket_args);
        assert!(mine[2].tool_calls.is_empty());
        assert_eq!(mine[2].answer_text, ANSWER_0);
        let prefix = if lane == "anth" { "toolu_" } else { "call_" };
        assert!(mine[0].tool_calls[0].id.starts_with(prefix), "{lane}");
    }

    // The bodies, message for message, the call ids as each provider sent them.
    let id = |lane: &str, k: usize| records[lane][k].tool_calls[0].id.clone();
    let chat = &log["chat"];
    let (a, b) = (id("chat", 0), id("chat", 1));
    let opening = vec![
        json!({"role": "system", "content": SYSTEM}),
        json!({"role": "user", "content": question}),
    ];
    let mut step1 = opening.clone();
    step1.push(json!({"role": "assistant", "content": null,
        "tool_calls": [chat_call(&a, "lookup_meeting", meeting_args)]}));
    step1.push(json!({"role": "tool", "tool_call_id": a, "content": MEETING_0}));
    let mut step2 = step1.clone();
    step2.push(json!({"role": "assistant", "content": null,
        "tool_calls": [chat_call(&b, "get_ticket", ticket_args)]}));
    step2.push(json!({"role": "tool", "tool_call_id": b, "content": TICKET_2}));
    assert_eq!(chat[0]["messages"], Value::Array(opening));
    assert_eq!(chat[1]["messages"], Value::Array(step1));
    assert_eq!(chat[2]["messages"], Value::Array(step2));
    let names: Vec<&Value> = chat[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["function"]["name"])
        .collect();
    assert_eq!(names, [&json!("lookup_meeting"), &json!("get_ticket")]);
    assert_eq!(chat[0]["tool_choice"], json!("auto"));

    let resp = &log["resp"];
    let (a, b) = (id("resp", 0), id("resp", 1));
    assert_eq!(resp[2]["instructions"], json!(SYSTEM));
    assert_eq!(
        resp[2]["input"],
        json!([
            {"role": "user", "content": question},
            {"type": "function_call", "call_id": a, "name": "lookup_meeting",
             "arguments": meeting_args},
            {"type": "function_call_output", "call_id": a, "output": MEETING_0},
            {"type": "function_call", "call_id": b, "name": "get_ticket", "arguments": ticket_args},
            {"type": "function_call_output", "call_id": b, "output": TICKET_2},
        ])
    );
    assert_eq!(resp[0]["tool_choice"], json!("auto"));

    let anth = &log["anth"];
    let (a, b) = (id("anth", 0), id("anth", 1));
    assert_eq!(
        anth[2]["messages"],
        json!([
            {"role": "user", "content": question},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": a, "name": "lookup_meeting", "input": {"id": "mtg-0000"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": a, "content": MEETING_0}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": b, "name": "get_ticket", "input": {"id": "tkt-0002"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b, "content": TICKET_2}]},
        ])
    );
    assert_eq!(anth[0]["tool_choice"], json!({"type": "auto"}));

    // The wrong-tool agent: get_ticket with the meeting's id, then lookup_meeting with the
    // ticket's; both results are errors, so its answer is empty and wrong; the run still ends.
    let wrong = &records["wrong"];
    assert_eq!(wrong[0].tool_calls[0].name, "get_ticket");
    assert_eq!(wrong[0].tool_calls[0].arguments, meeting_args);
    assert_eq!(wrong[1].tool_calls[0].name, "lookup_meeting");
    assert_eq!(wrong[2].answer_text, r#"{"organizer":"","owner":""}"#);
    assert_eq!(wrong[3].item_id, "agent-0001");
    assert_eq!(
        log["wrong"][1]["messages"][3]["content"],
        json!(r#"{"error":"no ticket with id \"mtg-0000\""}"#)
    );

    // A truncated tool call ends its run at once: no request is ever built on it.
    let cut = &records["cut"];
    assert!(cut.len() >= 2);
    for (k, r) in cut.iter().enumerate() {
        assert_eq!(
            r.item_id,
            format!("agent-{k:04}"),
            "no later step after a broken call"
        );
        assert_eq!(r.outcome, Outcome::Completed);
        assert!(r.tool_call_error.is_some());
    }

    // The report: every ended run of a good lane answered right with the right calls in 3 model
    // calls; the wrong-tool lane's runs answered, all wrong on both counts; the cut lane's failed.
    let metrics = compute(&results);
    let agent = metrics.steps[0].agent.as_ref().expect("an agent step");
    let row = |name: &str| agent.runs.iter().find(|r| r.name == name).unwrap().clone();
    for lane in ["chat", "resp", "anth"] {
        let r = row(lane);
        assert!(r.runs >= 1, "{lane}");
        assert_eq!(
            (r.answered, r.step_limit, r.failed),
            (r.runs, 0, 0),
            "{lane}"
        );
        assert_eq!(r.model_calls_mean, Some(3.0), "{lane}");
        assert_eq!(r.answer_success, Some(1.0), "{lane}");
        assert_eq!(r.tool_call_success, Some(1.0), "{lane}");
    }
    // Time to final answer, by hand from the records of the chat lane's answered runs: the last
    // request's send offset plus its stream end, less the first request's send offset.
    let chat = &records["chat"];
    let mut times = Vec::new();
    let mut first = None;
    for r in chat {
        if !r.item_id.contains("/step-") {
            first = r.sent_offset_ms;
        }
        if r.tool_calls.is_empty() && r.outcome == Outcome::Completed {
            times.push(r.sent_offset_ms.unwrap() + r.stream_end_ms.unwrap() - first.unwrap());
        }
    }
    let by_hand = coordinator_support::nearest_rank_by_hand(&times, 0.5);
    let reported = row("chat").time_to_answer_p50_ms.unwrap();
    assert!((reported - by_hand).abs() < 1e-9, "{reported} vs {by_hand}");
    // Three calls of at least the simulator's 40 ms TTFA each.
    assert!(by_hand >= 120.0, "{by_hand}");
    let w = row("wrong");
    assert!(w.runs >= 1);
    assert_eq!(w.answered, w.runs);
    assert_eq!(
        (w.answer_success, w.tool_call_success),
        (Some(0.0), Some(0.0))
    );
    let c = row("cut");
    assert_eq!(
        (c.failed, c.answered, c.model_calls_mean),
        (c.runs, 0, Some(1.0))
    );
    assert_eq!(c.tool_call_success, Some(0.0));
    // Step index rows: steps 0 and 1 made calls, step 2 answered (good and wrong lanes).
    let s2 = agent
        .steps
        .iter()
        .find(|s| s.step == 2 && s.name == "pooled")
        .unwrap();
    assert_eq!(s2.tool_calls, 0);
    // The figures reach report.md, report.html and load-metrics.json.
    openbench_load::report::write_reports(&dir, &results).unwrap();
    for name in ["report.md", "report.html"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(
            text.contains("Agent steps") && text.contains("Agent runs"),
            "{name}"
        );
    }
    // The chart of first output per agent step index draws the "Agent steps" table's lane rows:
    // every lane's steps 0..=2 (the cut lane's run ends at step 0), p50 and p99 as printed.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let table: Vec<String> = table_rows(&html, "Agent steps")
        .iter()
        .filter(|cells| cells[1] != "pooled")
        .map(|cells| {
            [&cells[1], &cells[2], &cells[6], &cells[7]]
                .map(|c| c.as_str())
                .join("|")
        })
        .collect();
    let (_, rest) = html
        .split_once("class=\"agent-steps\" data-points=\"")
        .unwrap();
    let (drawn, _) = rest.split_once('"').unwrap();
    let drawn: Vec<&str> = drawn.split(';').collect();
    assert_eq!(drawn, table);
    let indices = |lane: &str| {
        drawn
            .iter()
            .filter(|p| p.starts_with(&format!("{lane}|")))
            .map(|p| p.split('|').nth(1).unwrap())
            .collect::<Vec<_>>()
    };
    for lane in ["chat", "resp", "anth", "wrong"] {
        assert_eq!(indices(lane), ["0", "1", "2"], "{lane}");
    }
    assert_eq!(indices("cut"), ["0"]);
    // And the table prints the view's numbers (the chat lane's step 0, by its row).
    let chat0 = agent
        .steps
        .iter()
        .find(|s| s.step == 0 && s.name == "chat")
        .unwrap();
    // (Values under 1,000 ms print with one decimal and no grouping.)
    let (p50, p99) = (chat0.ttfo_p50_ms.unwrap(), chat0.ttfo_p99_ms.unwrap());
    assert!(p99 < 1000.0, "{p99}");
    assert_eq!(drawn[0], format!("chat|0|{p50:.1}|{p99:.1}"));
    assert!(chat0.ttfo_p50_ms.unwrap() >= 40.0, "{chat0:?}");
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.join("load-metrics.json")).unwrap()).unwrap();
    let pooled = json["steps"][0]["agent"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pooled")
        .unwrap()
        .clone();
    assert_eq!(pooled["runs"], json!(agent.runs.last().unwrap().runs));
    assert_eq!(pooled["name"], json!("pooled"));
}

/// The cells of every body row of the table under heading `title` in `html` (the text between
/// each cell's tags).
fn table_rows(html: &str, title: &str) -> Vec<Vec<String>> {
    let (_, section) = html.split_once(&format!("<h2>{title}</h2>")).unwrap();
    let (section, _) = section.split_once("</section>").unwrap();
    let (_, body) = section.split_once("<tbody>").unwrap();
    let (body, _) = body.split_once("</tbody>").unwrap();
    body.split("</tr>")
        .filter(|row| row.contains("<tr>"))
        .map(|row| {
            row.split("</t")
                .filter_map(|cell| cell.rsplit_once('>').map(|(_, text)| text.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn an_agent_step_with_a_legacy_completions_provider_is_refused_at_init_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let providers = "  - {key: legacy, endpoint: 'sim://plain', model: m, api: openai-completions, \
                     auth: {scheme: none}}\n  - {key: chat, endpoint: 'sim://plain', model: m, \
                     auth: {scheme: none}}\n";
    let spec = write_spec(tmp.path(), providers, SECTION, "");
    let err = openbench_coordinator::prepare_inputs(
        &spec,
        Arc::new(openbench_load::run::LoadWorkflow),
        "c",
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        err.contains(
            "load.steps[0].agent: provider legacy speaks openai-completions, which has no tools"
        ),
        "{err}"
    );
    assert!(!err.contains("provider chat"), "{err}");
}

/// A run stopped after its first committed request and resumed: the resumed sitting rebuilds
/// the user's run from the records on disk, so every request it sends continues the chain the
/// first sitting began (the earlier messages verbatim, then the model's calls with the ids the
/// provider gave them and one result per call), and every id is the one the position names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_sitting_rebuilds_the_same_runs_ids_and_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let (proxy, log) = start();
    let providers = format!(
        "  - {{key: chat, endpoint: '{proxy}/chat/v1', model: m, auth: {{scheme: none}}}}\n"
    );
    let spec = write_spec(tmp.path(), &providers, SECTION, "");
    let dir = load_workflow_support::stopped_then_resumed(&spec).await;

    let records = &lanes(&dir)["chat"];
    let bodies = &log.lock().unwrap()["chat"];
    assert_eq!(
        bodies.len(),
        records.len(),
        "one body per record, none resent"
    );
    let sittings: Vec<u32> = records.iter().map(|r| r.sitting.unwrap()).collect();
    assert!(sittings.windows(2).any(|w| w[0] != w[1]), "{sittings:?}");
    let mut continued_across = 0;
    for (k, r) in records.iter().enumerate() {
        let at = openbench_common::schedule::LoadPosition {
            phase: 0,
            lane: "chat".into(),
            lane_index: 0,
            slot: 0,
            sequence: k as u64,
        };
        assert_eq!(r.sequence, Some(k as u64));
        assert_eq!(
            r.request_id,
            openbench_common::schedule::load_request_id("load-test-v1", &at, 0)
        );
        if !r.item_id.contains("/step-") {
            assert_eq!(bodies[k]["messages"].as_array().unwrap().len(), 2);
            continue;
        }
        agent_support::assert_continues(&bodies[k - 1], &bodies[k], &records[k - 1]);
        if records[k - 1].sitting != r.sitting {
            continued_across += 1;
        }
    }
    eprintln!(
        "later steps sent by the resumed sitting on the first one's records: {continued_across}"
    );
    // Stopped after the first commit of a 3-step run: the resumed sitting goes on inside it.
    assert!(continued_across >= 1);
    // Run 0 of the resumed chain still answers exactly.
    assert_eq!(records[2].answer_text, ANSWER_0);
}

/// Many users, no barrier between them: a user thinking 600 ms before a later step holds no
/// other user, whose requests go on being sent inside that think time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thinking_user_does_not_hold_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let section = SECTION.replace("concurrency: 1", "concurrency: 4").replace(
        "agent: {max_steps: 4}",
        "agent: {max_steps: 4, think_ms: {dist: list, values: [1, 600]}}",
    );
    let spec = write_spec(
        tmp.path(),
        "  - {key: p, endpoint: 'sim://plain', model: m, auth: {scheme: none}}\n",
        &section,
        "",
    );
    let (dir, _) = run(&spec).await;
    let records: Vec<TerminalRecord> = lanes(&dir).remove("p").unwrap();
    let end = |r: &TerminalRecord| r.sent_offset_ms.unwrap() + r.stream_end_ms.unwrap_or(0.0);
    let mut overlapped = 0;
    let mut thought = 0;
    for r in records.iter().filter(|r| r.think_ms == Some(600.0)) {
        let slot = r.slot;
        let previous = records
            .iter()
            .find(|p| p.slot == slot && p.sequence == r.sequence.map(|s| s - 1))
            .unwrap();
        let (from, to) = (end(previous), r.sent_offset_ms.unwrap());
        // The think time is waited (after the previous step's end, as the coordinator saw it).
        assert!(
            to >= from + 600.0,
            "{} sent {to} after {from}",
            r.request_id
        );
        thought += 1;
        overlapped += records
            .iter()
            .filter(|o| o.slot != slot)
            .filter(|o| o.sent_offset_ms.is_some_and(|s| s > from && s < to))
            .count();
    }
    eprintln!("{thought} thinking steps; other users' sends inside them: {overlapped}");
    assert!(thought >= 1);
    assert!(overlapped >= 1);
}
