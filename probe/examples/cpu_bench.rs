//! The probe's CPU cost per 1,000 streamed requests.
//!
//! A raw HTTP/1.1 server (the test fixture server) runs on its own thread and runtime, streaming
//! 30 answer chunks per request 1 ms apart (so they arrive as separate reads, like real tokens),
//! plus role, finish, usage and `[DONE]`. Ten executors (ten "providers") share the probe's
//! runtime and run 100 sequential requests each. CPU = user + sys of the whole process minus the
//! server thread, from `/proc` (clock ticks of 10 ms). Run:
//! `cargo run --release -p openbench-probe --example cpu_bench`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use openbench_common::record::Outcome;
use openbench_probe::{Credentials, Executor};
use std::time::Instant;
use support::*;

const PROVIDERS: usize = 10;
const PER_PROVIDER: usize = 100;
const CHUNKS: usize = 30;
const TICKS_PER_SECOND: f64 = 100.0;

/// utime + stime, in seconds, from a `/proc/.../stat` file.
fn cpu_seconds(path: &str) -> f64 {
    let text = std::fs::read_to_string(path).unwrap();
    let after = &text[text.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat(5); `after` starts at field 3.
    let utime: f64 = fields[11].parse().unwrap();
    let stime: f64 = fields[12].parse().unwrap();
    (utime + stime) / TICKS_PER_SECOND
}

fn steps() -> Vec<Step> {
    let mut steps = vec![
        sse_head(),
        data(
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"zai-org/GLM-5.3-Flash","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}"#,
        ),
    ];
    for i in 0..CHUNKS {
        steps.push(Step::Sleep(1));
        steps.push(data(&format!(
            r#"{{"id":"c1","object":"chat.completion.chunk","created":1,"model":"zai-org/GLM-5.3-Flash","choices":[{{"index":0,"delta":{{"content":" tok{i}"}},"finish_reason":null}}]}}"#
        )));
    }
    steps.push(data(r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"zai-org/GLM-5.3-Flash","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#));
    steps.push(data(r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"zai-org/GLM-5.3-Flash","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}"#));
    steps.push(chunk("data: [DONE]\n\n"));
    steps.push(Step::End);
    steps
}

fn main() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let tid = std::fs::read_link("/proc/thread-self").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let server = start(steps()).await;
            tx.send((server.endpoint(), tid)).unwrap();
            std::future::pending::<()>().await;
        });
    });
    let (endpoint, server_tid) = rx.recv().unwrap();
    let server_stat = format!("/proc/{}/stat", server_tid.display());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let creds = Credentials::from_pairs([("TEST_KEY", SECRET)]);
        let executors: Vec<Executor> = (0..PROVIDERS)
            .map(|i| {
                Executor::new(adapter(&format!("p{i}"), &endpoint), contract(20_000), &creds)
                    .unwrap()
            })
            .collect();
        // One request each first: connections made, tokenizer built; not measured.
        for e in &executors {
            let r = e.execute(&planned(&e.adapter().key, 20_000)).await;
            assert_eq!(r.record.outcome, Outcome::Completed);
        }
        let process0 = cpu_seconds("/proc/self/stat");
        let server0 = cpu_seconds(&server_stat);
        let wall = Instant::now();
        let mut tasks = Vec::new();
        for e in executors {
            tasks.push(tokio::spawn(async move {
                let mut events = 0;
                for _ in 0..PER_PROVIDER {
                    let r = e.execute(&planned(&e.adapter().key, 20_000)).await;
                    assert_eq!(r.record.outcome, Outcome::Completed);
                    assert_eq!(r.record.answer_tokens, Some(2 * CHUNKS as u64));
                    events += r.events.len();
                }
                events
            }));
        }
        let mut events = 0;
        for t in tasks {
            events += t.await.unwrap();
        }
        let wall = wall.elapsed();
        let server = cpu_seconds(&server_stat) - server0;
        let probe = cpu_seconds("/proc/self/stat") - process0 - server;
        let n = PROVIDERS * PER_PROVIDER;
        println!(
            "{n} requests ({events} events, {CHUNKS} answer chunks each) in {:.1} s wall: probe CPU {:.2} s \
             (user+sys) = {:.2} s per 1,000 requests; server thread {:.2} s",
            wall.as_secs_f64(),
            probe,
            probe * 1000.0 / n as f64,
            server
        );
    });
}
