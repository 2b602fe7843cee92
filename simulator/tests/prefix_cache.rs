#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The prefix cache over real loopback HTTP (`?prefix_cache=on`), on the `plain` profile
//! (TTFA 40 ms, blocks of 64 tokens, 0.1 ms of prefill per uncached token, TTL 60 s after the
//! last use). Hand-computed for the prompts below: turn 1 is 4,000 characters, 1,000 tokens and
//! ⌊4000/256⌋ = 15 full blocks (960 tokens), a miss at 40 + 0.1 × 1,000 = 140 ms; turn 2 repeats
//! it and adds "ok" and "and?" (4,006 characters, ⌈4006/4⌉ = 1,002 tokens), a hit on the 15
//! blocks at 40 + 0.1 × 42 = 44.2 ms.
//!
//! Timing assertions are causal: the server stamps a write after its scheduled time, so the first
//! answer write of a miss can never be stamped before 140 ms × scale, whatever the load. The TTL
//! is checked with real waits on either side of it: a wait well past it is a miss under any load;
//! a re-send right after a use stays far inside it (1.8 s of margin).

use openbench_simulator::server::WriteStamp;
use openbench_simulator::sse::Label;
use openbench_simulator::{SimConfig, SimServer, start};
use serde_json::{Value, json};
use std::time::Duration;

async fn sim(time_scale: f64) -> SimServer {
    let config = SimConfig {
        time_scale,
        seed: 3,
        default_profile: String::from("plain"),
        answers: Vec::new(),
    };
    start(config, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

fn long_text() -> String {
    (0..4000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect()
}

/// Turn 1's messages, or turn 2's (turn 1 verbatim, an answer and a follow-up).
fn messages(turn: u32) -> Vec<Value> {
    let mut list = vec![json!({"role": "user", "content": long_text()})];
    if turn == 2 {
        list.push(json!({"role": "assistant", "content": "ok"}));
        list.push(json!({"role": "user", "content": "and?"}));
    }
    list
}

/// Posts `body` to `url` with an `x-sim-id`; returns the body text and the server's stamp of
/// the first answer write (µs from receipt).
async fn send(server: &SimServer, url: &str, body: Value, id: &str) -> (String, u64) {
    let response = reqwest::Client::new()
        .post(url)
        .header("x-sim-id", id)
        .header("x-sim-quirk", "usage-chunk")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let text = response.text().await.unwrap();
    let log: Vec<WriteStamp> = server.write_log(id);
    let first = log
        .iter()
        .find(|w| w.label == Label::Answer)
        .unwrap_or_else(|| panic!("{id}: no answer write: {log:?}"));
    (text, first.offset_us)
}

/// The JSON `data:` payloads of an event stream.
fn payloads(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

fn chat(turn: u32) -> Value {
    json!({"model": "m", "stream": true, "messages": messages(turn),
           "stream_options": {"include_usage": true}})
}

fn chat_cached(text: &str) -> Option<u64> {
    let usage = payloads(text)
        .into_iter()
        .find_map(|p| p.get("usage").cloned())?;
    usage["prompt_tokens_details"]["cached_tokens"].as_u64()
}

#[tokio::test]
async fn a_repeated_prefix_is_a_hit_reported_in_usage_and_a_miss_pays_the_full_prefill() {
    let server = sim(1.0).await;
    let cached = format!("{}?prefix_cache=on", server.profile_endpoint("plain"));
    let (miss, miss_at) = send(&server, &cached, chat(1), "miss").await;
    assert_eq!(chat_cached(&miss), Some(0), "{miss}");
    assert!(
        miss_at >= 140_000,
        "a miss must prefill 1,000 tokens: {miss_at} µs"
    );
    let (hit, hit_at) = send(&server, &cached, chat(2), "hit").await;
    assert_eq!(chat_cached(&hit), Some(960), "{hit}");
    assert!(hit_at >= 44_200, "{hit_at} µs");
    // Without the parameter the same route has no cache: no details, plain's 40 ms TTFA.
    let off = server.profile_endpoint("plain");
    let (plain, _) = send(&server, &off, chat(2), "off").await;
    assert_eq!(chat_cached(&plain), None, "{plain}");
    assert!(!plain.contains("prompt_tokens_details"), "{plain}");
}

#[tokio::test]
async fn responses_and_anthropic_report_the_cache_in_their_own_fields() {
    let server = sim(0.05).await;
    let base = server.profile_base("plain?prefix_cache=on");
    let url = |path: &str| {
        let (root, query) = base.split_once('?').unwrap();
        format!("{root}{path}?{query}")
    };
    // Responses: `input_tokens_details.cached_tokens`.
    let body = |turn| json!({"model": "m", "stream": true, "input": messages(turn)});
    let (first, _) = send(&server, &url("/responses"), body(1), "r1").await;
    let (second, _) = send(&server, &url("/responses"), body(2), "r2").await;
    let usage = |text: &str| {
        payloads(text)
            .into_iter()
            .find_map(|p| p.pointer("/response/usage").cloned())
            .unwrap_or_else(|| panic!("no usage: {text}"))
    };
    assert_eq!(usage(&first)["input_tokens_details"]["cached_tokens"], 0);
    assert_eq!(usage(&second)["input_tokens_details"]["cached_tokens"], 960);
    assert_eq!(usage(&second)["input_tokens"], 1002);
    // Anthropic: `input_tokens` leaves the cache out; the read and the written parts are named.
    // The Responses turns above share this route's cache (one provider, one cache), so turn 1
    // sent as a Message is already a hit on 960 tokens; a fresh prefix ("z…") is the miss.
    let anthropic = |content: String| {
        json!({"model": "m", "stream": true, "max_tokens": 16,
               "messages": [{"role": "user", "content": content}]})
    };
    let start_usage = |text: &str| {
        payloads(text)
            .into_iter()
            .find_map(|p| p.pointer("/message/usage").cloned())
            .unwrap_or_else(|| panic!("no message_start: {text}"))
    };
    let (hit, _) = send(&server, &url("/messages"), anthropic(long_text()), "a1").await;
    assert_eq!(
        start_usage(&hit),
        json!({"input_tokens": 40, "cache_read_input_tokens": 960,
               "cache_creation_input_tokens": 0, "output_tokens": 1})
    );
    let fresh = "z".repeat(4000); // 1,000 tokens, 15 new blocks (960 tokens) written
    let (miss, _) = send(&server, &url("/messages"), anthropic(fresh), "a2").await;
    assert_eq!(
        start_usage(&miss),
        json!({"input_tokens": 40, "cache_read_input_tokens": 0,
               "cache_creation_input_tokens": 960, "output_tokens": 1})
    );
}

#[tokio::test]
async fn a_block_lives_the_ttl_after_its_last_use_then_the_prefix_misses() {
    // Time scale 1/30: the 60 s TTL lasts 2 real seconds; a miss's 140 ms TTFA 4.67 ms.
    let server = sim(1.0 / 30.0).await;
    let url = format!("{}?prefix_cache=on", server.profile_endpoint("plain"));
    let (first, _) = send(&server, &url, chat(1), "t1").await;
    assert_eq!(chat_cached(&first), Some(0));
    // At once: inside the TTL by 2 s less the request's own time.
    let (again, _) = send(&server, &url, chat(1), "t2").await;
    assert_eq!(chat_cached(&again), Some(960));
    // 2.5 s after that use: past the TTL under any load (the wait only grows).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (expired, at) = send(&server, &url, chat(1), "t3").await;
    assert_eq!(chat_cached(&expired), Some(0), "{expired}");
    assert!(
        at as f64 >= 140_000.0 / 30.0,
        "a miss prefills again: {at} µs"
    );
}

#[tokio::test]
async fn a_bad_prefix_cache_value_is_refused_naming_it() {
    let server = sim(0.05).await;
    let url = format!("{}?prefix_cache=maybe", server.profile_endpoint("plain"));
    let response = reqwest::Client::new()
        .post(url)
        .body(chat(1).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let text = response.text().await.unwrap();
    assert!(
        text.contains("prefix_cache: \\\"maybe\\\" must be on or off"),
        "{text}"
    );
}
