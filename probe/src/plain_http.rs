//! Plaintext HTTP/1.1 to `http://` endpoints, with hyper's connection polled inside the
//! request's own task.
//!
//! Through reqwest, hyper's connection runs as a task of its own: it reads each chunk from the
//! socket and hands it to the request's task through a channel, and the body's read signals back
//! that it wants more, so every chunk wakes two tasks, often on two threads. Here the request's
//! task polls the connection beside the response body, so a chunk read from the socket reaches
//! the body within the same poll (docs/performance.md, "hyper's connection in the request's
//! task"). The request on the wire is the one reqwest sends (origin-form target, the same
//! headers, `host` last); TLS endpoints stay on reqwest (rustls, HTTP/2 by ALPN).
//!
//! Connections are kept as reqwest keeps them: idle ones are reused most recent first, up to a
//! number per executor, and dropped after [`crate::executor::POOL_IDLE_TIMEOUT`]; a connection
//! the server closed while idle is seen closed when it is taken, and dropped.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper::header::{HOST, HeaderMap, HeaderValue};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;
use tokio::net::TcpStream;

/// One kept-alive HTTP/1.1 connection: the request half and the connection future that reads
/// and writes the socket, polled only by the request that holds it (boxed where it is held: it
/// is large, and moves between the pool and the responses).
struct Conn {
    sender: SendRequest<Full<Bytes>>,
    connection: Connection<TokioIo<TcpStream>, Full<Bytes>>,
}

impl Conn {
    /// True when the connection can carry a request now: polled once without waiting, it has
    /// neither ended (the server closed it, or sent `connection: close`) nor is it busy.
    fn usable(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        if Future::poll(pin!(&mut self.connection), &mut cx).is_ready() {
            return false;
        }
        matches!(self.sender.poll_ready(&mut cx), Poll::Ready(Ok(())))
    }
}

/// Why a request got no response.
#[derive(Debug, thiserror::Error)]
pub enum PlainError {
    /// The TCP connection could not be opened.
    #[error("tcp connect error: {0}")]
    Connect(#[source] std::io::Error),
    /// hyper failed the handshake, the send or the response head.
    #[error("client error: {0}")]
    Http(#[source] hyper::Error),
    /// The connection ended with the request unanswered and hyper said no more.
    #[error("connection closed before message completed")]
    Closed,
}

impl PlainError {
    /// True for a failure to connect (charged as `connect`, not `transport`).
    pub fn is_connect(&self) -> bool {
        matches!(self, PlainError::Connect(_))
    }

    /// The hyper error inside, if any.
    pub fn hyper(&self) -> Option<&hyper::Error> {
        match self {
            PlainError::Http(e) => Some(e),
            _ => None,
        }
    }
}

/// The idle connections of one executor to one `http://` endpoint.
#[derive(Debug)]
pub struct PlainPool {
    /// `host:port` to connect to.
    address: String,
    /// The `host` header, as reqwest writes it (the port only when it is not 80).
    host: HeaderValue,
    /// The request target: path and query.
    target: hyper::Uri,
    idle: Mutex<Vec<(IdleConn, Instant)>>,
    max_idle: usize,
}

/// A pooled connection (a newtype so the pool can derive `Debug`).
struct IdleConn(Box<Conn>);

impl std::fmt::Debug for IdleConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IdleConn")
    }
}

impl PlainPool {
    /// A pool for `url` (an `http://` URL) keeping up to `max_idle` idle connections.
    pub fn new(url: &reqwest::Url, max_idle: usize) -> Result<PlainPool, String> {
        let host = url.host_str().ok_or("the URL has no host")?;
        let port = url.port_or_known_default().unwrap_or(80);
        let host_header = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        Ok(PlainPool {
            address: format!("{host}:{port}"),
            host: HeaderValue::from_str(&host_header).map_err(|e| e.to_string())?,
            target: target
                .parse()
                .map_err(|e: hyper::http::uri::InvalidUri| e.to_string())?,
            idle: Mutex::new(Vec::new()),
            max_idle,
        })
    }

    /// The request: the target, `headers` then `host`, and the body.
    pub fn request(&self, headers: &HeaderMap, body: Bytes) -> hyper::Request<Full<Bytes>> {
        let mut request = hyper::Request::new(Full::new(body));
        *request.method_mut() = hyper::Method::POST;
        *request.uri_mut() = self.target.clone();
        let map = request.headers_mut();
        map.clone_from(headers);
        if !map.contains_key(HOST) {
            map.insert(HOST, self.host.clone());
        }
        request
    }

    /// Sends `request` on an idle connection, or a new one when there is none (always a new one
    /// with `fresh`), and waits for the response head, polling the connection meanwhile. Also
    /// says whether the connection was reused.
    pub async fn send(
        self: &Arc<Self>,
        request: hyper::Request<Full<Bytes>>,
        fresh: bool,
    ) -> (Result<PlainResponse, PlainError>, bool) {
        let idle = if fresh { None } else { self.take_idle() };
        let reused = idle.is_some();
        let conn = match idle {
            Some(conn) => conn,
            None => match self.connect().await {
                Ok(conn) => conn,
                Err(e) => return (Err(e), false),
            },
        };
        (self.exchange(conn, request).await, reused)
    }

    /// The most recently used idle connection that is still open and ready; the others found
    /// expired or closed on the way are dropped.
    fn take_idle(&self) -> Option<Box<Conn>> {
        let Ok(mut idle) = self.idle.lock() else {
            return None;
        };
        while let Some((IdleConn(mut conn), since)) = idle.pop() {
            if since.elapsed() < crate::executor::POOL_IDLE_TIMEOUT && conn.usable() {
                return Some(conn);
            }
        }
        None
    }

    /// Opens a connection (no delay on small writes, as reqwest sets) and does hyper's
    /// handshake (no bytes are exchanged for HTTP/1.1).
    async fn connect(&self) -> Result<Box<Conn>, PlainError> {
        let stream = TcpStream::connect(&self.address)
            .await
            .map_err(PlainError::Connect)?;
        stream.set_nodelay(true).map_err(PlainError::Connect)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(PlainError::Http)?;
        Ok(Box::new(Conn { sender, connection }))
    }

    /// Sends on `conn` and waits for the head. When the connection ends first, the send is
    /// asked once more: hyper hands the connection's error to the request it failed.
    async fn exchange(
        self: &Arc<Self>,
        mut conn: Box<Conn>,
        request: hyper::Request<Full<Bytes>>,
    ) -> Result<PlainResponse, PlainError> {
        // Set when the connection ends before the head is taken (a server that writes its whole
        // response and closes): the response is then read without it, never polled past its end.
        let mut ended_first = false;
        let head = {
            let Conn { sender, connection } = &mut *conn;
            let send = async {
                std::future::poll_fn(|cx| sender.poll_ready(cx)).await?;
                sender.send_request(request).await
            };
            let mut send = pin!(send);
            tokio::select! {
                biased;
                head = &mut send => head,
                ended = connection => {
                    ended_first = true;
                    let mut cx = Context::from_waker(Waker::noop());
                    match send.as_mut().poll(&mut cx) {
                        Poll::Ready(head) => head,
                        Poll::Pending => {
                            return Err(ended.err().map_or(PlainError::Closed, PlainError::Http));
                        }
                    }
                }
            }
        };
        let response = head.map_err(PlainError::Http)?;
        let (parts, body) = response.into_parts();
        Ok(PlainResponse {
            status: parts.status,
            headers: parts.headers,
            body,
            conn: (!ended_first).then_some(conn),
            pool: Arc::clone(self),
        })
    }

    /// Keeps `conn` for the next request if it is still usable and the pool has room.
    fn put_back(&self, mut conn: Box<Conn>) {
        if !conn.usable() {
            return;
        }
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < self.max_idle
        {
            idle.push((IdleConn(conn), Instant::now()));
        }
    }
}

/// A response whose body is read with its connection polled in the same task; the connection
/// goes back to the pool when the body has been read to its end (dropped before, it closes).
pub struct PlainResponse {
    /// The status code.
    pub status: hyper::StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    body: Incoming,
    conn: Option<Box<Conn>>,
    pool: Arc<PlainPool>,
}

impl PlainResponse {
    /// The next piece of the body as it arrives; `None` at its end.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, hyper::Error> {
        loop {
            let frame = match self.conn.as_mut() {
                Some(conn) => {
                    tokio::select! {
                        biased;
                        frame = self.body.frame() => frame,
                        _ = &mut conn.connection => {
                            // The connection ended: its error or end reaches the body, which
                            // is read alone from now on.
                            self.conn = None;
                            continue;
                        }
                    }
                }
                None => self.body.frame().await,
            };
            match frame {
                None => {
                    if let Some(conn) = self.conn.take() {
                        self.pool.put_back(conn);
                    }
                    return Ok(None);
                }
                Some(Err(e)) => return Err(e),
                Some(Ok(frame)) => {
                    if let Ok(bytes) = frame.into_data()
                        && !bytes.is_empty()
                    {
                        return Ok(Some(bytes));
                    }
                }
            }
        }
    }
}
