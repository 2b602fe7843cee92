//! The timed executor: one attempt of one streaming chat request, measured on a monotonic clock,
//! ending in exactly one terminal record whatever happens.
//!
//! Clock zero is taken immediately before the request is handed to the transport
//! ([`crate::transport`]: reqwest for `https://`, hyper's connection in this task for `http://`).
//! One absolute deadline covers connect, headers and the whole stream: every await below is
//! bounded by the same `tokio::time::Instant`, so keep-alive comments never extend it. Each body
//! read is stamped the moment it arrives, before any parsing.

use crate::body::build_headers;
use crate::credentials::Credentials;
use crate::dialect::classify;
use crate::error::ProbeError;
use crate::limits::{over_events, over_text};
use crate::record::{Ending, Exchange, StreamState, finalize};
use crate::redact::Redactor;
use crate::sse::{SseDecoder, SseFrame};
use crate::transport::{Response, Transport};
use openbench_common::limits::StreamLimits;
use openbench_common::record::{Classification, ErrorType, Execution, Outcome, TerminalRecord};
use openbench_common::request::PlannedRequest;
use openbench_common::spec::{Api, ProviderAdapter, RequestContract};
use reqwest::header::HeaderMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};
use tokio::time::timeout_at;

/// Response headers that carry the provider's request id, in order of preference.
pub const REQUEST_ID_HEADERS: &[&str] = &[
    "x-request-id",
    "request-id",
    "x-amzn-requestid",
    "x-amz-request-id",
    "x-correlation-id",
    "x-trace-id",
    "cf-ray",
];

/// How long a pooled connection to a provider may sit idle before it is dropped instead of
/// reused. Servers close idle keep-alive connections on their own clock (llama.cpp's
/// `llama-server`, through cpp-httplib, after 5 s; Python's httpx client also expires them at
/// 5 s); a request sent on a connection the server is closing at that moment fails as
/// "connection closed before message completed", which one attempt would charge to the
/// provider. Dropping ours first, with a second of margin, keeps the persistent pool
/// (METHODOLOGY §1) for back-to-back rounds and opens a fresh connection (inside the deadline,
/// counted in TTFO like any connect) after a longer pause.
pub const POOL_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(4);

pub use crate::transport::provider_client;

/// Executes timed requests for one provider over one persistent connection pool. Cheap to clone
/// (the client and adapter are shared).
#[derive(Clone, Debug)]
pub struct Executor {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    adapter: ProviderAdapter,
    contract: RequestContract,
    transport: Transport,
    redactor: Redactor,
    /// Requests of this executor between their send and the end of [`Executor::execute`]: a
    /// connection one of them holds may go back to the pool at any moment.
    active: AtomicU32,
    /// When this executor's last request ended: a connection it used may sit in the pool until
    /// [`POOL_IDLE_TIMEOUT`] after that.
    last_end: std::sync::Mutex<Option<Instant>>,
}

impl Executor {
    /// An executor for one provider that runs one request at a time: [`Executor::for_lane`]
    /// with one request in flight.
    pub fn new(
        adapter: ProviderAdapter,
        contract: RequestContract,
        credentials: &Credentials,
    ) -> Result<Executor, ProbeError> {
        Executor::for_lane(adapter, contract, credentials, 1)
    }

    /// An executor for one provider lane with up to `max_in_flight` requests at once (0 reads as
    /// 1): checks the endpoint and credentials, builds the headers and one HTTP client (rustls,
    /// no redirects, no client retries, no proxy, a pool that keeps up to `max_in_flight` idle
    /// connections, no warm-up request; plaintext endpoints through [`crate::plain_http`]). Also
    /// builds the tokenizer now so no measurement pays for it.
    pub fn for_lane(
        adapter: ProviderAdapter,
        contract: RequestContract,
        credentials: &Credentials,
        max_in_flight: u32,
    ) -> Result<Executor, ProbeError> {
        let bad = |message: String| ProbeError::Adapter {
            provider: adapter.key.clone(),
            message,
        };
        if !(adapter.endpoint.starts_with("http://") || adapter.endpoint.starts_with("https://")) {
            return Err(bad(format!(
                "endpoint {:?} must be a resolved http(s) URL",
                adapter.endpoint
            )));
        }
        let url = reqwest::Url::parse(&adapter.endpoint)
            .map_err(|e| bad(format!("endpoint is not a valid URL: {e}")))?;
        let headers = build_headers(&adapter, credentials)?;
        let transport =
            Transport::new(&url, headers, max_in_flight).map_err(|message| ProbeError::Client {
                provider: adapter.key.clone(),
                message,
            })?;
        let redactor = Redactor::new(credentials).map_err(|e| bad(e.to_string()))?;
        openbench_common::tokenizer::warm_up();
        Ok(Executor {
            inner: Arc::new(Inner {
                adapter,
                contract,
                transport,
                redactor,
                active: AtomicU32::new(0),
                last_end: std::sync::Mutex::new(None),
            }),
        })
    }

    /// The provider this executor serves.
    pub fn adapter(&self) -> &ProviderAdapter {
        &self.inner.adapter
    }

    /// The request contract it applies.
    pub fn contract(&self) -> &RequestContract {
        &self.inner.contract
    }

    /// Executes one planned request: one attempt, never retried, never panicking (only a request
    /// whose pooled connection the server closed unread is sent once more, on a new connection;
    /// docs/methodology.md §9). Every failure is a record; every string in it is redacted. The
    /// deadline is `req.deadline_ms`, or the contract's `timeout_ms` when that is 0.
    pub async fn execute(&self, req: &PlannedRequest) -> Execution {
        self.execute_released(req, None).await
    }

    /// [`Executor::execute`] of an open-loop request released at `release`: the request is
    /// built first, the send (and its clock) starts at the release ([`crate::release`]), and the
    /// record's `send_lag_ms` says how late it started. `None` sends at once, as `execute`.
    pub async fn execute_released(
        &self,
        req: &PlannedRequest,
        release: Option<Instant>,
    ) -> Execution {
        let inner = &self.inner;
        let deadline_ms = if req.deadline_ms > 0 {
            req.deadline_ms
        } else {
            inner.contract.timeout_ms
        };
        let mut record = TerminalRecord::new(String::new(), Outcome::Completed);
        record.set_identity(&req.identity);
        record.requested_model.clone_from(&inner.adapter.model);
        record.offered_tool = req.tool.as_ref().map(|t| t.name.clone());

        let mut body = crate::dialect::build_body(
            &inner.adapter,
            &inner.contract,
            &req.messages,
            req.output.as_ref(),
        );
        let ceiling = crate::dialect::ceiling(&inner.adapter, &body);
        let offered = crate::dialect::tools::check_messages(inner.adapter.api, &req.messages)
            .and_then(|()| {
                crate::dialect::tools::offer_all(&mut body, inner.adapter.api, &req.offered_tools())
            })
            .map_err(|e| e.to_string());
        // The request and a second copy for the one resend, made off the clock.
        let request = offered
            .and_then(|()| serde_json::to_vec(&body).map_err(|e| e.to_string()))
            .and_then(|bytes| inner.transport.prepare(bytes));
        let mut state = StreamState::default();
        let mut exchange = Exchange::default();
        let ending = match request {
            Err(message) => {
                record.started_at = openbench_common::clock::now_rfc3339();
                Ending::Transport {
                    error_type: ErrorType::Transport,
                    message: format!("cannot build the request: {message}"),
                }
            }
            Ok(mut request) => {
                if let Some(due) = release {
                    crate::release::wait_until(due).await;
                }
                inner.active.fetch_add(1, Ordering::AcqRel);
                let wall = SystemTime::now();
                let zero = Instant::now();
                if let Some(due) = release {
                    record.send_lag_ms = Some(crate::release::lag_ms(due, zero));
                }
                let ending = self
                    .timed(&mut request, zero, deadline_ms, &mut state, &mut exchange)
                    .await;
                record.started_at = openbench_common::clock::rfc3339_utc(wall);
                if let Ok(mut last_end) = inner.last_end.lock() {
                    // Stamped under the lock: of requests ending together, the latest stays.
                    *last_end = Some(Instant::now());
                }
                inner.active.fetch_sub(1, Ordering::AcqRel);
                ending
            }
        };
        crate::dialect::settle_finish(inner.adapter.api, &mut state, ceiling);
        let mut execution = finalize(record, state, exchange, &ending);
        inner.redactor.redact_execution(&mut execution);
        execution
    }

    /// True when a connection of this executor's may be in reqwest's pool, so a send may have
    /// gone out on a reused connection (reqwest does not say; the plain transport knows): another
    /// request of this executor is under way (its connection goes back to the pool when its body
    /// ends, before it counts as ended), or one ended less than [`POOL_IDLE_TIMEOUT`] ago. Called
    /// by a request that already counts itself active.
    fn may_reuse_a_connection(&self) -> bool {
        let others = self.inner.active.load(Ordering::Acquire) > 1;
        others
            || self
                .inner
                .last_end
                .lock()
                .ok()
                .and_then(|last| *last)
                .is_some_and(|end| end.elapsed() < POOL_IDLE_TIMEOUT)
    }

    /// The measured part: send, headers, stream; returns how it ended.
    async fn timed(
        &self,
        request: &mut crate::transport::Prepared,
        zero: Instant,
        deadline_ms: u64,
        state: &mut StreamState,
        exchange: &mut Exchange,
    ) -> Ending {
        let deadline = tokio::time::Instant::from_std(zero + Duration::from_millis(deadline_ms));
        let transport = &self.inner.transport;
        let may_reuse = self.may_reuse_a_connection();
        let first = timeout_at(deadline, transport.send(request, false, may_reuse)).await;
        // A server may close a kept-alive connection just as the next request goes out on it
        // (llama-server closes it ≈ 100 ms after each stream, unread): that request never
        // reached the provider, so it goes out once more, on a new connection, on the same clock.
        // With several requests in flight the pool may hold other idle connections the server
        // is closing too, so the resend never takes a pooled one.
        let resend = matches!(&first, Ok((Err(e), true)) if e.closed_before_any_response());
        let mut sent = first.map(|(sent, _)| sent);
        if resend {
            exchange.resent_on_fresh_connection = true;
            sent = timeout_at(deadline, transport.send(request, true, false))
                .await
                .map(|(sent, _)| sent);
        }
        let at = zero.elapsed();
        let mut response = match sent {
            Err(_) => {
                exchange.end_at = Some(at);
                return Ending::Timeout {
                    message: format!("no response headers within the {deadline_ms} ms deadline"),
                };
            }
            Ok(Err(e)) => {
                exchange.end_at = Some(at);
                let error_type = if e.is_connect() {
                    ErrorType::Connect
                } else {
                    ErrorType::Transport
                };
                return Ending::Transport {
                    error_type,
                    message: e.message(),
                };
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        exchange.status = Some(status);
        exchange.headers_at = Some(at);
        capture_headers(response.headers(), exchange);
        let limits = &self.inner.contract.limits;
        if !response.status().is_success() {
            let body = read_error_body(&mut response, deadline, limits).await;
            let message = error_message(status, &self.inner.redactor.snippet(&body));
            exchange.end_at = Some(zero.elapsed());
            return Ending::Http { status, message };
        }
        let read = Read {
            zero,
            deadline,
            deadline_ms,
            limits,
            redactor: &self.inner.redactor,
            api: self.inner.adapter.api,
        };
        read_stream(response, &read, state, exchange).await
    }
}

/// The clock and bounds of one stream read.
struct Read<'a> {
    zero: Instant,
    deadline: tokio::time::Instant,
    deadline_ms: u64,
    limits: &'a StreamLimits,
    /// Provider texts are redacted before they are cut to a snippet.
    redactor: &'a Redactor,
    /// The dialect each event is read in.
    api: Api,
}

/// Reads and frames the 2xx body until `[DONE]`, a provider error, a failure, a limit, the end
/// of the body or the deadline.
async fn read_stream(
    mut response: Response,
    read_bounds: &Read<'_>,
    state: &mut StreamState,
    exchange: &mut Exchange,
) -> Ending {
    let Read {
        zero,
        deadline,
        deadline_ms,
        limits,
        redactor,
        api,
    } = *read_bounds;
    let mut decoder = SseDecoder::with_limits(limits);
    let mut frames = Vec::new();
    // One timer for the whole stream: the deadline never moves, and a timer made per read (as
    // `timeout_at` does) is entered into and taken out of the runtime's timer wheel at every
    // chunk. The read is polled first, as `timeout_at` polls it.
    let expiry = tokio::time::sleep_until(deadline);
    let mut expiry = std::pin::pin!(expiry);
    loop {
        let read = tokio::select! {
            biased;
            read = response.chunk() => Ok(read),
            () = &mut expiry => Err(()),
        };
        let at = zero.elapsed();
        exchange.end_at = Some(at);
        let bytes = match read {
            Err(_) => {
                return Ending::Timeout {
                    message: format!(
                        "stream not finished within the {deadline_ms} ms deadline ({} events kept)",
                        state.events.len()
                    ),
                };
            }
            Ok(Err(e)) => {
                let message = format!("body read failed: {e}");
                // METHODOLOGY §4: a final finish_reason is completion; the drop is flagged.
                return if state.finish_reason.is_some() {
                    Ending::CompletedAbruptly {
                        message: format!("after the final finish_reason, {message}"),
                    }
                } else {
                    Ending::Transport {
                        error_type: ErrorType::Transport,
                        message,
                    }
                };
            }
            Ok(Ok(None)) => {
                if let Some(event) = decoder.finish(at) {
                    frames.push(SseFrame::Event(event));
                    if let Some(ending) = process(&mut frames, state, limits, redactor, api) {
                        return ending;
                    }
                }
                return if state.finished() {
                    Ending::Completed
                } else {
                    Ending::Transport {
                        error_type: ErrorType::TruncatedStream,
                        message: format!(
                            "stream ended with neither [DONE] nor a finish_reason ({} events)",
                            state.events.len()
                        ),
                    }
                };
            }
            Ok(Ok(Some(bytes))) => bytes,
        };
        let framed = decoder.feed(&bytes, at, &mut frames);
        if let Some(ending) = process(&mut frames, state, limits, redactor, api) {
            if state.saw_done {
                drain(response, deadline).await;
            }
            return ending;
        }
        if let Err(e) = framed {
            return Ending::Transport {
                error_type: e.error_type(),
                message: e.to_string(),
            };
        }
    }
}

/// Folds framed items into the state; returns an ending when one of them ends the stream or
/// would pass a limit (that one is not kept). The one fold for every dialect (`api`).
pub(crate) fn process(
    frames: &mut Vec<SseFrame>,
    state: &mut StreamState,
    limits: &StreamLimits,
    redactor: &Redactor,
    api: Api,
) -> Option<Ending> {
    for frame in frames.drain(..) {
        if let Some(ending) = over_events(state, limits) {
            return Some(ending);
        }
        match frame {
            SseFrame::Comment { at, .. } => state.push_comment(at),
            SseFrame::Event(event) => match classify(api, event.event.as_deref(), &event.data) {
                Err(e) => {
                    return Some(Ending::Transport {
                        error_type: ErrorType::InvalidSse,
                        message: format!("{e}: {}", redactor.snippet(&e.data)),
                    });
                }
                Ok(chunk) => {
                    if let Some(ending) = over_text(state, &chunk, limits) {
                        return Some(ending);
                    }
                    let error = chunk.error.clone();
                    let error_type = chunk.error_type;
                    let classification = chunk.classification;
                    let label = if event.event.as_deref() == Some("error") {
                        "event: error: "
                    } else {
                        ""
                    };
                    state.push_chunk(event.at, event.event, chunk);
                    match classification {
                        Classification::Error => {
                            // The text so far may hold the start of a secret the error ends.
                            let before = redactor.response_tail(&state.events);
                            let text = error.unwrap_or_else(|| "provider error".into());
                            return Some(Ending::Stream {
                                message: format!(
                                    "{label}{}",
                                    redactor.snippet_after(&before, &text)
                                ),
                                error_type,
                            });
                        }
                        Classification::Done => return Some(Ending::Completed),
                        _ => {}
                    }
                }
            },
        }
    }
    None
}

/// How long, after `[DONE]`, the executor waits off the clock for the end of the body.
const DRAIN_LIMIT: Duration = Duration::from_millis(50);

/// After `[DONE]` (everything already stamped), reads what is left of the body so the connection
/// goes back to the pool instead of being closed; bounded by [`DRAIN_LIMIT`] and the deadline.
async fn drain(mut response: Response, deadline: tokio::time::Instant) {
    let limit = deadline.min(tokio::time::Instant::now() + DRAIN_LIMIT);
    let _ = timeout_at(limit, async {
        while let Ok(Some(_)) = response.chunk().await {}
    })
    .await;
}

/// Reads at most `limits.error_body_bytes` of an error body within the deadline (the rest is
/// never read); the caller redacts it, then cuts it.
async fn read_error_body(
    response: &mut Response,
    deadline: tokio::time::Instant,
    limits: &StreamLimits,
) -> String {
    let limit = usize::try_from(limits.error_body_bytes).unwrap_or(usize::MAX);
    let mut body = Vec::new();
    while body.len() < limit {
        match timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(bytes))) => {
                let room = limit - body.len();
                body.extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// `HTTP <status>: <snippet>` of a non-2xx response.
fn error_message(status: u16, snippet: &str) -> String {
    let redirect = if (300..400).contains(&status) {
        " (redirects are not followed)"
    } else {
        ""
    };
    if snippet.is_empty() {
        format!("HTTP {status}{redirect}")
    } else {
        format!("HTTP {status}{redirect}: {snippet}")
    }
}

/// Keeps the provider's request id and the rate-limit headers (lower-case names).
fn capture_headers(headers: &HeaderMap, exchange: &mut Exchange) {
    exchange.provider_request_id = REQUEST_ID_HEADERS.iter().find_map(|name| {
        headers
            .get(*name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    });
    for (name, value) in headers {
        let name = name.as_str();
        let keep = name.starts_with("x-ratelimit-")
            || name.starts_with("ratelimit")
            || name.starts_with("x-rate-limit-")
            || name == "retry-after"
            || name == "retry-after-ms";
        if keep && let Ok(v) = value.to_str() {
            exchange
                .rate_limit_headers
                .insert(name.to_string(), v.to_string());
        }
    }
}
