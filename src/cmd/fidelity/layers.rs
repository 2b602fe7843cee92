//! `bench fidelity --layer`: where the pipeline's CPU per request goes. The same lanes, rounds,
//! requests and scripted upstream as the full run, driven through fewer and fewer layers of our
//! own, so each layer's cost is the difference between two rows:
//!
//! - [`Layer::Socket`]: one persistent loopback TCP connection per lane, the request written by
//!   hand and the chunked response read until its last chunk, nothing parsed: the floor that
//!   every HTTP client pays on this machine (kernel wake-ups, the runtime's I/O driver);
//! - [`Layer::Conn`]: the same through the probe's plaintext transport
//!   ([`openbench_probe::plain_http`]): hyper's HTTP/1 connection polled inside the request's task
//!   beside the body, kept alive per lane; hyper's parsing without reqwest's hand-over of every
//!   chunk between a connection task and the request's;
//! - [`Layer::Http`]: the same through a reqwest client built as the probe builds it, reading
//!   `Response::chunk` until the end of the body (reqwest and hyper on top of the floor);
//! - [`Layer::Probe`]: the probe's own `Executor::execute` (SSE framing, classification, the
//!   token count, the terminal record and redaction), called in-process, no gRPC;
//! - the default, the full pipeline (coordinator actor, gRPC, probe, writer thread): `super::run`.
//!
//! Every layer runs paired rounds as the coordinator does: a round's lanes start together, one
//! task each, and the next round starts when all of them have ended.

use anyhow::Context;
use bytes::Bytes;
use openbench_common::credentials::Credentials;
use openbench_common::request::PlannedRequest;
use openbench_common::spec::{ProviderAdapter, RequestContract};
use openbench_coordinator::round_jobs::RoundJob;
use openbench_probe::Executor;
use openbench_probe::body::{build_body, build_headers};
use openbench_probe::plain_http::PlainPool;
use reqwest::header::HeaderMap;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What `bench fidelity --layer` drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// The whole pipeline: coordinator actor, gRPC, probe, writer thread (the default).
    Pipeline,
    /// The probe's executor called in-process: no coordinator, gRPC or writer.
    Probe,
    /// A reqwest client reading the raw body: no SSE framing, no record.
    Http,
    /// The probe's plaintext transport (hyper's HTTP/1 connection in the request's task),
    /// reading the raw body.
    Conn,
    /// Hand-written HTTP/1.1 on one kept-alive TCP connection per lane: the floor.
    Socket,
}

/// How long a layer waits for one response before it counts it as failed.
const DEADLINE: Duration = Duration::from_secs(20);

/// What one layer run counted.
#[derive(Debug, Default)]
pub struct LayerOutcome {
    /// Requests sent.
    pub requests: usize,
    /// Requests whose whole response was read and looked complete (`[DONE]` seen, status 200).
    pub completed: usize,
    /// Reads (socket and HTTP layers) or SSE events (probe layer) over all requests.
    pub reads: usize,
    /// The first failure, to print.
    pub first_failure: Option<String>,
}

impl LayerOutcome {
    fn add(&mut self, result: Result<usize, String>) {
        self.requests += 1;
        match result {
            Ok(reads) => {
                self.completed += 1;
                self.reads += reads;
            }
            Err(e) => {
                self.first_failure.get_or_insert(e);
            }
        }
    }
}

/// Everything a layer needs: the plan's remaining rounds (their requests are built one round at
/// a time, as the coordinator builds them, so a large plan costs no more here than in a run),
/// the providers' adapters and the request contract.
pub struct LayerWork {
    /// Rounds in order.
    pub jobs: Vec<RoundJob>,
    /// Every provider's adapter, by key.
    pub adapters: HashMap<String, Arc<ProviderAdapter>>,
    /// The spec's request contract.
    pub contract: RequestContract,
}

/// Makes each lane's client for `layer` (not [`Layer::Pipeline`], which is the full run): the
/// probe's executor, a reqwest client or a connected socket. Part of the measured window, as a
/// real run's session opening is part of the pipeline's.
pub async fn prepare(layer: Layer, work: &LayerWork) -> anyhow::Result<Prepared> {
    let mut lanes = HashMap::new();
    for adapter in work.adapters.values() {
        let lane = match layer {
            Layer::Pipeline => anyhow::bail!("the pipeline layer is the full run"),
            Layer::Probe => LaneDriver::Probe(Executor::new(
                (**adapter).clone(),
                work.contract.clone(),
                &Credentials::empty(),
            )?),
            Layer::Http => LaneDriver::Http {
                client: http_client()?,
                headers: build_headers(adapter, &Credentials::empty())?,
            },
            Layer::Conn => LaneDriver::Conn(ConnLane::new(adapter)?),
            Layer::Socket => {
                let address = socket_address(&adapter.endpoint)?;
                let stream = TcpStream::connect(&address)
                    .await
                    .with_context(|| format!("connecting to {address}"))?;
                stream.set_nodelay(true)?;
                LaneDriver::Socket {
                    head: request_head(adapter)?,
                    stream: Arc::new(tokio::sync::Mutex::new(stream)),
                }
            }
        };
        lanes.insert(adapter.key.clone(), lane);
    }
    Ok(Prepared {
        lanes: Arc::new(lanes),
        adapters: work.adapters.clone(),
        contract: Arc::new(work.contract.clone()),
    })
}

/// A layer's per-lane clients, made before the clock starts.
pub struct Prepared {
    lanes: Arc<HashMap<String, LaneDriver>>,
    adapters: HashMap<String, Arc<ProviderAdapter>>,
    contract: Arc<RequestContract>,
}

/// How one lane sends a request in a layer.
enum LaneDriver {
    Probe(Executor),
    Http {
        client: reqwest::Client,
        headers: HeaderMap,
    },
    Conn(ConnLane),
    Socket {
        /// Request line and headers, up to the content length.
        head: String,
        stream: Arc<tokio::sync::Mutex<TcpStream>>,
    },
}

impl Prepared {
    /// Runs the rounds, paired: every lane of a round at once, the next round when all ended.
    pub async fn run(&self, jobs: &[RoundJob]) -> anyhow::Result<LayerOutcome> {
        let mut outcome = LayerOutcome::default();
        for job in jobs {
            let mut tasks = Vec::with_capacity(job.len());
            for (lane, request) in job.requests() {
                let adapter = self
                    .adapters
                    .get(&lane.provider)
                    .with_context(|| format!("the plan names provider {}", lane.provider))?
                    .clone();
                let lanes = self.lanes.clone();
                let contract = self.contract.clone();
                tasks.push(tokio::spawn(async move {
                    match lanes.get(&adapter.key) {
                        None => Err(format!("no client for {}", adapter.key)),
                        Some(driver) => driver.call(&adapter, &contract, &request).await,
                    }
                }));
            }
            for task in tasks {
                outcome.add(task.await?);
            }
        }
        Ok(outcome)
    }
}

impl LaneDriver {
    /// One request; the count of reads (or events) on success. The socket and HTTP layers
    /// encode the body as the executor does, inside the call.
    async fn call(
        &self,
        adapter: &ProviderAdapter,
        contract: &RequestContract,
        request: &PlannedRequest,
    ) -> Result<usize, String> {
        let body = || {
            serde_json::to_vec(&build_body(adapter, contract, &request.messages))
                .map_err(|e| e.to_string())
        };
        match self {
            LaneDriver::Probe(executor) => {
                let execution = executor.execute(request).await;
                let record = &execution.record;
                if record.outcome == openbench_common::record::Outcome::Completed {
                    Ok(execution.events.len())
                } else {
                    Err(format!("{}: {:?}", adapter.key, record.error_message))
                }
            }
            LaneDriver::Http { client, headers } => {
                let sent = client
                    .post(adapter.endpoint.as_str())
                    .headers(headers.clone())
                    .body(body()?)
                    .send();
                let read = async {
                    let mut response = sent.await.map_err(|e| e.to_string())?;
                    if !response.status().is_success() {
                        return Err(format!("{}: HTTP {}", adapter.key, response.status()));
                    }
                    let mut tail = Tail::default();
                    while let Some(bytes) = response.chunk().await.map_err(|e| e.to_string())? {
                        tail.push(&bytes);
                    }
                    tail.done().map_err(|e| format!("{}: {e}", adapter.key))
                };
                tokio::time::timeout(DEADLINE, read)
                    .await
                    .map_err(|_| format!("{}: no end within {DEADLINE:?}", adapter.key))?
            }
            LaneDriver::Conn(lane) => lane.call(&adapter.key, body()?).await,
            LaneDriver::Socket { head, stream } => {
                let body = body()?;
                let mut stream = stream.lock().await;
                let head = format!("{head}content-length: {}\r\n\r\n", body.len());
                let exchange = async {
                    stream.write_all(head.as_bytes()).await?;
                    stream.write_all(&body).await?;
                    read_chunked_response(&mut stream).await
                };
                tokio::time::timeout(DEADLINE, exchange)
                    .await
                    .map_err(|_| format!("{}: no end within {DEADLINE:?}", adapter.key))?
                    .map_err(|e| format!("{}: {e}", adapter.key))
            }
        }
    }
}

/// One lane's plaintext transport as the probe's executor builds it for an `http://` endpoint:
/// hyper's connection polled in the request's task, kept alive between requests.
struct ConnLane {
    pool: Arc<PlainPool>,
    headers: HeaderMap,
}

impl ConnLane {
    fn new(adapter: &ProviderAdapter) -> anyhow::Result<ConnLane> {
        let url = reqwest::Url::parse(&adapter.endpoint)
            .with_context(|| format!("the endpoint of {}", adapter.key))?;
        anyhow::ensure!(
            url.scheme() == "http",
            "the conn layer needs an http:// endpoint, not {}",
            adapter.endpoint
        );
        let pool = PlainPool::new(&url, 1)
            .map_err(|e| anyhow::anyhow!("the endpoint of {}: {e}", adapter.key))?;
        Ok(ConnLane {
            pool: Arc::new(pool),
            headers: build_headers(adapter, &Credentials::empty())?,
        })
    }

    /// One request, its body read to the end.
    async fn call(&self, provider: &str, body: Vec<u8>) -> Result<usize, String> {
        let request = self.pool.request(&self.headers, Bytes::from(body));
        let exchange = async {
            let (sent, _) = self.pool.send(request, false).await;
            let mut response = sent.map_err(|e| e.to_string())?;
            if !response.status.is_success() {
                return Err(format!("HTTP {}", response.status));
            }
            let mut tail = Tail::default();
            while let Some(bytes) = response.chunk().await.map_err(|e| e.to_string())? {
                tail.push(&bytes);
            }
            tail.done()
        };
        tokio::time::timeout(DEADLINE, exchange)
            .await
            .map_err(|_| format!("{provider}: no end within {DEADLINE:?}"))?
            .map_err(|e| format!("{provider}: {e}"))
    }
}

/// A reqwest client configured as the probe's executor configures its own.
fn http_client() -> anyhow::Result<reqwest::Client> {
    openbench_probe::executor::provider_client()
        .build()
        .context("building the HTTP layer's client")
}

/// `host:port` of an `http://host:port/...` endpoint.
fn socket_address(endpoint: &str) -> anyhow::Result<String> {
    let rest = endpoint
        .strip_prefix("http://")
        .with_context(|| format!("the socket layer needs an http:// endpoint, not {endpoint}"))?;
    Ok(rest.split('/').next().unwrap_or(rest).to_string())
}

/// The HTTP/1.1 request line and the headers the probe would send (its adapter's), up to the
/// content length, which each request adds with the blank line. Keep-alive is HTTP/1.1's
/// default.
fn request_head(adapter: &ProviderAdapter) -> anyhow::Result<String> {
    let headers = build_headers(adapter, &Credentials::empty())?;
    let url = reqwest::Url::parse(&adapter.endpoint)
        .with_context(|| format!("the endpoint of {}", adapter.key))?;
    let host = url.host_str().unwrap_or("127.0.0.1");
    let port = url.port_or_known_default().unwrap_or(80);
    let mut head = format!("POST {} HTTP/1.1\r\nhost: {host}:{port}\r\n", url.path());
    for (name, value) in &headers {
        let value = value
            .to_str()
            .with_context(|| format!("header {name} of {}", adapter.key))?;
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    Ok(head)
}

/// Reads one response of status 200 with a chunked body until its last chunk; returns the
/// number of reads. Nothing is parsed beyond what finding the end takes.
async fn read_chunked_response(stream: &mut TcpStream) -> std::io::Result<usize> {
    let mut buf = vec![0u8; 16 * 1024];
    let mut tail = Tail::default();
    let mut first = true;
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the connection closed before the last chunk",
            ));
        }
        let bytes = &buf[..n];
        if first {
            first = false;
            if !bytes.starts_with(b"HTTP/1.1 200") {
                let line = String::from_utf8_lossy(&bytes[..n.min(40)]).into_owned();
                return Err(std::io::Error::other(format!(
                    "unexpected response {line:?}"
                )));
            }
        }
        tail.push(bytes);
        if tail.saw_done && tail.ends_with(b"\r\n0\r\n\r\n") {
            return Ok(tail.reads);
        }
    }
}

/// The last bytes of a stream seen so far, enough to find `[DONE]` and the chunked terminator
/// across read boundaries, and the number of reads.
#[derive(Default)]
struct Tail {
    last: Vec<u8>,
    saw_done: bool,
    reads: usize,
}

impl Tail {
    const KEEP: usize = 16;

    fn push(&mut self, bytes: &[u8]) {
        self.reads += 1;
        if !self.saw_done {
            // `[DONE]` inside this read, or across the previous read and this one.
            let mut joint = [0u8; 2 * Self::KEEP];
            let (kept, head) = (self.last.len(), bytes.len().min(Self::KEEP));
            joint[..kept].copy_from_slice(&self.last);
            joint[kept..kept + head].copy_from_slice(&bytes[..head]);
            self.saw_done =
                contains(bytes, b"[DONE]") || contains(&joint[..kept + head], b"[DONE]");
        }
        self.last
            .extend_from_slice(&bytes[bytes.len().saturating_sub(Self::KEEP)..]);
        let excess = self.last.len().saturating_sub(Self::KEEP);
        self.last.drain(..excess);
    }

    /// The number of reads of a body that ended: complete only if it held `[DONE]`.
    fn done(&self) -> Result<usize, String> {
        if self.saw_done {
            Ok(self.reads)
        } else {
            Err("the body ended without [DONE]".to_string())
        }
    }

    fn ends_with(&self, suffix: &[u8]) -> bool {
        self.last.ends_with(suffix)
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_finds_done_and_the_terminator_across_reads() {
        let mut tail = Tail::default();
        tail.push(b"HTTP/1.1 200 OK\r\n\r\n1a\r\ndata: {\"x\":1}\n\n\r\n");
        assert!(!tail.saw_done);
        tail.push(b"e\r\ndata: [DO");
        assert!(!tail.saw_done);
        tail.push(b"NE]\n\n\r\n0\r\n");
        assert!(tail.saw_done);
        assert!(!tail.ends_with(b"\r\n0\r\n\r\n"));
        tail.push(b"\r\n");
        assert!(tail.ends_with(b"\r\n0\r\n\r\n"));
    }

    #[test]
    fn socket_address_is_host_and_port() {
        assert_eq!(
            socket_address("http://127.0.0.1:8080/v1/chat/completions").unwrap(),
            "127.0.0.1:8080"
        );
        assert!(socket_address("https://example.test/v1").is_err());
    }
}
