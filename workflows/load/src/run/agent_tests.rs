//! Agent runs as the runner asks for them: each step carries the earlier messages, the model's
//! calls and the harness's results; a run ends at its answer, its step limit or a failed step.

use super::*;
use crate::run::workload::Workload;
use crate::workload::synthetic::Synthetic;
use openbench_common::tool::ToolCallError;
use std::sync::Arc;

/// Closed step 0 of 2 users, agent runs of at most 3 steps, think time fixed at 250 ms; seed 7.
fn source(max_steps: u32) -> AgentSource {
    let workload = Arc::new(Workload::Synthetic(Synthetic {
        input_tokens: LengthDist::Fixed { tokens: 8 },
        output_tokens: LengthDist::Fixed { tokens: 4 },
        shared_prefix: None,
        seed: 7,
    }));
    let base = StepSource::closed(0, 2, vec![0], workload).with_lanes(vec![0], vec![false]);
    let agent = Agent {
        max_steps,
        think_ms: Some(LengthDist::Fixed { tokens: 250 }),
    };
    AgentSource::new(base, agent, 7, 0)
}

fn at(slot: u32, sequence: u64) -> LoadPosition {
    LoadPosition {
        phase: 0,
        lane: "p".into(),
        lane_index: 0,
        slot,
        sequence,
    }
}

fn send(next: Next) -> (RequestContent, f64) {
    match next {
        Next::Send { content, think_ms } => (content, think_ms),
        Next::Stop => panic!("the slot stopped"),
    }
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

/// The turn `request` left: completed with `calls` (and `text`).
fn turn(request: RequestContent, text: &str, calls: Vec<ToolCall>) -> Turn {
    let mut record = TerminalRecord::new("2026-12-06T00:00:00Z".into(), Outcome::Completed);
    record.answer_text = text.into();
    record.tool_calls = calls;
    Turn { request, record }
}

#[test]
fn a_three_step_run_carries_its_calls_and_the_harness_results_then_the_next_run_opens() {
    let source = source(3);
    // Slot 1 of 2 users: prompt index 0 × 2 + 1 = 1 → item 1: meeting mtg-0001, ticket
    // (5 + 2) = tkt-0007.
    let (first, wait) = send(source.next(&at(1, 0), &[]));
    assert_eq!(wait, 0.0);
    assert_eq!(first.item_key, "agent-0001");
    assert_eq!(first.group, "agent");
    assert_eq!(first.messages.len(), 2);
    assert!(first.messages[1].content.contains("meeting mtg-0001"));
    assert!(first.messages[1].content.contains("ticket tkt-0007"));
    assert_eq!(
        first
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["lookup_meeting", "get_ticket"]
    );

    let c1 = call("call_a", "lookup_meeting", r#"{"id":"mtg-0001"}"#);
    let history = vec![turn(first.clone(), "", vec![c1.clone()])];
    let (second, think) = send(source.next(&at(1, 1), &history));
    assert_eq!(think, 250.0);
    assert_eq!(second.item_key, "agent-0001/step-1");
    // Meeting 1: title TOPICS[1], room ROOMS[3], organizer NAMES[6].
    let meeting = r#"{"id":"mtg-0001","title":"release planning","room":"Hazel","organizer":"Frances Allen"}"#;
    let mut expected = first.messages.clone();
    expected.push(ChatMessage::assistant_calls("", vec![c1.clone()]));
    expected.push(ChatMessage::tool_result("call_a", meeting));
    assert_eq!(second.messages, expected);

    // The provider sent no id: the harness names the call `call_{step}_{i}`.
    let c2 = call("", "get_ticket", r#"{"id":"tkt-0007"}"#);
    let mut history = history;
    history.push(turn(second.clone(), "Now the ticket.", vec![c2]));
    let (third, _) = send(source.next(&at(1, 2), &history));
    assert_eq!(third.item_key, "agent-0001/step-2");
    // Ticket 7: subject SUBJECTS[22 mod 8 = 6], status STATUSES[1], owner NAMES[53 mod 16 = 5].
    let ticket = r#"{"id":"tkt-0007","subject":"API rate limit too low","status":"pending","owner":"Donald Knuth"}"#;
    let mut expected = second.messages.clone();
    expected.push(ChatMessage::assistant_calls(
        "Now the ticket.",
        vec![call("call_1_0", "get_ticket", r#"{"id":"tkt-0007"}"#)],
    ));
    expected.push(ChatMessage::tool_result("call_1_0", ticket));
    assert_eq!(third.messages, expected);
    // The same question again: the same answer (a resume rebuilds it).
    assert_eq!(send(source.next(&at(1, 2), &history)).0, third);

    // The final answer ends the run; the user opens run 1 at once: prompt index 1 × 2 + 1 = 3.
    history.push(turn(
        third,
        r#"{"organizer":"Frances Allen","owner":"Donald Knuth"}"#,
        vec![],
    ));
    assert_eq!(source.standing(&history), Standing { run: 1, step: 0 });
    let (next, wait) = send(source.next(&at(1, 3), &history));
    assert_eq!((next.item_key.as_str(), wait), ("agent-0003", 0.0));
}

#[test]
fn a_failed_step_a_broken_call_or_the_step_limit_ends_the_run() {
    let source = source(2);
    let (first, _) = send(source.next(&at(0, 0), &[]));
    let c = call("x", "lookup_meeting", r#"{"id":"mtg-0000"}"#);

    let mut failed = turn(first.clone(), "", vec![c.clone()]);
    failed.record.outcome = Outcome::HttpError;
    let mut malformed = turn(
        first.clone(),
        "",
        vec![call("x", "lookup_meeting", "{'id'")],
    );
    malformed.record.tool_call_error = Some(ToolCallError::MalformedToolCall);
    for ended in [failed, malformed] {
        assert_eq!(
            source.standing(std::slice::from_ref(&ended)),
            Standing { run: 1, step: 0 }
        );
        let (next, _) = send(source.next(&at(0, 1), &[ended]));
        // Not a second step built on it: run 1's opening (prompt index 1 × 2 + 0 = 2).
        assert_eq!(next.item_key, "agent-0002");
        assert_eq!(next.messages.len(), 2);
    }

    // max_steps 2: a second step that calls a tool again ends the run there.
    let second = turn(first.clone(), "", vec![c.clone()]);
    let again = turn(first, "", vec![c]);
    assert_eq!(
        source.standing(std::slice::from_ref(&second)),
        Standing { run: 0, step: 1 }
    );
    assert_eq!(
        source.standing(&[second, again]),
        Standing { run: 1, step: 0 }
    );
}

#[test]
fn replay_names_each_records_run_step_and_end() {
    let source = source(3);
    let record = |sequence: u64, calls: usize, outcome: Outcome| {
        let mut r = TerminalRecord::new(String::new(), outcome);
        r.request_id = format!("req-{sequence}");
        r.lane = "p".into();
        r.slot = Some(0);
        r.sequence = Some(sequence);
        r.tool_calls = (0..calls).map(|_| call("c", "get_ticket", "{}")).collect();
        r
    };
    let records = [
        record(2, 0, Outcome::Completed),
        record(0, 1, Outcome::Completed),
        record(1, 1, Outcome::Completed),
        record(3, 1, Outcome::HttpError),
        record(4, 0, Outcome::Completed),
    ];
    let refs: Vec<&TerminalRecord> = records.iter().collect();
    let got = source.replay(0, |l| (l == "p").then_some(0), &refs);
    let of = |id: &str| {
        let s = &got[id];
        (s.run, s.step, s.item, s.end)
    };
    // Slot 0 of 2 users: run r asks prompt index 2r.
    assert_eq!(of("req-0"), (0, 0, 0, StepEnd::Continues));
    assert_eq!(of("req-1"), (0, 1, 0, StepEnd::Continues));
    assert_eq!(of("req-2"), (0, 2, 0, StepEnd::Answered));
    assert_eq!(of("req-3"), (1, 0, 2, StepEnd::Failed));
    assert_eq!(of("req-4"), (2, 0, 4, StepEnd::Answered));
}

/// Open step 1 on 2 regions (the lane in region 1), agent runs of at most 3 steps, think 250 ms.
fn open_source() -> AgentSource {
    let workload = Arc::new(Workload::Synthetic(Synthetic {
        input_tokens: LengthDist::Fixed { tokens: 8 },
        output_tokens: LengthDist::Fixed { tokens: 4 },
        shared_prefix: None,
        seed: 7,
    }));
    let base = StepSource::open(1, 2, workload).with_lanes(vec![1], vec![false]);
    let agent = Agent {
        max_steps: 3,
        think_ms: Some(LengthDist::Fixed { tokens: 250 }),
    };
    AgentSource::new(base, agent, 7, 1).open()
}

#[test]
fn an_open_loops_release_runs_one_agent_run_on_its_slot_then_stops() {
    let source = open_source();
    // Release 3 (slot 3) of the region-1 lane: prompt index 10¹² + 3 × 2 + 1 → item 7 (mod 64),
    // sent at the release (no wait), whatever the slot's sequence.
    let (first, wait) = send(source.next(&at(3, 0), &[]));
    assert_eq!((first.item_key.as_str(), wait), ("agent-0007", 0.0));
    assert_eq!(source.item_index(&at(3, 5), 0), 1_000_000_000_007);
    let c = call("call_a", "lookup_meeting", r#"{"id":"mtg-0007"}"#);
    let step0 = turn(first.clone(), "", vec![c]);
    let (second, think) = send(source.next(&at(3, 1), std::slice::from_ref(&step0)));
    assert_eq!(
        (second.item_key.as_str(), think),
        ("agent-0007/step-1", 250.0)
    );
    // The answer ends the run, and the slot with it (no next run).
    let answer = turn(second, r#"{"organizer":"x","owner":"y"}"#, Vec::new());
    assert_eq!(source.next(&at(3, 2), &[step0.clone(), answer]), Next::Stop);
    // A failed first step ends it too.
    let mut failed = step0;
    failed.record.outcome = Outcome::HttpError;
    assert_eq!(source.next(&at(3, 1), &[failed]), Next::Stop);
}
