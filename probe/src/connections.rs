//! Connections a stranger can open. The probe accepts TCP itself and holds every connection that
//! has not yet shown the token to three limits ([`ConnectionLimits`]): a handshake deadline (TLS
//! and HTTP/2 done and a first call made), a timeout for connections that never authenticate,
//! and a cap on how many such connections may be open at once, overall and per source address
//! (when a new one arrives, the oldest goes: of its own address when that address is at its
//! cap, else of the address holding the most). A connection becomes authenticated once a
//! call on it passed the token check ([`crate::auth::RequireToken`] marks it through
//! [`ConnectionMark`]); from then on no limit touches it, so the coordinator's connection, with
//! its health pings and its `Execute` calls, is never the one dropped, whatever a stranger does.
//!
//! Only authentication ends the limits: an idle timeout counted in bytes or calls would be kept
//! alive by a stranger's own HTTP/2 PINGs, and would close the coordinator's connection between
//! two sessions (the coordinator keeps it open with keepalive PINGs, docs/faults.md).

use futures_util::task::AtomicWaker;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_stream::Stream;

/// What a connection that has not shown the token may do (docs/faults.md, deploy/README.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// From accept to the first call: TLS, HTTP/2 and one request must be done by then.
    pub handshake_timeout: Duration,
    /// From accept to a call that passed the token check.
    pub unauthenticated_timeout: Duration,
    /// Unauthenticated connections open at once; a new one closes the oldest beyond this.
    pub max_unauthenticated: usize,
    /// Unauthenticated connections open at once from one source address.
    pub max_unauthenticated_per_source: usize,
}

impl Default for ConnectionLimits {
    /// 5 s to the first call, 10 s to authenticate, 256 unauthenticated connections, 32 of them
    /// from one address: the coordinator needs one round trip after its handshake, and 256
    /// held connections cost a few MiB and as many file descriptors.
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            handshake_timeout: Duration::from_secs(5),
            unauthenticated_timeout: Duration::from_secs(10),
            max_unauthenticated: 256,
            max_unauthenticated_per_source: 32,
        }
    }
}

/// How far a connection got. It only moves forward, and authenticated and closed are both final,
/// so a connection the gate closes can never have been authenticated, and the other way round.
const ACCEPTED: u8 = 0;
const CALLED: u8 = 1;
const AUTHENTICATED: u8 = 2;
const CLOSED: u8 = 3;

/// The per-connection handle tonic puts in every request's extensions (its connect info): the
/// token check marks the connection through it.
#[derive(Debug, Clone)]
pub struct ConnectionMark {
    state: Arc<ConnectionState>,
}

impl ConnectionMark {
    /// The peer's address.
    pub fn remote_addr(&self) -> SocketAddr {
        self.state.remote
    }

    /// A call arrived on the connection: its handshakes are done.
    pub fn called(&self) {
        self.state.advance(CALLED);
    }

    /// A call on the connection passed the token check: no limit applies to it any more.
    pub fn authenticated(&self) {
        if self.state.advance(AUTHENTICATED) {
            self.state.forget();
        }
    }
}

/// One connection as the gate sees it.
#[derive(Debug)]
struct ConnectionState {
    id: u64,
    remote: SocketAddr,
    phase: AtomicU8,
    reader: AtomicWaker,
    writer: AtomicWaker,
    gate: Weak<Gate>,
}

impl ConnectionState {
    fn phase(&self) -> u8 {
        self.phase.load(Ordering::Acquire)
    }

    fn is_closed(&self) -> bool {
        self.phase() == CLOSED
    }

    /// Moves the connection to `to` unless it is already there, further, or final; says
    /// whether it moved.
    fn advance(&self, to: u8) -> bool {
        self.phase
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now < to && now != AUTHENTICATED).then_some(to)
            })
            .is_ok()
    }

    /// Makes the connection's next read and write fail, which ends it (and frees its socket);
    /// an authenticated connection is left alone.
    fn close(&self, reason: &str) {
        if !self.advance(CLOSED) {
            return;
        }
        self.forget();
        tracing::debug!(remote = %self.remote, "closing an unauthenticated connection: {reason}");
        self.reader.wake();
        self.writer.wake();
    }

    /// Takes the connection off the gate's list of unauthenticated connections.
    fn forget(&self) {
        if let Some(gate) = self.gate.upgrade() {
            gate.waiting().by_age.remove(&self.id);
        }
    }

    fn closed_error(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::ConnectionAborted,
            "closed: not authenticated within the probe's connection limits",
        )
    }
}

/// The unauthenticated connections of one listener, oldest first, and the limits they are held
/// to.
#[derive(Debug)]
pub(crate) struct Gate {
    limits: ConnectionLimits,
    /// Accept order → connection; an entry leaves when its connection authenticates or ends.
    waiting: Mutex<Waiting>,
}

#[derive(Debug, Default)]
struct Waiting {
    next_id: u64,
    by_age: BTreeMap<u64, Arc<ConnectionState>>,
}

impl Gate {
    pub(crate) fn new(limits: ConnectionLimits) -> Arc<Gate> {
        Arc::new(Gate {
            limits,
            waiting: Mutex::new(Waiting::default()),
        })
    }

    /// The list; a panic elsewhere while it was held cannot leave it inconsistent (every
    /// change is a single map operation), so a poisoned lock is used as is.
    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes a new connection in, first closing the one [`Gate::victim`] names, and starts the
    /// new connection's deadlines.
    fn admit(self: &Arc<Gate>, stream: TcpStream, remote: SocketAddr) -> GuardedStream {
        let (state, evicted) = {
            let mut waiting = self.waiting();
            let evicted = self
                .victim(&waiting, Some(remote.ip()))
                .and_then(|id| waiting.by_age.remove(&id));
            let id = waiting.next_id;
            waiting.next_id += 1;
            let state = Arc::new(ConnectionState {
                id,
                remote,
                phase: AtomicU8::new(ACCEPTED),
                reader: AtomicWaker::new(),
                writer: AtomicWaker::new(),
                gate: Arc::downgrade(self),
            });
            waiting.by_age.insert(id, state.clone());
            (state, evicted)
        };
        if let Some(old) = evicted {
            old.close("a newer connection needed its place (connection cap)");
        }
        let watchdog = tokio::spawn(deadlines(state.clone(), self.limits));
        GuardedStream {
            inner: stream,
            mark: ConnectionMark { state },
            watchdog,
        }
    }

    /// The unauthenticated connection to close before one from `newcomer` comes in (`None`:
    /// make room unconditionally): the oldest of the newcomer's own address when that address
    /// is at its cap; else, when the overall cap is reached (or room is needed), the oldest of
    /// the address holding the most, so a stranger's many connections go before another
    /// address's few, and the coordinator's fresh connection is not the one taken.
    fn victim(&self, waiting: &Waiting, newcomer: Option<IpAddr>) -> Option<u64> {
        // Address → (its unauthenticated connections, the id of its oldest); ids grow with
        // accept order, so the first seen is the oldest.
        let mut sources: HashMap<IpAddr, (usize, u64)> = HashMap::new();
        for (id, state) in &waiting.by_age {
            sources.entry(state.remote.ip()).or_insert((0, *id)).0 += 1;
        }
        if let Some(source) = newcomer {
            if let Some((count, oldest)) = sources.get(&source)
                && *count >= self.limits.max_unauthenticated_per_source
            {
                return Some(*oldest);
            }
            if waiting.by_age.len() < self.limits.max_unauthenticated {
                return None;
            }
        }
        sources
            .values()
            .max_by_key(|(count, oldest)| (*count, std::cmp::Reverse(*oldest)))
            .map(|(_, oldest)| *oldest)
    }

    /// Closes every unauthenticated connection (the server is shutting down: none of them can
    /// have a call in flight that would be worth waiting for).
    pub(crate) fn close_all(&self) {
        let all = std::mem::take(&mut self.waiting().by_age);
        for state in all.into_values() {
            state.close("the probe is shutting down");
        }
    }

    /// Closes one unauthenticated connection as [`Gate::victim`] picks it (the process ran out
    /// of file descriptors); `false` when there was none.
    fn make_room(&self) -> bool {
        let victim = {
            let mut waiting = self.waiting();
            self.victim(&waiting, None)
                .and_then(|id| waiting.by_age.remove(&id))
        };
        match victim {
            Some(state) => {
                state.close("the probe is out of file descriptors");
                true
            }
            None => false,
        }
    }
}

/// Closes `state` at its handshake deadline when no call arrived, and at its unauthenticated
/// timeout when no call passed the token check.
async fn deadlines(state: Arc<ConnectionState>, limits: ConnectionLimits) {
    let accepted = tokio::time::Instant::now();
    tokio::time::sleep_until(accepted + limits.handshake_timeout).await;
    if state.phase() == ACCEPTED {
        state.close("no call within the handshake deadline");
        return;
    }
    tokio::time::sleep_until(accepted + limits.unauthenticated_timeout).await;
    state.close("no call with the token within the unauthenticated timeout");
}

/// Whether an accept error means the process (or system) has no file descriptor left.
fn out_of_descriptors(error: &io::Error) -> bool {
    // EMFILE and ENFILE, the same numbers on Linux and macOS.
    matches!(error.raw_os_error(), Some(24) | Some(23))
}

/// The listener's connections, each held to `gate`'s limits, as tonic's `serve_with_incoming`
/// takes them. Accept errors never end the stream: out of file descriptors, the oldest unauthenticated
/// connection is closed to make room (so the coordinator can still connect); other errors (a
/// peer that reset before accept) are retried after a short pause.
pub(crate) fn guarded_incoming(
    listener: TcpListener,
    gate: Arc<Gate>,
) -> impl Stream<Item = io::Result<GuardedStream>> + Send + 'static {
    futures_util::stream::unfold((listener, gate), |(listener, gate)| async move {
        loop {
            match listener.accept().await {
                Ok((stream, remote)) => {
                    let _ = stream.set_nodelay(true);
                    let io = gate.admit(stream, remote);
                    return Some((Ok(io), (listener, gate)));
                }
                Err(e) => {
                    if out_of_descriptors(&e) {
                        let freed = gate.make_room();
                        tracing::warn!(
                            "accept: {e}; {}",
                            if freed {
                                "closed an unauthenticated connection to make room"
                            } else {
                                "no unauthenticated connection to close"
                            }
                        );
                    } else {
                        tracing::debug!("accept: {e}");
                    }
                    // Lets the closed connection's task free its socket, and keeps a persistent
                    // error from spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    })
}

/// An accepted TCP connection held to its gate's limits: once closed by the gate, every read and
/// write fails, which ends the TLS handshake or the HTTP/2 connection on it.
#[derive(Debug)]
pub struct GuardedStream {
    inner: TcpStream,
    mark: ConnectionMark,
    watchdog: tokio::task::JoinHandle<()>,
}

impl Drop for GuardedStream {
    fn drop(&mut self) {
        self.watchdog.abort();
        self.mark.state.forget();
    }
}

impl tonic::transport::server::Connected for GuardedStream {
    type ConnectInfo = ConnectionMark;

    fn connect_info(&self) -> ConnectionMark {
        self.mark.clone()
    }
}

impl AsyncRead for GuardedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let state = &self.mark.state;
        state.reader.register(cx.waker());
        if state.is_closed() {
            return Poll::Ready(Err(state.closed_error()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for GuardedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let state = &self.mark.state;
        state.writer.register(cx.waker());
        if state.is_closed() {
            return Poll::Ready(Err(state.closed_error()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let state = &self.mark.state;
        state.writer.register(cx.waker());
        if state.is_closed() {
            return Poll::Ready(Err(state.closed_error()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let state = &self.mark.state;
        state.writer.register(cx.waker());
        if state.is_closed() {
            return Poll::Ready(Err(state.closed_error()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
