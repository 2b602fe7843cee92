//! How the executor reaches its provider, behind one face: a request prepared off the clock, a
//! send that says whether it may have gone out on a reused connection, a response read piece by
//! piece. `https://` goes through reqwest (rustls, HTTP/2 where ALPN offers it); `http://`
//! through hyper's HTTP/1.1 connection polled in the request's own task ([`crate::plain_http`]),
//! which saves a task hand-over on every chunk.

use crate::plain_http::{PlainError, PlainPool, PlainResponse};
use bytes::Bytes;
use http_body_util::Full;
use openbench_common::error_text::error_chain;
use reqwest::header::HeaderMap;
use std::sync::Arc;

/// How the probe's HTTP client to a provider is configured: rustls, no redirects, no client
/// retries, no proxy, pooled connections dropped after
/// [`crate::executor::POOL_IDLE_TIMEOUT`] idle. One place, so `bench fidelity --layer http`
/// measures the same client the executor uses for `https://`.
pub fn provider_client() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never())
        .pool_idle_timeout(crate::executor::POOL_IDLE_TIMEOUT)
        .no_proxy()
}

/// One executor's way to its provider.
#[derive(Debug)]
pub(crate) enum Transport {
    /// reqwest's pooled client, and with more than one request in flight a client that never
    /// pools, for the one resend (with one request at a time the pool's only connection is the
    /// one that just failed, so the resend always opens a fresh one).
    Reqwest {
        client: reqwest::Client,
        fresh: Option<reqwest::Client>,
        url: reqwest::Url,
        headers: HeaderMap,
    },
    /// Plaintext HTTP/1.1 in the request's task.
    Plain {
        pool: Arc<PlainPool>,
        headers: HeaderMap,
    },
}

impl Transport {
    /// The transport for `url`, keeping up to `max_idle` idle connections (at least one).
    pub(crate) fn new(
        url: &reqwest::Url,
        headers: HeaderMap,
        max_idle: u32,
    ) -> Result<Transport, String> {
        let idle = usize::try_from(max_idle.max(1)).unwrap_or(usize::MAX);
        if url.scheme() == "http" {
            return Ok(Transport::Plain {
                pool: Arc::new(PlainPool::new(url, idle)?),
                headers,
            });
        }
        let build = |builder: reqwest::ClientBuilder| {
            builder.build().map_err(|e| error_chain(&e.without_url()))
        };
        let client = build(provider_client().pool_max_idle_per_host(idle))?;
        let fresh = if max_idle > 1 {
            Some(build(provider_client().pool_max_idle_per_host(0))?)
        } else {
            None
        };
        Ok(Transport::Reqwest {
            client,
            fresh,
            url: url.clone(),
            headers,
        })
    }

    /// The request and its spare copy for the one resend, built before the clock starts.
    pub(crate) fn prepare(&self, body: Vec<u8>) -> Result<Prepared, String> {
        match self {
            Transport::Reqwest {
                client,
                url,
                headers,
                ..
            } => {
                let request = client
                    .post(url.clone())
                    .headers(headers.clone())
                    .body(body)
                    .build()
                    .map_err(|e| error_chain(&e.without_url()))?;
                let spare = request.try_clone();
                Ok(Prepared::Reqwest {
                    request: Some(request),
                    spare,
                })
            }
            Transport::Plain { pool, headers } => {
                let body = Bytes::from(body);
                Ok(Prepared::Plain {
                    request: Some(pool.request(headers, body.clone())),
                    spare: Some(pool.request(headers, body)),
                })
            }
        }
    }

    /// Sends the prepared request (with `resend`, its spare copy on a fresh connection) and
    /// waits for the response head. Also says whether it may have gone out on a reused
    /// connection: reqwest does not say, so `may_reuse` is the executor's guess there; the
    /// plain transport knows.
    pub(crate) async fn send(
        &self,
        prepared: &mut Prepared,
        resend: bool,
        may_reuse: bool,
    ) -> (Result<Response, SendError>, bool) {
        match (self, prepared) {
            (Transport::Reqwest { client, fresh, .. }, Prepared::Reqwest { request, spare }) => {
                let (request, client) = if resend {
                    (spare.take(), fresh.as_ref().unwrap_or(client))
                } else {
                    (request.take(), client)
                };
                let Some(request) = request else {
                    return (Err(SendError::Spent), false);
                };
                let sent = client.execute(request).await;
                (
                    sent.map(Response::Reqwest).map_err(SendError::Reqwest),
                    may_reuse,
                )
            }
            (Transport::Plain { pool, .. }, Prepared::Plain { request, spare }) => {
                let request = if resend { spare.take() } else { request.take() };
                let Some(request) = request else {
                    return (Err(SendError::Spent), false);
                };
                let (sent, reused) = pool.send(request, resend).await;
                (sent.map(Response::Plain).map_err(SendError::Plain), reused)
            }
            _ => (Err(SendError::Spent), false),
        }
    }
}

/// A request made ready off the clock, with the copy for the one resend.
pub(crate) enum Prepared {
    Reqwest {
        request: Option<reqwest::Request>,
        spare: Option<reqwest::Request>,
    },
    Plain {
        request: Option<hyper::Request<Full<Bytes>>>,
        spare: Option<hyper::Request<Full<Bytes>>>,
    },
}

/// Why a send got no response head.
#[derive(Debug)]
pub(crate) enum SendError {
    Reqwest(reqwest::Error),
    Plain(PlainError),
    /// The request (or its spare) was already sent: a mistake of ours, never seen.
    Spent,
}

impl SendError {
    /// A failure to connect (charged as `connect`, not `transport`).
    pub(crate) fn is_connect(&self) -> bool {
        match self {
            SendError::Reqwest(e) => e.is_connect(),
            SendError::Plain(e) => e.is_connect(),
            SendError::Spent => false,
        }
    }

    /// The error and its causes, with no URL in them.
    pub(crate) fn message(self) -> String {
        match self {
            SendError::Reqwest(e) => error_chain(&e.without_url()),
            SendError::Plain(e) => error_chain(&e),
            SendError::Spent => "the request was already sent".to_string(),
        }
    }

    /// True when the server closed the connection before any byte of a response: an end of
    /// stream with the request in flight, or a reset or broken pipe.
    pub(crate) fn closed_before_any_response(&self) -> bool {
        let top: &(dyn std::error::Error + 'static) = match self {
            SendError::Reqwest(e) => e,
            SendError::Plain(PlainError::Closed) => return true,
            SendError::Plain(e) => e,
            SendError::Spent => return false,
        };
        let mut source = Some(top);
        while let Some(e) = source {
            if e.downcast_ref::<hyper::Error>()
                .is_some_and(hyper::Error::is_incomplete_message)
            {
                return true;
            }
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset};
                if matches!(io.kind(), ConnectionReset | ConnectionAborted | BrokenPipe) {
                    return true;
                }
            }
            source = e.source();
        }
        false
    }
}

/// A response head with its body still to read.
pub(crate) enum Response {
    Reqwest(reqwest::Response),
    Plain(PlainResponse),
}

impl Response {
    /// The status code.
    pub(crate) fn status(&self) -> reqwest::StatusCode {
        match self {
            Response::Reqwest(r) => r.status(),
            Response::Plain(r) => r.status,
        }
    }

    /// The response headers.
    pub(crate) fn headers(&self) -> &HeaderMap {
        match self {
            Response::Reqwest(r) => r.headers(),
            Response::Plain(r) => &r.headers,
        }
    }

    /// The next piece of the body as it arrives, `None` at its end; a failure as its message.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, String> {
        match self {
            Response::Reqwest(r) => r.chunk().await.map_err(|e| error_chain(&e.without_url())),
            Response::Plain(r) => r.chunk().await.map_err(|e| error_chain(&e)),
        }
    }
}
