//! What the agent tests share (tests/load_agents.rs, tests/load_agents_open.rs): the simulator
//! with the load workflow's agent scripts behind a loopback proxy that logs every request body
//! it forwards, the worked-out results of agent item 0, and the records read back by lane.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use openbench_common::record::TerminalRecord;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

pub const MEETING_0: &str =
    r#"{"id":"mtg-0000","title":"budget review","room":"Birch","organizer":"Alan Turing"}"#;
pub const TICKET_2: &str = r#"{"id":"tkt-0002","subject":"mobile app crashes on start","status":"resolved","owner":"Grace Hopper"}"#;
pub const ANSWER_0: &str = r#"{"organizer":"Alan Turing","owner":"Grace Hopper"}"#;

/// Bodies the proxy forwarded, by lane (the first path segment), in arrival order.
pub type Log = Arc<Mutex<BTreeMap<String, Vec<Value>>>>;

#[derive(Clone)]
struct Proxy {
    sim: String,
    log: Log,
    client: reqwest::Client,
}

async fn forward(
    State(p): State<Proxy>,
    axum::extract::Path((lane, rest)): axum::extract::Path<(String, String)>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    p.log.lock().unwrap().entry(lane).or_default().push(value);
    let mut request = p
        .client
        .post(format!("{}/profiles/plain/v1/{rest}", p.sim))
        .body(body);
    for name in ["content-type", "anthropic-version", "accept"] {
        if let Some(v) = headers.get(name).and_then(|v| v.to_str().ok()) {
            request = request.header(name, v);
        }
    }
    let upstream = request.send().await.unwrap();
    let status = upstream.status().as_u16();
    let kind = upstream
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("text/event-stream")
        .to_string();
    let bytes = upstream.bytes().await.unwrap();
    Response::builder()
        .status(status)
        .header("content-type", kind)
        .body(Body::from(bytes))
        .unwrap()
}

/// Starts the simulator (with the load workflow's agent scripts) and the logging proxy on their
/// own runtime; the proxy's address and its log.
pub fn start() -> (String, Log) {
    let log: Log = Arc::default();
    let (tx, rx) = std::sync::mpsc::channel();
    let shared = log.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let sim = openbench_simulator::start(
                openbench_simulator::SimConfig {
                    time_scale: 1.0,
                    seed: 7,
                    default_profile: "plain".into(),
                    answers: openbench_load::agent_family::canned_answers(),
                },
                ([127, 0, 0, 1], 0).into(),
            )
            .await
            .unwrap();
            let proxy = Proxy {
                sim: format!("http://{}", sim.addr()),
                log: shared,
                client: reqwest::Client::new(),
            };
            let app = axum::Router::new()
                .route("/{lane}/v1/{*rest}", axum::routing::post(forward))
                .with_state(proxy);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
            drop(sim);
        });
    });
    (format!("http://{}", rx.recv().unwrap()), log)
}

/// Every lane's records in sequence order (one user each).
pub fn lanes(dir: &Path) -> BTreeMap<String, Vec<TerminalRecord>> {
    let records = openbench_common::rundir::counting_records(
        &dir.join(openbench_common::rundir::FULL_RESULTS),
    )
    .unwrap();
    let mut out: BTreeMap<String, Vec<TerminalRecord>> = BTreeMap::new();
    for r in records.into_values() {
        out.entry(r.lane.clone()).or_default().push(r);
    }
    for v in out.values_mut() {
        v.sort_by_key(|r| r.sequence);
    }
    out
}

/// A chat tool call as sent back.
pub fn chat_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// A later step's chat body `now` continues `before`'s: the previous request's messages
/// verbatim, then the model's turn with the calls `previous` (its record) made, with the ids the
/// provider gave them, and one tool result per call.
pub fn assert_continues(before: &Value, now: &Value, previous: &TerminalRecord) {
    let before = before["messages"].as_array().unwrap();
    let now = now["messages"].as_array().unwrap();
    let calls = &previous.tool_calls;
    assert_eq!(now.len(), before.len() + 1 + calls.len());
    assert_eq!(&now[..before.len()], &before[..]);
    let sent = &now[before.len()]["tool_calls"];
    for (i, c) in calls.iter().enumerate() {
        assert_eq!(sent[i]["id"], json!(c.id));
        assert_eq!(sent[i]["function"]["arguments"], json!(c.arguments));
        assert_eq!(now[before.len() + 1 + i]["tool_call_id"], json!(c.id));
    }
}
