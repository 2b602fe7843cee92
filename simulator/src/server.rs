//! The HTTP side: routes, replaying a plan against the clock one flushed write at a time, the
//! write log of exact-schedule requests, and graceful shutdown.

use crate::capacity::{Admission, Capacities, Capacity, CapacitySpec, CapacityStats, Slot};
use crate::coalesce::coalesce;
use crate::hostile;
use crate::prefix_cache::{self, PrefixCaches};
use crate::render::{self, DRIP_EVERY_MS, HANG_MS, Replay, Shape, Write};
use crate::request::SimRequest;
use crate::rng::Draws;
use crate::sse::{Framing, Label};
use crate::{SimConfig, SimError, profile};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use openbench_common::spec::Api;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Bodies remembered for occurrence counting before the table is reset (bounded memory).
const MAX_SEEN_BODIES: usize = 1_000_000;
/// Real milliseconds below which time-scaled output writes are merged (see `coalesce`).
const COALESCE_REAL_MS: f64 = 2.0;

/// Most request ids the write log keeps; later ids are not recorded.
const MAX_LOGGED_REQUESTS: usize = 4096;

/// When the server handed one write to the connection, relative to request receipt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WriteStamp {
    /// 0-based write index.
    pub index: usize,
    /// Microseconds from the moment the request (headers and body) was received.
    pub offset_us: u64,
    /// Bytes written.
    pub bytes: usize,
    /// What the write carried.
    pub label: Label,
}

struct Shared {
    config: SimConfig,
    cancel: CancellationToken,
    logs: Mutex<HashMap<String, Vec<WriteStamp>>>,
    /// How often each (profile, body) was seen, so a repeated request gets fresh draws.
    seen: Mutex<HashMap<(String, Vec<u8>), u64>>,
    /// Chat requests received (headers and body read), for tests that wait for one to arrive.
    received: AtomicU64,
    /// The capacity of every (profile, parameters) route that asked for one.
    capacities: Capacities,
    /// The prefix cache of every (profile, parameters) route that asked for one.
    prefix_caches: PrefixCaches,
}

impl Shared {
    /// The 0-based occurrence of this (profile, body) on this server.
    fn occurrence(&self, profile: &str, api: Api, body: &[u8]) -> u64 {
        let Ok(mut seen) = self.seen.lock() else {
            return 0;
        };
        if seen.len() >= MAX_SEEN_BODIES {
            seen.clear();
        }
        let digest = Sha256::digest(body).to_vec();
        let count = seen
            .entry((format!("{profile} {api}"), digest))
            .or_insert(0);
        let occurrence = *count;
        *count += 1;
        occurrence
    }

    fn record(&self, key: &str, stamp: WriteStamp) {
        if let Ok(mut logs) = self.logs.lock()
            && (logs.len() < MAX_LOGGED_REQUESTS || logs.contains_key(key))
        {
            logs.entry(key.to_string()).or_default().push(stamp);
        }
    }
}

/// A running simulator. Dropping it (or [`SimServer::shutdown`]) stops it.
pub struct SimServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl SimServer {
    /// The bound address (the real port when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://HOST:PORT/v1`: the OpenAI base URL of the default profile.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://HOST:PORT/profiles/<profile>/v1` with any capacity query (`?slots=2`): the base
    /// URL every dialect's path is added to (`Api::post_url` puts the query after the path).
    pub fn profile_base(&self, profile: &str) -> String {
        let (name, query) = crate::capacity::split_profile(profile);
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        format!("http://{}/profiles/{name}/v1{query}", self.addr)
    }

    /// `http://HOST:PORT/profiles/<profile>/v1/chat/completions`; a capacity query after the
    /// name (`plain?slots=2`, as a `sim://` endpoint may carry) goes after the path.
    pub fn profile_endpoint(&self, profile: &str) -> String {
        let (name, query) = crate::capacity::split_profile(profile);
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        format!(
            "http://{}/profiles/{name}/v1/chat/completions{query}",
            self.addr
        )
    }

    /// What the capacity of `profile` with `query` (`slots=2&queue=8`) has seen; `None` until a
    /// request used it.
    pub fn capacity_stats(&self, profile: &str, query: &str) -> Option<CapacityStats> {
        self.shared.capacities.stats(profile, query)
    }

    /// The writes recorded for a request that sent `x-sim-id: <request_key>`, in order.
    pub fn write_log(&self, request_key: &str) -> Vec<WriteStamp> {
        self.shared
            .logs
            .lock()
            .map(|logs| logs.get(request_key).cloned().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Chat requests received so far (headers and body read): lets a test wait until a request
    /// is in the server's hands instead of sleeping.
    pub fn requests_received(&self) -> u64 {
        self.shared.received.load(Ordering::SeqCst)
    }

    /// Stops accepting requests and ends every open response; returns at once.
    pub fn shutdown(&self) {
        self.shared.cancel.cancel();
    }

    /// Stops the server and waits until its connections are closed.
    pub async fn stopped(mut self) {
        self.shared.cancel.cancel();
        let _ = (&mut self.task).await;
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
    }
}

/// Connections the listener queues before they are accepted (the kernel caps it at
/// `net.core.somaxconn`). tokio's `TcpListener::bind` asks for 1,024: a load generator opening
/// 10,000 streams at once overflowed that queue, and the dropped handshakes were retried seconds
/// later or failed as transport errors (`bench load-generator --users 10000`).
const ACCEPT_BACKLOG: u32 = 16_384;

/// A listener on `addr` with [`ACCEPT_BACKLOG`] (and `SO_REUSEADDR`, as `TcpListener::bind` sets).
fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(ACCEPT_BACKLOG)
}

/// Binds `addr` and serves the simulator until shut down. Errors name the address; an unknown
/// default profile or a bad time scale is refused before binding.
pub async fn start(config: SimConfig, addr: SocketAddr) -> Result<SimServer, SimError> {
    if !(config.time_scale > 0.0 && config.time_scale.is_finite()) {
        return Err(SimError::TimeScale(config.time_scale));
    }
    profile::find(&config.default_profile)?;
    let listener = listen(addr).map_err(|source| SimError::Bind { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| SimError::Bind { addr, source })?;
    let shared = Arc::new(Shared {
        config,
        cancel: CancellationToken::new(),
        logs: Mutex::new(HashMap::new()),
        seen: Mutex::new(HashMap::new()),
        received: AtomicU64::new(0),
        capacities: Capacities::default(),
        prefix_caches: PrefixCaches::default(),
    });
    let router = Router::new()
        .route(
            "/health",
            get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
        )
        .route("/v1/chat/completions", post(default_profile))
        .route(
            "/profiles/{profile}/v1/chat/completions",
            post(named_profile),
        )
        .route("/v1/{route}", post(default_profile_dialect))
        .route(
            "/profiles/{profile}/v1/{route}",
            post(named_profile_dialect),
        )
        .route("/debug/writes/{id}", get(debug_writes))
        .with_state(shared.clone());
    // Every chunk is its own segment: no Nagle delay between a write and the client's read.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!("simulator: cannot set TCP_NODELAY: {e}");
        }
    });
    let cancel = shared.cancel.clone();
    let task = tokio::spawn(async move {
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(async move { cancel.cancelled().await })
            .await;
        if let Err(e) = served {
            tracing::warn!("simulator on {addr} stopped: {e}");
        }
    });
    Ok(SimServer { addr, shared, task })
}

async fn default_profile(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let name = shared.config.default_profile.clone();
    respond(shared, Api::OpenaiChat, &name, uri.query(), headers, body).await
}

/// The dialect served at `/v1/<route>`: `messages`, `responses` or `completions`.
fn route_api(route: &str) -> Option<Api> {
    Api::ALL
        .into_iter()
        .find(|api| api.path().strip_prefix('/') == Some(route))
}

async fn default_profile_dialect(
    State(shared): State<Arc<Shared>>,
    Path(route): Path<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(api) = route_api(&route) else {
        return json_error(StatusCode::NOT_FOUND, &format!("no route /v1/{route}"));
    };
    let name = shared.config.default_profile.clone();
    respond(shared, api, &name, uri.query(), headers, body).await
}

async fn named_profile_dialect(
    State(shared): State<Arc<Shared>>,
    Path((name, route)): Path<(String, String)>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(api) = route_api(&route) else {
        return json_error(StatusCode::NOT_FOUND, &format!("no route /v1/{route}"));
    };
    respond(shared, api, &name, uri.query(), headers, body).await
}

async fn named_profile(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    respond(shared, Api::OpenaiChat, &name, uri.query(), headers, body).await
}

async fn debug_writes(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let log = shared
        .logs
        .lock()
        .map(|logs| logs.get(&id).cloned())
        .unwrap_or_default();
    match log {
        Some(log) => axum::Json(log).into_response(),
        None => json_error(
            StatusCode::NOT_FOUND,
            &format!("no writes recorded for x-sim-id {id:?}"),
        ),
    }
}

fn json_error(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({"error": {"message": message, "type": "invalid_request_error"}});
    (status, axum::Json(body)).into_response()
}

/// Plans and plays one response; `query` selects a capacity (see [`crate::capacity`]).
async fn respond(
    shared: Arc<Shared>,
    api: Api,
    profile_name: &str,
    query: Option<&str>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let received = Instant::now();
    shared.received.fetch_add(1, Ordering::SeqCst);
    let profile = match profile::find(profile_name) {
        Ok(p) => p,
        Err(e) => return json_error(StatusCode::NOT_FOUND, &e.to_string()),
    };
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let mut request =
        match SimRequest::parse_as(api, &body, text("x-sim-quirk"), text("x-sim-schedule")) {
            Ok(r) => r,
            Err(e) => return json_error(StatusCode::BAD_REQUEST, &e.to_string()),
        };
    if let Some(quirk) = hostile::pick(&request.forced) {
        let bearer = text("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .or_else(|| text("x-api-key"))
            .unwrap_or("");
        let until = received + Duration::from_secs_f64(HANG_MS * shared.config.time_scale / 1000.0);
        return hostile::respond(quirk, bearer, until, shared.cancel.clone());
    }
    let query = query.unwrap_or_default();
    let capacity = match CapacitySpec::parse_query(query) {
        Ok(spec) => spec.and_then(|spec| shared.capacities.get(profile_name, spec)),
        Err(e) => return json_error(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let cache = match prefix_cache::requested(query, profile.spec.prefix_cache) {
        Ok(spec) => spec.map(|spec| {
            let key = format!("{profile_name}?{query}");
            shared
                .prefix_caches
                .get(&key, spec, shared.config.time_scale)
        }),
        Err(e) => return json_error(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    // With a capacity, the drafted timeline starts when a slot is free: the wait adds to every
    // latency. Without one, it starts at receipt, as it always has.
    let (base, slot) = match &capacity {
        None => (received, None),
        Some(capacity) => match capacity.admit(&shared.cancel).await {
            Admission::Served(slot) => (Instant::now(), Some(slot)),
            Admission::Rejected { retry_after_s } => return over_capacity(retry_after_s),
            Admission::ShutDown => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
        },
    };
    // The prefix cache is looked up when the request is served (after any wait for a slot).
    if let Some(cache) = cache.flatten() {
        let spec = profile.spec.prefix_cache;
        let blocks =
            prefix_cache::block_names(&request.model, &request.messages, spec.block_tokens);
        if let Ok(mut cache) = cache.lock() {
            request.cache = Some(cache.serve(&blocks, Instant::now()));
        }
    }
    let log_key = text("x-sim-id").map(str::to_string);
    // Counted per dialect and seeded from the dialect-neutral key: the same request sent in two
    // dialects draws the same answer and times.
    let occurrence = shared.occurrence(profile_name, api, &request.seed_key);
    let mut draws = Draws::for_occurrence(
        shared.config.seed,
        profile_name,
        &request.seed_key,
        occurrence,
    );
    let plan = render::respond(profile, &request, &shared.config.answers, &mut draws);
    let scale = if plan.exact {
        1.0
    } else {
        shared.config.time_scale
    };
    let at = |ms: f64| base + Duration::from_secs_f64((ms * scale).max(0.0) / 1000.0);
    if !sleep_until(at(plan.headers_at_ms), shared.cancel.cancelled()).await {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let Replay {
        request_id, shape, ..
    } = plan;
    let mut response = match shape {
        Shape::Error {
            status,
            headers,
            body,
        } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response =
                (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
            for (name, value) in headers {
                if let Ok(value) = HeaderValue::from_str(&value) {
                    response.headers_mut().insert(name, value);
                }
            }
            response
        }
        // Reaching here means the hang limit passed: the client gave up long ago.
        Shape::Hang => StatusCode::GATEWAY_TIMEOUT.into_response(),
        Shape::Stream { writes, drip } => {
            let writes = if scale < 1.0 {
                coalesce(writes, COALESCE_REAL_MS / scale)
            } else {
                writes
            };
            let player = Player {
                shutdown: Box::pin(shared.cancel.clone().cancelled_owned()),
                shared: shared.clone(),
                writes: writes.into_iter(),
                received,
                base,
                scale,
                last_write: None,
                index: 0,
                drip_until: drip.then(|| at(HANG_MS)),
                log_key,
                capacity,
                _slot: slot,
            };
            let stream = futures_util::stream::unfold(player, Player::next);
            let mut response = Body::from_stream(stream).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            );
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            response
        }
    };
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

/// The 429 of a full queue: `Retry-After` says when to come back.
fn over_capacity(retry_after_s: u32) -> Response {
    let body = serde_json::json!({"error": {
        "message": "Rate limit reached: all slots busy and the queue is full (simulated)",
        "type": "rate_limit_error",
        "code": "rate_limit_exceeded",
    }});
    let mut response = (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_s));
    response
}

/// Sleeps until `deadline`; false when `shutdown` (the server's) resolved first. The timer is
/// polled first, so a wait that is due never polls the shutdown's waiter (a lock on the token
/// every stream shares).
async fn sleep_until(deadline: Instant, shutdown: impl Future<Output = ()>) -> bool {
    tokio::select! {
        biased;
        _ = tokio::time::sleep_until(deadline) => true,
        _ = shutdown => false,
    }
}

/// Replays a plan's writes as a body stream, stamping each one.
struct Player {
    /// The server's shutdown, waited on beside every write's timer ([`sleep_until`]): one waiter
    /// for the whole stream, not one registered and dropped per write on the token all streams
    /// share.
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
    shared: Arc<Shared>,
    writes: std::vec::IntoIter<Write>,
    /// When the request was received: write stamps are offsets from it.
    received: Instant,
    /// When the drafted timeline starts (receipt, or the slot's grant under a capacity).
    base: Instant,
    scale: f64,
    last_write: Option<Instant>,
    index: usize,
    drip_until: Option<Instant>,
    log_key: Option<String>,
    /// The capacity whose shared token rate paces output writes.
    capacity: Option<Arc<Capacity>>,
    /// The slot this response holds, released when the stream ends or is dropped.
    _slot: Option<Slot>,
}

impl Player {
    async fn next(mut self) -> Option<(Result<Bytes, std::convert::Infallible>, Player)> {
        let (deadline, bytes, label, tokens) = match self.writes.next() {
            Some(w) => {
                let mut deadline =
                    self.base + Duration::from_secs_f64((w.at_ms * self.scale).max(0.0) / 1000.0);
                if let Some(last) = self.last_write {
                    deadline = deadline.max(last + Duration::from_secs_f64(w.min_gap_ms / 1000.0));
                }
                (deadline, w.bytes, w.label, w.tokens)
            }
            None => {
                let until = self.drip_until?;
                let every = Duration::from_secs_f64(DRIP_EVERY_MS * self.scale / 1000.0);
                let deadline = self.last_write.unwrap_or(self.base) + every;
                if deadline > until {
                    return None;
                }
                (deadline, Framing::default().comment(), Label::Comment, 0)
            }
        };
        if !sleep_until(deadline, &mut self.shutdown).await {
            return None;
        }
        // Under a shared token rate, an output write also waits for its turn, taken once due.
        let turn = self
            .capacity
            .as_ref()
            .and_then(|c| c.token_turn(Instant::now(), tokens, self.scale));
        if let Some(turn) = turn
            && !sleep_until(turn, &mut self.shutdown).await
        {
            return None;
        }
        let now = Instant::now();
        if let Some(key) = &self.log_key {
            let stamp = WriteStamp {
                index: self.index,
                offset_us: now.duration_since(self.received).as_micros() as u64,
                bytes: bytes.len(),
                label,
            };
            self.shared.record(key, stamp);
        }
        self.last_write = Some(now);
        self.index += 1;
        Some((Ok(Bytes::from(bytes)), self))
    }
}
