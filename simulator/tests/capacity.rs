#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The capacity model over real loopback HTTP, with concurrent reqwest clients.
//!
//! Every request uses the exact-schedule mode (`x-sim-schedule`), so its service time T is known
//! and never scaled. Timing assertions are causal lower bounds: with S slots each busy for at
//! least T per response, no load on this machine can make k responses finish sooner than
//! ceil(k/S)·T after the first was sent. Where a test needs the server in a given state (one in
//! service, one waiting), it polls the server's counters rather than sleeping.

use openbench_simulator::{SimConfig, SimServer, start};
use std::time::{Duration, Instant};

async fn sim() -> SimServer {
    let config = SimConfig {
        time_scale: 1.0,
        seed: 0,
        default_profile: String::from("plain"),
        answers: Vec::new(),
    };
    start(config, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

fn body(question: &str) -> String {
    format!(
        r#"{{"model":"m","stream":true,"messages":[{{"role":"user","content":"{question}"}}]}}"#
    )
}

/// Sends one request with an exact schedule and reads it to the end: (status, seconds from
/// `t0` to the end of the body, the response).
async fn timed(
    client: reqwest::Client,
    url: String,
    schedule: String,
    t0: Instant,
) -> (u16, f64, Option<String>) {
    let response = client
        .post(url)
        .header("x-sim-schedule", schedule)
        .body(body("q"))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let _ = response.bytes().await.unwrap();
    (status, t0.elapsed().as_secs_f64(), retry_after)
}

/// Polls `cond` on the capacity's counters until it holds (or fails after 10 s).
async fn wait_for(
    server: &SimServer,
    query: &str,
    what: &str,
    cond: impl Fn(openbench_simulator::capacity::CapacityStats) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(stats) = server.capacity_stats("plain", query)
            && cond(stats)
        {
            return;
        }
        assert!(Instant::now() < deadline, "never saw {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test]
async fn a_burst_is_served_in_waves_of_s() {
    // S = 2, T = 200 ms, N = 6 sent at once. The k-th completion (0-based) cannot come before
    // (⌊k/2⌋ + 1)·T: each slot serves one response at a time. Without the capacity all six
    // would end near T, so the bound on the last (3T = 600 ms) fails if slots are not enforced.
    let server = sim().await;
    let query = "slots=2";
    let url = format!("{}?{query}", server.profile_endpoint("plain"));
    let client = reqwest::Client::new();
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..6)
        .map(|_| tokio::spawn(timed(client.clone(), url.clone(), "0,200".into(), t0)))
        .collect();
    let mut ends = Vec::new();
    for task in tasks {
        let (status, end, _) = task.await.unwrap();
        assert_eq!(status, 200);
        ends.push(end);
    }
    ends.sort_by(f64::total_cmp);
    for (k, end) in ends.iter().enumerate() {
        let bound = ((k / 2) + 1) as f64 * 0.200;
        assert!(
            *end >= bound,
            "completion {k} at {end:.3} s, before {bound} s: {ends:?}"
        );
    }
    let stats = server.capacity_stats("plain", query).unwrap();
    assert!(stats.peak_in_service <= 2, "{stats:?}");
    assert_eq!((stats.in_service, stats.waiting, stats.rejected), (0, 0, 0));
    println!("burst of 6 on 2 slots, T = 200 ms: completions at {ends:?} s");
}

#[tokio::test]
async fn a_full_queue_gets_a_429_with_retry_after_and_a_dropped_client_frees_its_slot() {
    // S = 1, Q = 1. A holds the slot (a 3 s response), B waits, C finds the queue full: 429 at
    // once with Retry-After 3. Dropping A's client releases the slot, and B is served.
    let server = sim().await;
    let query = "slots=1&queue=1&retry_after_s=3";
    let url = format!("{}?{query}", server.profile_endpoint("plain"));
    let client = reqwest::Client::new();
    let t0 = Instant::now();
    let a = tokio::spawn(timed(client.clone(), url.clone(), "0,3000".into(), t0));
    wait_for(&server, query, "A in service", |s| s.in_service == 1).await;
    let b = tokio::spawn(timed(client.clone(), url.clone(), "0,10".into(), t0));
    wait_for(&server, query, "B waiting", |s| s.waiting == 1).await;
    let (status, _, retry_after) = timed(client.clone(), url.clone(), "0,10".into(), t0).await;
    assert_eq!(status, 429);
    assert_eq!(retry_after.as_deref(), Some("3"));
    assert_eq!(server.capacity_stats("plain", query).unwrap().rejected, 1);
    a.abort();
    let (status, b_end, _) = b.await.unwrap();
    assert_eq!(status, 200);
    println!("B served {b_end:.3} s after A was sent (A's own response would end at 3 s)");
    let stats = server.capacity_stats("plain", query).unwrap();
    assert_eq!(
        (stats.in_service, stats.waiting, stats.peak_in_service),
        (0, 0, 1)
    );
}

#[tokio::test]
async fn a_closed_loop_above_s_runs_at_most_s_over_t() {
    // N = 4 users, S = 2, T = 150 ms, 3 requests each: 12 responses of ≥ T on 2 slots need at
    // least 12·T/2 = 900 ms of wall time, whatever the load. The closed form says each request
    // then takes about N·T/S = 300 ms (a 150 ms wait): printed, not asserted.
    let server = sim().await;
    let query = "slots=2";
    let url = format!("{}?{query}", server.profile_endpoint("plain"));
    let client = reqwest::Client::new();
    let t0 = Instant::now();
    let users: Vec<_> = (0..4)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                for _ in 0..3 {
                    let start = Instant::now();
                    let (status, _, _) =
                        timed(client.clone(), url.clone(), "0,150".into(), t0).await;
                    assert_eq!(status, 200);
                    latencies.push(start.elapsed().as_secs_f64());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for user in users {
        latencies.extend(user.await.unwrap());
    }
    let wall = t0.elapsed().as_secs_f64();
    assert!(wall >= 0.900, "{wall}");
    assert!(
        server
            .capacity_stats("plain", query)
            .unwrap()
            .peak_in_service
            <= 2
    );
    let mean = latencies.iter().sum::<f64>() / latencies.len() as f64;
    println!(
        "closed loop N=4 S=2 T=150 ms: wall {wall:.3} s, mean latency {mean:.3} s (closed form 0.300)"
    );
}

#[tokio::test]
async fn a_shared_token_rate_is_split_between_streams() {
    // R = 100 tokens/s shared, 10 slots (never full). Two streams of 20 answer pieces 1 ms apart
    // (40 tokens) want 0.02 s each alone; the rate hands out one token every 10 ms, first come
    // first served, so the 40th token cannot be written before 39 × 10 ms = 390 ms after the
    // first. Without the rate both would end near 20 ms.
    let server = sim().await;
    let query = "slots=10&tokens_per_s=100";
    let url = format!("{}?{query}", server.profile_endpoint("plain"));
    let schedule = format!("0{}", ",1".repeat(20));
    let client = reqwest::Client::new();
    let t0 = Instant::now();
    let a = tokio::spawn(timed(client.clone(), url.clone(), schedule.clone(), t0));
    let b = tokio::spawn(timed(client.clone(), url.clone(), schedule.clone(), t0));
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    assert_eq!((a.0, b.0), (200, 200));
    let last = a.1.max(b.1);
    assert!(last >= 0.390, "both streams ended by {last:.3} s");
    println!(
        "two 20-token streams at R = 100 tok/s: ended at {:.3} s and {:.3} s",
        a.1, b.1
    );
}

#[tokio::test]
async fn sim_endpoints_carry_the_capacity_and_bad_parameters_are_refused() {
    let server = sim().await;
    let endpoint = server.profile_endpoint("plain?slots=2&queue=4");
    assert_eq!(
        endpoint,
        format!(
            "http://{}/profiles/plain/v1/chat/completions?slots=2&queue=4",
            server.addr()
        )
    );
    assert_eq!(
        server.profile_endpoint("zai"),
        format!("http://{}/profiles/zai/v1/chat/completions", server.addr())
    );
    let client = reqwest::Client::new();
    let bad = format!("{}?slots=2&burst=9", server.profile_endpoint("plain"));
    let response = client.post(bad).body(body("q")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let text = response.text().await.unwrap();
    assert!(text.contains("capacity burst: unknown parameter"), "{text}");
    // The default route takes the same parameters.
    let default = format!("{}/chat/completions?slots=1", server.base_url());
    let (status, _, _) = timed(client, default, "0,1".into(), Instant::now()).await;
    assert_eq!(status, 200);
    assert_eq!(
        server
            .capacity_stats("plain", "slots=1")
            .unwrap()
            .peak_in_service,
        1
    );
}
