//! The oracle upstream of the load-truth tests (METHODOLOGY §9): an OpenAI-compatible server on
//! its own thread and runtime that serves `slots` responses at a time and logs what it wrote and
//! when, so a test can compare the report's figures with the server's own truth.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use axum::serve::ListenerExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::Semaphore;

/// What the oracle answers.
#[derive(Clone, Copy, PartialEq)]
pub enum Answer {
    /// The asked `max_tokens`, one token a chunk: `ok`, then ` ok` (one o200k token each).
    Held,
    /// Five tokens in one chunk whatever was asked: a server that ignores `ignore_eos`.
    FiveInOneChunk,
    /// The asked tokens paced at one token per `interval`: events of `per_event[k]` tokens
    /// (cycled), `events_per_write` events flushed in one write, each write logged with its
    /// tokens (the server's truth of every token's interval).
    Paced {
        per_event: &'static [u64],
        events_per_write: usize,
        interval: Duration,
    },
}

/// The oracle: `slots` concurrent responses (a fair semaphore: first come first served), each
/// TTFA `TTFA` after its slot, then a chunk every `GAP`; the end of every response logged in
/// unix µs as its last byte is handed to the connection.
#[derive(Clone)]
pub struct Oracle {
    pub slots: Arc<Semaphore>,
    pub answer: Answer,
    pub ends_us: Arc<Mutex<Vec<u64>>>,
    /// Per paced response, its writes.
    pub writes: Arc<Mutex<Vec<Vec<Write>>>>,
}

/// One write of a paced response: (unix µs, tokens it carried).
pub type Write = (u64, u64);

/// The events of a paced answer of `asked` tokens, grouped into writes: each write's text and
/// its tokens.
pub fn paced_writes(asked: u64, per_event: &[u64], events_per_write: usize) -> Vec<(String, u64)> {
    let mut events: Vec<(String, u64)> = Vec::new();
    let mut sent = 0;
    for &k in per_event.iter().cycle() {
        if sent == asked {
            break;
        }
        let k = k.min(asked - sent);
        let text: String = (0..k)
            .map(|i| if sent + i == 0 { "ok" } else { " ok" })
            .collect();
        sent += k;
        let last = sent == asked;
        let body = chunk(&text, last.then_some("length"), last.then_some(asked));
        events.push((body, k));
    }
    events
        .chunks(events_per_write)
        .map(|w| {
            (
                w.iter().map(|e| e.0.as_str()).collect(),
                w.iter().map(|e| e.1).sum(),
            )
        })
        .collect()
}

pub const TTFA: Duration = Duration::from_millis(4);
pub const GAP: Duration = Duration::from_millis(2);
/// The length every held request asks for (the workload's fixed output length).
pub const ASKED: u64 = 6;

pub fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

pub fn chunk(content: &str, finish: Option<&str>, usage: Option<u64>) -> String {
    let mut v = serde_json::json!({
        "id": "o", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}],
    });
    if let Some(n) = usage {
        v["usage"] = serde_json::json!({"prompt_tokens": 20, "completion_tokens": n,
            "total_tokens": 20 + n});
    }
    format!("data: {v}\n\n")
}

pub async fn complete(State(oracle): State<Oracle>, body: String) -> Response {
    let request: serde_json::Value = serde_json::from_str(&body).unwrap();
    let asked = request["max_tokens"].as_u64().unwrap_or(ASKED);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(64);
    tokio::spawn(async move {
        let _slot = oracle.slots.clone().acquire_owned().await.unwrap();
        tokio::time::sleep(TTFA).await;
        match oracle.answer {
            Answer::Held => {
                for k in 0..asked {
                    if k > 0 {
                        tokio::time::sleep(GAP).await;
                    }
                    let last = k + 1 == asked;
                    let text = if k == 0 { "ok" } else { " ok" };
                    let finish = last.then_some("length");
                    let usage = last.then_some(asked);
                    let _ = tx.send(Ok(chunk(text, finish, usage))).await;
                }
            }
            Answer::FiveInOneChunk => {
                let _ = tx
                    .send(Ok(chunk("ok ok ok ok ok", Some("stop"), Some(5))))
                    .await;
            }
            Answer::Paced {
                per_event,
                events_per_write,
                interval,
            } => {
                let mut log = Vec::new();
                let writes = paced_writes(asked, per_event, events_per_write);
                for (k, (text, tokens)) in writes.into_iter().enumerate() {
                    if k > 0 {
                        tokio::time::sleep(interval * tokens as u32).await;
                    }
                    log.push((unix_us(), tokens));
                    let _ = tx.send(Ok(text)).await;
                }
                oracle.writes.lock().unwrap().push(log);
            }
        }
        let _ = tx.send(Ok("data: [DONE]\n\n".to_string())).await;
        oracle.ends_us.lock().unwrap().push(unix_us());
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        ))
        .unwrap()
}

/// Starts an oracle answering `answer`; its endpoint and the oracle (its logs).
pub fn start_oracle(answer: Answer) -> (String, Oracle) {
    let oracle = Oracle {
        slots: Arc::new(Semaphore::new(2)),
        answer,
        ends_us: Arc::new(Mutex::new(Vec::new())),
        writes: Arc::new(Mutex::new(Vec::new())),
    };
    let logs = oracle.clone();
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(complete))
        .with_state(oracle);
    // The oracle runs on a runtime and thread of its own, as a server would: the client's
    // work (coordinator, probe, records) on the test's runtime never delays its slots.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            // Without TCP_NODELAY, Nagle's algorithm holds each small write until the client's
            // delayed ACK (40 ms on Linux): the first three 17 ms events then reach the client
            // together, 40 ms late, and the write log is not what went on the wire.
            let listener = tokio::net::TcpListener::from_std(listener)
                .unwrap()
                .tap_io(|tcp| tcp.set_nodelay(true).unwrap());
            axum::serve(listener, app).await
        })
    });
    (format!("http://{addr}/v1/chat/completions"), logs)
}

/// A spec of `providers` (key, endpoint), every one held to `asked` tokens, running `steps`.
pub fn write_spec(dir: &Path, providers: &[(&str, &str)], steps: &str, asked: u64) -> PathBuf {
    let keys: Vec<&str> = providers.iter().map(|(k, _)| *k).collect();
    let providers: String = providers
        .iter()
        .map(|(key, endpoint)| {
            format!(
                "  - {{key: {key}, endpoint: '{endpoint}', model: m, auth: {{scheme: none}}, \
                 max_tokens_field: max_tokens}}\n"
            )
        })
        .collect();
    let keys = keys.join(", ");
    let spec = format!(
        "benchmark: {{slug: load-truth, workflow: load, schedule_version: load-truth-v1}}
request: {{temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 20000,
  harness_grace_ms: 60000}}
providers:
{providers}dataset: {{source: ., manifest: none}}
run_root: runs
load:
  seed: 11
  phases: {{warmup_s: 1, measure: {{duration_s: 8}}, cooldown_s: 0}}
  steps: [{steps}]
  workload:
    kind: synthetic
    input_tokens: {{dist: fixed, tokens: 20}}
    output_tokens: {{dist: fixed, tokens: {asked}}}
  ignore_eos: [{keys}]
  slo: {{e2e_sched_ms: 1000}}
"
    );
    let path = dir.join("spec.yaml");
    std::fs::write(&path, spec).unwrap();
    path
}

/// Nearest-rank percentile `p` of `values` (ascending copy), as METHODOLOGY §6 defines it.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p * v.len() as f64).ceil() as usize).max(1);
    v[rank - 1]
}
