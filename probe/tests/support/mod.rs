//! An in-test raw HTTP/1.1 server on 127.0.0.1:0 that plays exact byte sequences with exact
//! sleeps: recorded-format fixtures of real providers' streams, written byte for byte. A gate
//! step holds a response until the test lets it go, and the test can wait for requests to
//! arrive, so tests synchronise on events, not on sleeps.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use openbench_common::record::Execution;
use openbench_common::request::{ChatMessage, PlannedRequest, RequestIdentity, Role};
use openbench_common::spec::{Api, Auth, ProviderAdapter, RequestContract};
use openbench_probe::{Credentials, Executor};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

pub mod pki;
pub mod session;
pub mod wire;

/// One step of a scripted response.
#[derive(Debug, Clone)]
pub enum Step {
    /// Bytes written as they are (status line, headers, or a non-chunked body).
    Raw(Vec<u8>),
    /// Bytes written as one HTTP/1.1 chunk.
    Chunk(Vec<u8>),
    /// The terminating zero chunk (the connection stays open for the next request).
    End,
    /// A pause.
    Sleep(u64),
    /// Waits for one permit of the semaphore (added by the test) and uses it up.
    Gate(Arc<Semaphore>),
    /// Close the connection now.
    Close,
}

/// `HTTP/1.1 <status>` with chunked encoding and extra headers, then a blank line.
pub fn head(status: &str, headers: &[(&str, &str)]) -> Step {
    let mut text = format!("HTTP/1.1 {status}\r\nTransfer-Encoding: chunked\r\n");
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str("\r\n");
    Step::Raw(text.into_bytes())
}

/// A 200 SSE head.
pub fn sse_head() -> Step {
    head(
        "200 OK",
        &[
            ("Content-Type", "text/event-stream"),
            ("x-request-id", "req-abc-123"),
        ],
    )
}

/// `data: <json>\n\n` as one chunk.
pub fn data(json: &str) -> Step {
    Step::Chunk(format!("data: {json}\n\n").into_bytes())
}

/// A chunk of raw SSE text.
pub fn chunk(text: &str) -> Step {
    Step::Chunk(text.as_bytes().to_vec())
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    /// Request line and headers, as sent.
    pub head: String,
    /// The body.
    pub body: Vec<u8>,
    /// Wall clock when the request line had arrived.
    pub arrived_at: std::time::SystemTime,
}

/// A running raw server.
pub struct RawServer {
    pub addr: SocketAddr,
    pub requests: Arc<Mutex<Vec<Received>>>,
    pub connections: Arc<AtomicUsize>,
    /// Requests received so far.
    pub arrivals: watch::Receiver<usize>,
}

impl RawServer {
    /// `http://IP:P/v1/chat/completions`.
    pub fn endpoint(&self) -> String {
        self.endpoint_in(Api::OpenaiChat)
    }

    /// `http://IP:P/v1` and `api`'s path (`/messages`, …).
    pub fn endpoint_in(&self, api: Api) -> String {
        api.post_url(&format!("http://{}/v1", self.addr))
    }

    pub fn connection_count(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    pub fn received(&self) -> Vec<Received> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits until `n` requests have arrived (at most 30 s, then panics).
    pub async fn wait_for_requests(&self, n: usize) {
        let mut arrivals = self.arrivals.clone();
        tokio::time::timeout(Duration::from_secs(30), arrivals.wait_for(|got| *got >= n))
            .await
            .unwrap_or_else(|_| panic!("{n} requests did not arrive within 30 s"))
            .unwrap();
    }
}

/// Starts a server on 127.0.0.1 that answers every request with `steps`.
pub async fn start(steps: Vec<Step>) -> RawServer {
    start_at("127.0.0.1", steps).await
}

/// Starts a server on loopback address `ip` that answers every request with `steps`.
pub async fn start_at(ip: &str, steps: Vec<Step>) -> RawServer {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(AtomicUsize::new(0));
    let (arrived, arrivals) = watch::channel(0usize);
    let arrived = Arc::new(arrived);
    let steps = Arc::new(steps);
    {
        let requests = requests.clone();
        let connections = connections.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                connections.fetch_add(1, Ordering::SeqCst);
                stream.set_nodelay(true).unwrap();
                let steps = steps.clone();
                let requests = requests.clone();
                let arrived = arrived.clone();
                tokio::spawn(async move {
                    let (read, mut write) = stream.into_split();
                    let mut read = BufReader::new(read);
                    loop {
                        let Some(received) = read_request(&mut read).await else {
                            return;
                        };
                        requests.lock().unwrap().push(received);
                        arrived.send_modify(|n| *n += 1);
                        for step in steps.iter() {
                            let ok = match step {
                                Step::Raw(bytes) => write.write_all(bytes).await.is_ok(),
                                Step::Chunk(bytes) => {
                                    let mut framed = format!("{:x}\r\n", bytes.len()).into_bytes();
                                    framed.extend_from_slice(bytes);
                                    framed.extend_from_slice(b"\r\n");
                                    write.write_all(&framed).await.is_ok()
                                }
                                Step::End => write.write_all(b"0\r\n\r\n").await.is_ok(),
                                Step::Sleep(ms) => {
                                    tokio::time::sleep(Duration::from_millis(*ms)).await;
                                    true
                                }
                                Step::Gate(gate) => match gate.acquire().await {
                                    Ok(permit) => {
                                        permit.forget();
                                        true
                                    }
                                    Err(_) => false,
                                },
                                Step::Close => return,
                            };
                            if !ok {
                                return;
                            }
                        }
                    }
                });
            }
        });
    }
    RawServer {
        addr,
        requests,
        connections,
        arrivals,
    }
}

async fn read_request<R: tokio::io::AsyncBufRead + Unpin>(read: &mut R) -> Option<Received> {
    let mut head = String::new();
    let mut arrived_at = None;
    loop {
        let mut line = String::new();
        if read.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        arrived_at.get_or_insert_with(std::time::SystemTime::now);
        let end = line == "\r\n";
        head.push_str(&line);
        if end {
            break;
        }
    }
    let length = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())
                .flatten()
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    read.read_exact(&mut body).await.ok()?;
    Some(Received {
        head,
        body,
        arrived_at: arrived_at?,
    })
}

/// The METHODOLOGY §1 contract with a deadline.
pub fn contract(timeout_ms: u64) -> RequestContract {
    RequestContract::reference(timeout_ms)
}

/// An adapter for `endpoint` with bearer auth from `TEST_KEY`.
pub fn adapter(key: &str, endpoint: &str) -> ProviderAdapter {
    ProviderAdapter {
        auth: Auth::Bearer {
            env: "TEST_KEY".into(),
        },
        include_usage: true,
        ..ProviderAdapter::open(key, endpoint, "zai-org/GLM-5.3-Flash")
    }
}

/// The secret used by every test adapter.
pub const SECRET: &str = "sk-test-SECRET-0123456789";

/// A planned request for `provider` with a deadline.
pub fn planned(provider: &str, deadline_ms: u64) -> PlannedRequest {
    PlannedRequest {
        identity: RequestIdentity {
            run_id: "run-1".into(),
            round_id: "round-1".into(),
            request_id: "req-1".into(),
            round_index: 3,
            attempt: 0,
            task_family: "ticket-triage".into(),
            item_id: "tt-0001".into(),
            provider: provider.into(),
            region: "local".into(),
            lane: provider.into(),
            ..RequestIdentity::default()
        },
        messages: vec![
            ChatMessage::text(Role::System, "Answer in JSON.".into()),
            ChatMessage::text(Role::User, "Triage this ticket.".into()),
        ],
        deadline_ms,
        output: None,
        load: None,
        tool: None,
        tools: Vec::new(),
    }
}

/// The credentials of every test adapter (`TEST_KEY` = [`SECRET`]).
pub fn creds() -> Credentials {
    Credentials::from_pairs([("TEST_KEY", SECRET)])
}

/// [`adapter`] speaking `api` at `server`.
pub fn adapter_in(api: Api, key: &str, server: &RawServer) -> ProviderAdapter {
    ProviderAdapter {
        api,
        ..adapter(key, &server.endpoint_in(api))
    }
}

/// An executor for provider `together` at `server`, with the contract's 20 s deadline.
pub fn executor(server: &RawServer) -> Executor {
    executor_in(Api::OpenaiChat, server)
}

/// [`executor`] speaking `api`.
pub fn executor_in(api: Api, server: &RawServer) -> Executor {
    Executor::new(
        adapter_in(api, "together", server),
        contract(20_000),
        &creds(),
    )
    .unwrap()
}

/// Serves `steps` and executes one planned request against them.
pub async fn run(steps: Vec<Step>, deadline_ms: u64) -> (Execution, RawServer) {
    run_in(Api::OpenaiChat, steps, deadline_ms).await
}

/// [`run`] speaking `api`.
pub async fn run_in(api: Api, steps: Vec<Step>, deadline_ms: u64) -> (Execution, RawServer) {
    let (execution, server, _) = run_timed_in(api, steps, deadline_ms).await;
    (execution, server)
}

/// Like [`run`], also returning how long the whole `execute` call took on the test's clock, ms:
/// an upper bound of every offset the probe can report.
pub async fn run_timed(steps: Vec<Step>, deadline_ms: u64) -> (Execution, RawServer, f64) {
    run_timed_in(Api::OpenaiChat, steps, deadline_ms).await
}

/// [`run_timed`] speaking `api`.
pub async fn run_timed_in(
    api: Api,
    steps: Vec<Step>,
    deadline_ms: u64,
) -> (Execution, RawServer, f64) {
    let server = start(steps).await;
    let exec = executor_in(api, &server);
    let before = Instant::now();
    let execution = exec.execute(&planned("together", deadline_ms)).await;
    let elapsed_ms = before.elapsed().as_nanos() as f64 / 1e6;
    (execution, server, elapsed_ms)
}

/// `value` is present and within `low..=high`.
pub fn within(value: Option<f64>, low: f64, high: f64) -> bool {
    value.is_some_and(|v| (low..=high).contains(&v))
}
