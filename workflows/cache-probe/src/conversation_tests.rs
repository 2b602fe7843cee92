//! The probe conversation's turns and its figures, by hand.

use super::*;

fn section(turns: u32) -> CacheProbeSection {
    CacheProbeSection {
        prefix_tokens: 16,
        gaps_s: vec![1.0],
        repeats: 1,
        spacing_s: 1.0,
        pair_offset_s: 0.5,
        max_output_tokens: 8,
        bootstrap_seed: 0,
        conversation_turns: turns,
        conversation_think_s: 1.5,
    }
}

fn at() -> LoadPosition {
    LoadPosition {
        phase: 1,
        lane: "zai".into(),
        lane_index: 0,
        slot: 0,
        sequence: 0,
    }
}

/// A record of `turn` with `outcome`, its answer and usage (prompt, cached) when given.
fn record(turn: u64, outcome: &str, usage: Option<(u64, Option<u64>)>) -> TerminalRecord {
    let mut value = serde_json::json!({
        "schema_version": 1, "request_id": format!("r{turn}"), "provider": "zai",
        "region": "local", "lane": "zai", "item_id": item_key(turn),
        "started_at": "2026-01-01T00:00:00Z", "outcome": outcome,
        "answer_text": format!("{{\"word\": \"w{turn}\"}}"), "reasoning_text": "",
        "ttfa_ms": 10.0 + turn as f64
    });
    if let Some((prompt, cached)) = usage {
        let mut u = serde_json::json!({"prompt_tokens": prompt, "completion_tokens": 5});
        if let Some(cached) = cached {
            u["cached_tokens"] = cached.into();
        }
        value["usage"] = u;
    }
    serde_json::from_value(value).unwrap()
}

fn send(next: Next) -> (RequestContent, f64) {
    match next {
        Next::Send { content, think_ms } => (content, think_ms),
        Next::Stop => panic!("stopped"),
    }
}

#[test]
fn each_turn_repeats_the_last_verbatim_with_its_answer_until_the_last_or_a_failure() {
    let probe = ConversationProbe::new(&section(3), "alpha bravo charlie delta echo", "run-1");
    let (first, think) = send(probe.next(&at(), &[]));
    assert_eq!(think, 0.0);
    assert_eq!(first.item_key, "conversation/turn-0");
    // 16 tokens × 4 = 64 characters at least, from word 3 (delta) on, then the question.
    let text = &first.messages[0].content;
    assert!(
        text.starts_with("[run-1 zai c] delta echo alpha bravo"),
        "{text}"
    );
    assert!(
        text.ends_with("<word number 1 of the text above>}."),
        "{text}"
    );
    let done = |request: &RequestContent, turn: u64| Turn {
        request: request.clone(),
        record: record(turn, "completed", None),
    };
    let mut history = vec![done(&first, 0)];
    let (second, think) = send(probe.next(&at(), &history));
    assert_eq!(think, 1500.0);
    assert_eq!(second.item_key, "conversation/turn-1");
    assert_eq!(second.messages[..1], first.messages[..]);
    assert_eq!(second.messages[1].role, Role::Assistant);
    assert_eq!(second.messages[1].content, "{\"word\": \"w0\"}");
    assert_eq!(
        second.messages[2].content,
        "Reply with the JSON object {\"word\": <word number 2 of the text above>}."
    );
    history.push(done(&second, 1));
    let (third, _) = send(probe.next(&at(), &history));
    assert_eq!(third.messages.len(), 5);
    history.push(done(&third, 2));
    // Three turns asked: the conversation ends.
    assert_eq!(probe.next(&at(), &history), Next::Stop);
    // A failed turn ends it too.
    let failed = vec![Turn {
        request: first,
        record: record(0, "http_error", None),
    }];
    assert_eq!(probe.next(&at(), &failed), Next::Stop);
}

#[test]
fn reuse_is_cached_over_the_previous_prompt_and_half_keeps_the_cache() {
    let figures = |cached: [Option<u64>; 3]| {
        let records = [
            record(2, "completed", Some((1040, cached[2]))),
            record(0, "completed", Some((1000, cached[0]))),
            record(1, "completed", Some((1020, cached[1]))),
        ];
        let refs: Vec<&TerminalRecord> = records.iter().collect();
        conversation_figures(&refs).unwrap()
    };
    // Kept: turn 1 finds 960 of turn 0's 1,000 tokens, turn 2 1,020 of turn 1's 1,020.
    let kept = figures([Some(0), Some(960), Some(1020)]);
    let reuse: Vec<Option<f64>> = kept.turns.iter().map(|t| t.reuse).collect();
    assert_eq!(reuse, [None, Some(0.96), Some(1.0)]);
    assert_eq!(kept.turns[2].previous_prompt_tokens, Some(1020));
    assert_eq!(kept.stays_on_cache, Some(true));
    // No cache: nothing reused.
    assert_eq!(figures([Some(0); 3]).stays_on_cache, Some(false));
    // A cache too small for the conversation: 256 of 1,000, then 256 of 1,020.
    let small = figures([Some(0), Some(256), Some(256)]);
    assert_eq!(small.turns[1].reuse, Some(0.256));
    assert_eq!(small.stays_on_cache, Some(false));
    // Half exactly is kept; one later turn under half is not.
    assert_eq!(
        figures([None, Some(500), Some(1020)]).stays_on_cache,
        Some(true)
    );
    assert_eq!(
        figures([None, Some(960), Some(509)]).stays_on_cache,
        Some(false)
    );
    // No cached counts: unknown.
    assert_eq!(figures([None; 3]).stays_on_cache, None);
    let md = markdown(&small);
    assert!(md.contains("does not stay on its cache"), "{md}");
    assert!(
        md.contains("| 1 | 1020 | 256 | 1000 | 26% | 11.0 |"),
        "{md}"
    );
    // Other records are not the conversation's.
    let trial = record(0, "completed", None);
    let mut other = trial.clone();
    other.item_id = "t0-probe".into();
    assert_eq!(conversation_figures(&[&other]), None);
}
