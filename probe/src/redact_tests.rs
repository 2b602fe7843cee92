#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

/// The sentinel: random, so any 6-character piece of it in a text is an echo, not a chance.
const SENTINEL: &str = "sk-sentinel-0123456789abcdef";
/// A 23-character key, the length of the attack (issue 36, class 4).
const KEY23: &str = "Zq7Wm2Xr9Tb4Kp8Hy3Nd6Vf";

fn redactor(key: &str) -> Redactor {
    Redactor::new(&Credentials::from_pairs([("K", key)])).unwrap()
}

/// Every 6-character piece of `key` (plain and reversed) found in `text`.
fn pieces(key: &str, text: &str) -> Vec<String> {
    let reversed: String = key.chars().rev().collect();
    [key, reversed.as_str()]
        .iter()
        .flat_map(|k| (0..=k.len() - 6).map(move |i| k[i..i + 6].to_string()))
        .filter(|p| text.contains(p.as_str()))
        .collect()
}

/// An answer event carrying `text`.
fn answer_event(text: &str) -> StreamEvent {
    StreamEvent {
        request_id: String::new(),
        index: 0,
        offset_ms: 0.0,
        classification: openbench_common::record::Classification::Answer,
        event: None,
        reasoning: String::new(),
        answer: text.to_string(),
        finish_reason: None,
    }
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn replaces_every_occurrence_with_one_marker_each() {
    let c = Credentials::from_pairs([("A", "sk-abc"), ("B", "sk-abcdef")]);
    let r = Redactor::new(&c).unwrap();
    assert_eq!(
        r.redact("key sk-abcdef and sk-abc, sk-abc"),
        "key [redacted] and [redacted], [redacted]"
    );
    let mut v = serde_json::json!({"sk-abc": ["x sk-abc", 1]});
    r.redact_json(&mut v);
    assert_eq!(v, serde_json::json!({"[redacted]": ["x [redacted]", 1]}));
}

#[test]
fn every_six_character_piece_is_redacted_and_five_are_kept() {
    let r = redactor(KEY23);
    for start in 0..=KEY23.len() - 6 {
        let piece = &KEY23[start..start + 6];
        assert_eq!(
            r.redact(&format!("id {piece}.")),
            "id [redacted].",
            "{piece}"
        );
    }
    // Five characters are below the rule (and would redact innocent text).
    assert_eq!(r.redact("id Zq7Wm."), "id Zq7Wm.");
    // The attack: the first 11 characters as a finish reason or request id.
    assert_eq!(r.redact(&KEY23[..11]), "[redacted]");
}

#[test]
fn reversed_hex_and_base64_forms_are_redacted() {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};
    let r = redactor(KEY23);
    let reversed: String = KEY23.chars().rev().collect();
    assert_eq!(r.redact(&format!("x {reversed} y")), "x [redacted] y");
    assert_eq!(
        r.redact(&format!("x {} y", &reversed[3..10])),
        "x [redacted] y"
    );
    // Hex of the key in both cases, and of a 6-character piece of it.
    assert_eq!(r.redact(&format!("x {} y", hex(KEY23))), "x [redacted] y");
    let upper = hex(KEY23).to_uppercase();
    assert_eq!(r.redact(&format!("x {upper} y")), "x [redacted] y");
    assert_eq!(
        r.redact(&format!("x{}y", hex(&KEY23[5..11]))),
        "x[redacted]y"
    );
    // Base64 of the key behind 0, 1 and 2 bytes, both alphabets: at most the mixed first group
    // and the padded last group are kept.
    for prefix in ["", ":", "::", "Bearer "] {
        for engine in [&STANDARD, &URL_SAFE] {
            let encoded = engine.encode(format!("{prefix}{KEY23}"));
            let out = r.redact(&encoded);
            let kept = out.replace(REDACTED, "");
            assert!(out.contains(REDACTED), "{encoded} -> {out}");
            assert!(kept.len() <= prefix.len() / 3 * 4 + 8, "{encoded} -> {out}");
        }
    }
}

#[test]
fn a_key_broken_by_whitespace_is_found_and_its_whitespace_goes_with_it() {
    let r = redactor(KEY23);
    let spaced = format!(
        "a {} {}\n{} {} b",
        &KEY23[..5],
        &KEY23[5..10],
        &KEY23[10..15],
        &KEY23[15..]
    );
    assert_eq!(r.redact(&spaced), "a [redacted] b");
}

#[test]
fn a_key_split_across_parts_leaves_no_fragment_in_any_part() {
    let r = redactor(SENTINEL);
    let (mut a, mut b, mut c) = (
        "key: sk-se".to_string(),
        "ntin".to_string(),
        "el-0123456789abcdef, done".to_string(),
    );
    r.redact_across(&mut [&mut a, &mut b, &mut c]);
    assert_eq!(
        [a.as_str(), b.as_str(), c.as_str()],
        ["key: [redacted]", "[redacted]", "[redacted], done"]
    );
    // Halves separated by whitespace at a part's edge: both found.
    let (mut reasoning, mut answer) = (
        format!("the key {} ", &KEY23[..3]),
        format!(" {} ok", &KEY23[3..8]),
    );
    redactor(KEY23).redact_across(&mut [&mut reasoning, &mut answer]);
    assert_eq!(
        [reasoning.as_str(), answer.as_str()],
        ["the key [redacted]", "[redacted] ok"]
    );
}

#[test]
fn identity_fields_lose_whole_keys_only_and_upstream_fields_every_piece() {
    let r = redactor("sk-remote-only-51d0c3e2");
    let mut execution = Execution {
        record: openbench_common::record::TerminalRecord::new(
            String::new(),
            openbench_common::record::Outcome::Completed,
        ),
        events: vec![answer_event("hi")],
    };
    execution.record.answer_text = "hi".into();
    execution.record.provider = "remote-only".into();
    execution.record.lane = "lane sk-remote-only-51d0c3e2".into();
    execution.record.finish_reason = Some("remote-only".into());
    r.redact_execution(&mut execution);
    let rec = &execution.record;
    assert_eq!(rec.provider, "remote-only");
    assert_eq!(rec.lane, "lane [redacted]");
    assert_eq!(rec.finish_reason.as_deref(), Some("[redacted]"));
}

#[test]
fn a_piece_across_the_end_of_the_reasoning_and_the_start_of_the_answer_is_found() {
    // Arrival order: the answer's first part, then the reasoning's last: only the texts side
    // by side (reasoning, then answer) hold the piece.
    let r = redactor(KEY23);
    let mut later = answer_event("");
    later.reasoning = KEY23[..3].to_string();
    let mut execution = Execution {
        record: openbench_common::record::TerminalRecord::new(
            String::new(),
            openbench_common::record::Outcome::Completed,
        ),
        events: vec![answer_event(&KEY23[3..8]), later],
    };
    execution.record.answer_text = KEY23[3..8].to_string();
    execution.record.reasoning_text = KEY23[..3].to_string();
    r.redact_execution(&mut execution);
    let rec = &execution.record;
    assert_eq!(
        (rec.reasoning_text.as_str(), rec.answer_text.as_str()),
        (REDACTED, REDACTED)
    );
}

#[test]
fn a_text_cut_at_every_offset_keeps_no_six_character_piece_of_a_key() {
    let r = redactor(SENTINEL);
    let body = format!("{{\"error\": \"key {SENTINEL} is invalid\"}}");
    for cut in 0..=body.len() {
        let out = r.snippet(&body[..cut]);
        assert_eq!(
            pieces(SENTINEL, &out),
            Vec::<String>::new(),
            "cut at {cut}: {out}"
        );
    }
    // The snippet's own cut: the key across character ERROR_SNIPPET_CHARS at every offset.
    for pad in ERROR_SNIPPET_CHARS - SENTINEL.len()..=ERROR_SNIPPET_CHARS + 1 {
        let out = r.snippet(&format!("{}{SENTINEL}{}", "a".repeat(pad), "z".repeat(600)));
        assert_eq!(
            pieces(SENTINEL, &out),
            Vec::<String>::new(),
            "pad {pad}: {out}"
        );
        assert!(out.ends_with('…'), "pad {pad}");
    }
}

#[test]
fn an_error_continuing_the_answer_is_redacted_over_both() {
    let r = redactor(KEY23);
    let events = vec![answer_event(&format!("key {}", &KEY23[..4]))];
    let before = r.response_tail(&events);
    assert_eq!(
        r.snippet_after(&before, &format!("{} revoked", &KEY23[4..8])),
        "[redacted] revoked"
    );
}

/// Not a timed test: prints what redaction costs per streamed chunk, for docs/performance.md.
/// `cargo test -p openbench-probe --lib redaction_cost -- --ignored --nocapture`
#[test]
#[ignore = "a measurement, not a check"]
fn redaction_cost_per_chunk() {
    let r = redactor("sk-proj-Zq7Wm2Xr9Tb4Kp8Hy3Nd6VfLc5Gs1Jt0Qe7Ua2Ox4Ri9Pm3Wn8Yb6");
    let chunk = "The quick brown fox jumps over the lazy dog, ";
    let rounds = 20_000u32;
    let mut text = chunk.to_string();
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        r.redact_in_place(&mut text);
    }
    let per_chunk = start.elapsed() / rounds;
    let events: Vec<StreamEvent> = (0..1000).map(|_| answer_event(chunk)).collect();
    let mut execution = Execution {
        record: openbench_common::record::TerminalRecord::new(
            String::new(),
            openbench_common::record::Outcome::Completed,
        ),
        events,
    };
    execution.record.answer_text = chunk.repeat(1000);
    let start = std::time::Instant::now();
    r.redact_execution(&mut execution);
    let whole = start.elapsed();
    println!(
        "{} pieces; one {}-byte chunk: {per_chunk:?}; an execution of 1000 such events: {whole:?} \
         ({:?} per event)",
        r.pieces.as_ref().map_or(0, AhoCorasick::patterns_len),
        chunk.len(),
        whole / 1000
    );
}
