#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The simulator over real loopback HTTP: determinism of the bytes, the write log, errors and
//! shutdown. Timing bounds follow from causality (a write is stamped after its scheduled time
//! and before the client's call returns), so no load can break them.

use openbench_simulator::{SimConfig, SimServer, start};
use std::time::{Duration, Instant};

async fn sim(profile: &str, time_scale: f64, seed: u64) -> SimServer {
    let config = SimConfig {
        time_scale,
        seed,
        default_profile: profile.to_string(),
        answers: Vec::new(),
    };
    start(config, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

fn body(question: &str) -> String {
    format!(
        r#"{{"model":"zai-org/GLM-5.3-Flash","stream":true,"messages":[{{"role":"user","content":"{question}"}}],"stream_options":{{"include_usage":true}}}}"#
    )
}

async fn post(url: &str, body: String, headers: &[(&str, &str)]) -> (u16, Vec<u8>) {
    let client = reqwest::Client::new();
    let mut request = client.post(url).body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.bytes().await.unwrap().to_vec())
}

#[tokio::test]
async fn same_seed_and_body_give_the_same_bytes_on_every_profile() {
    // Two servers with the same seed replay the same bytes for the same (body, occurrence);
    // a repeated body on one server (a smoke's second attempt) is a fresh draw.
    let server = sim("plain", 0.01, 9).await;
    let twin = sim("plain", 0.01, 9).await;
    for profile in ["zai", "together", "fireworks", "baseten", "novita"] {
        let url = server.profile_endpoint(profile);
        let twin_url = twin.profile_endpoint(profile);
        let a = post(&url, body("q1"), &[]).await;
        let a_twin = post(&twin_url, body("q1"), &[]).await;
        let again = post(&url, body("q1"), &[]).await;
        let again_twin = post(&twin_url, body("q1"), &[]).await;
        let c = post(&url, body("q2"), &[]).await;
        assert_eq!(a, a_twin, "{profile}");
        assert_eq!(again, again_twin, "{profile}");
        assert_ne!(a.1, again.1, "{profile}: a repeat must be a new draw");
        assert_ne!(a.1, c.1, "{profile}");
        assert_eq!(a.0, 200, "{profile}: {}", String::from_utf8_lossy(&a.1));
        assert!(a.1.ends_with(b"data: [DONE]\n\n"), "{profile}");
    }
    let other_seed = sim("plain", 0.01, 10).await;
    let fresh = sim("plain", 0.01, 9).await;
    let a = post(&fresh.profile_endpoint("zai"), body("q1"), &[]).await;
    let d = post(&other_seed.profile_endpoint("zai"), body("q1"), &[]).await;
    assert_ne!(a.1, d.1);
}

#[tokio::test]
async fn schedule_is_followed_and_logged() {
    let server = sim("plain", 1.0, 0).await;
    let url = format!("{}/chat/completions", server.base_url());
    let started = Instant::now();
    // Role chunk at 20 ms, answer pieces at 20 + 0 and 20 + 30 ms.
    let (status, bytes) = post(
        &url,
        body("q"),
        &[("x-sim-schedule", "20,0,30"), ("x-sim-id", "run-1")],
    )
    .await;
    let elapsed_us = started.elapsed().as_micros() as u64;
    assert_eq!(status, 200);
    assert!(elapsed_us >= 50_000, "{elapsed_us} µs");
    let text = String::from_utf8(bytes).unwrap();
    // 2 pieces → the 13-character answer {"answer":""} in pieces of 6 and 7 characters.
    for piece in [r#""content":"{\"answ""#, r#""content":"er\":\"\"}""#] {
        assert!(text.contains(piece), "{piece} in {text}");
    }
    let log = server.write_log("run-1");
    let labels: Vec<String> = log
        .iter()
        .map(|w| {
            serde_json::to_value(w.label)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(labels, ["role", "answer", "answer", "finish", "done"]);
    let at: Vec<u64> = log.iter().map(|w| w.offset_us).collect();
    assert!(
        at[0] >= 20_000 && at[1] >= 20_000 && at[2] >= 50_000,
        "{at:?}"
    );
    // In order, and all within the call as the client timed it (the request arrived after the
    // client's clock started, the last write was stamped before its response ended).
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "{at:?}");
    assert!(at[4] <= elapsed_us, "{at:?} after {elapsed_us} µs");
    assert!(server.write_log("nobody").is_empty());
    let client = reqwest::Client::new();
    let debug = client
        .get(format!("http://{}/debug/writes/run-1", server.addr()))
        .send()
        .await
        .unwrap();
    let json: serde_json::Value = debug.json().await.unwrap();
    assert_eq!(json.as_array().unwrap().len(), 5);
    assert_eq!(json[2]["offset_us"].as_u64(), Some(at[2]));
    let missing = client
        .get(format!("http://{}/debug/writes/nobody", server.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status().as_u16(), 404);
}

#[tokio::test]
async fn bad_requests_name_the_problem() {
    let server = sim("plain", 1.0, 0).await;
    let (status, bytes) = post(
        &server.profile_endpoint("plain"),
        body("q"),
        &[("x-sim-quirk", "crlf,bogus")],
    )
    .await;
    assert_eq!(status, 400);
    let text = String::from_utf8(bytes).unwrap();
    assert!(
        text.contains(r#"unknown quirk \"bogus\" in x-sim-quirk header"#),
        "{text}"
    );
    let (status, bytes) = post(&server.profile_endpoint("acme"), body("q"), &[]).await;
    assert_eq!(status, 404);
    assert!(
        String::from_utf8(bytes)
            .unwrap()
            .contains("unknown profile \\\"acme\\\"")
    );
    let (status, _) = post(&server.profile_endpoint("plain"), "{".into(), &[]).await;
    assert_eq!(status, 400);
    let health = reqwest::get(format!("http://{}/health", server.addr()))
        .await
        .unwrap();
    assert_eq!(health.text().await.unwrap(), r#"{"status":"ok"}"#);
    let refused = start(
        SimConfig {
            time_scale: 0.0,
            ..SimConfig::default()
        },
        "127.0.0.1:0".parse().unwrap(),
    )
    .await;
    assert_eq!(
        refused.err().unwrap().to_string(),
        "time_scale 0 must be positive and finite"
    );
}

#[tokio::test]
async fn shutdown_ends_a_hanging_request_promptly() {
    let server = sim("plain", 1.0, 0).await;
    let url = server.profile_endpoint("plain");
    let pending =
        tokio::spawn(async move { post(&url, body("q"), &[("x-sim-quirk", "no-headers")]).await });
    // Wait until the request is in the server's hands (its headers would never come).
    let waited = Instant::now();
    while server.requests_received() < 1 {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the request never arrived"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.shutdown();
    // Ended by the shutdown, not by the hang limit (60 s away).
    let (status, _) = tokio::time::timeout(Duration::from_secs(30), pending)
        .await
        .expect("the hanging request outlived the shutdown")
        .unwrap();
    assert_eq!(status, 503);
    server.stopped().await;
}
