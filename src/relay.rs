//! A delaying TCP relay: the stand-in for network distance on a machine whose kernel has no
//! `netem`. It accepts on one address and forwards every connection to another, holding each
//! chunk of bytes for a fixed time per direction, and can black-hole traffic (a partition).
//!
//! The delay is a pipeline, not a pause per read: each chunk is stamped when it arrives and
//! released at `arrival + delay`, in order, so a stream of many chunks is shifted by the delay
//! once instead of accumulating it. A chunk is never released early (the timer only waits
//! longer on a loaded machine), which makes "at least the configured delay" a causal bound a
//! test can rely on. While black-holed nothing is forwarded: bytes wait in the relay (as TCP
//! would retransmit them once a cut link heals) and new connections are accepted but not
//! connected upstream, so callers see a peer that stops answering, as across a cut link, rather
//! than a reset. Used by `openbench-inference relay` (loopback or inside a container) and by
//! tests in-process.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, tcp};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Bytes read at once from either side.
const CHUNK: usize = 16 * 1024;
/// Chunks held per direction before the reader waits (bounds memory under a long delay).
const QUEUE: usize = 1024;

/// What a relay does to traffic; one delay per direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelayConfig {
    /// Delay of bytes from the caller to the upstream.
    pub upstream_delay: Duration,
    /// Delay of bytes from the upstream back to the caller.
    pub downstream_delay: Duration,
    /// Start black-holed.
    pub blackhole: bool,
}

/// Errors of starting a relay.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// The listen address could not be bound.
    #[error("relay: cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
}

/// A running relay; dropping it stops accepting (open connections end when either side closes).
#[derive(Debug)]
pub struct Relay {
    addr: SocketAddr,
    blackhole: Arc<AtomicBool>,
    accept: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// Listens on `listen` and relays every connection to `upstream` (`host:port`, resolved per
    /// connection so a container name that moves is followed).
    pub async fn start(
        listen: &str,
        upstream: &str,
        config: RelayConfig,
    ) -> Result<Relay, RelayError> {
        let bind_error = |source| RelayError::Bind {
            addr: listen.to_string(),
            source,
        };
        let listener = TcpListener::bind(listen).await.map_err(bind_error)?;
        let addr = listener.local_addr().map_err(bind_error)?;
        let blackhole = Arc::new(AtomicBool::new(config.blackhole));
        let accept = tokio::spawn(accept_loop(
            listener,
            upstream.to_string(),
            config,
            blackhole.clone(),
        ));
        Ok(Relay {
            addr,
            blackhole,
            accept,
        })
    }

    /// The address the relay listens on (the bound port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Starts (`true`) or ends (`false`) the black hole, for every connection at once.
    pub fn set_blackhole(&self, on: bool) {
        self.blackhole.store(on, Ordering::SeqCst);
    }

    /// Whether traffic is black-holed now.
    pub fn is_blackholed(&self) -> bool {
        self.blackhole.load(Ordering::SeqCst)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: String,
    config: RelayConfig,
    blackhole: Arc<AtomicBool>,
) {
    loop {
        let Ok((caller, _)) = listener.accept().await else {
            // Out of descriptors or similar: wait instead of spinning.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        tokio::spawn(relay_connection(
            caller,
            upstream.clone(),
            config,
            blackhole.clone(),
        ));
    }
}

/// Connects to the upstream and pumps both directions until both have closed.
async fn relay_connection(
    caller: TcpStream,
    upstream: String,
    config: RelayConfig,
    blackhole: Arc<AtomicBool>,
) {
    // A connection made during a partition stays silent until the partition ends.
    while blackhole.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let Ok(upstream) = TcpStream::connect(&upstream).await else {
        // Refused upstream: close the caller's side, as a direct connection would fail.
        return;
    };
    let _ = caller.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (caller_read, caller_write) = caller.into_split();
    let (upstream_read, upstream_write) = upstream.into_split();
    let up = pump(
        caller_read,
        upstream_write,
        config.upstream_delay,
        blackhole.clone(),
    );
    let down = pump(
        upstream_read,
        caller_write,
        config.downstream_delay,
        blackhole,
    );
    tokio::join!(up, down);
}

/// One direction: a reader stamping chunks and a writer releasing each at its due time.
async fn pump(
    mut from: tcp::OwnedReadHalf,
    mut to: tcp::OwnedWriteHalf,
    delay: Duration,
    blackhole: Arc<AtomicBool>,
) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(QUEUE);
    let reader = async move {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
        // Dropping `tx` tells the writer to pass the end of stream on after the last chunk.
    };
    let writer = async move {
        while let Some((due, bytes)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            while blackhole.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// An upstream that answers each read with the same bytes (an echo server).
    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn round_trip(stream: &mut TcpStream, bytes: &[u8]) -> Duration {
        let started = std::time::Instant::now();
        stream.write_all(bytes).await.unwrap();
        let mut got = vec![0u8; bytes.len()];
        stream.read_exact(&mut got).await.unwrap();
        assert_eq!(got, bytes);
        started.elapsed()
    }

    #[tokio::test]
    async fn an_echo_through_the_relay_takes_at_least_both_delays() {
        let echo = echo_server().await;
        let relay = Relay::start(
            "127.0.0.1:0",
            &echo.to_string(),
            RelayConfig {
                upstream_delay: Duration::from_millis(120),
                downstream_delay: Duration::from_millis(80),
                blackhole: false,
            },
        )
        .await
        .unwrap();
        let mut s = TcpStream::connect(relay.local_addr()).await.unwrap();
        // Causal lower bound: 120 ms out and 80 ms back; load only adds.
        for _ in 0..3 {
            assert!(round_trip(&mut s, b"ping").await >= Duration::from_millis(200));
        }
    }

    /// An upstream that notes when the first byte arrived, then echoes one read.
    async fn timed_echo() -> (
        SocketAddr,
        tokio::sync::oneshot::Receiver<std::time::Instant>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 64];
            let n = s.read(&mut buf).await.unwrap();
            let _ = tx.send(std::time::Instant::now());
            s.write_all(&buf[..n]).await.unwrap();
        });
        (addr, rx)
    }

    #[tokio::test]
    async fn each_direction_gets_its_own_delay() {
        for (up, down) in [(400, 0), (0, 400)] {
            let (echo, arrived) = timed_echo().await;
            let relay = Relay::start(
                "127.0.0.1:0",
                &echo.to_string(),
                RelayConfig {
                    upstream_delay: Duration::from_millis(up),
                    downstream_delay: Duration::from_millis(down),
                    blackhole: false,
                },
            )
            .await
            .unwrap();
            let mut s = TcpStream::connect(relay.local_addr()).await.unwrap();
            let sent = std::time::Instant::now();
            s.write_all(b"x").await.unwrap();
            let mut buf = [0u8; 1];
            s.read_exact(&mut buf).await.unwrap();
            let back = std::time::Instant::now();
            let at_upstream = arrived.await.unwrap();
            // Both bounds are causal: the relay holds each byte at least its direction's delay.
            assert!(at_upstream - sent >= Duration::from_millis(up), "up {up}");
            assert!(
                back - at_upstream >= Duration::from_millis(down),
                "down {down}"
            );
        }
    }

    #[tokio::test]
    async fn many_chunks_are_shifted_once_not_once_each() {
        let echo = echo_server().await;
        let relay = Relay::start(
            "127.0.0.1:0",
            &echo.to_string(),
            RelayConfig {
                upstream_delay: Duration::from_millis(300),
                ..RelayConfig::default()
            },
        )
        .await
        .unwrap();
        let mut s = TcpStream::connect(relay.local_addr()).await.unwrap();
        s.set_nodelay(true).unwrap();
        let started = std::time::Instant::now();
        // 20 writes 10 ms apart: a per-read pause would take 20 × 300 ms = 6 s; the pipeline
        // takes the writes' 200 ms plus one delay.
        for i in 0..20u8 {
            s.write_all(&[i]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut got = vec![0u8; 20];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(got, (0..20).collect::<Vec<u8>>());
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert!(
            took < Duration::from_secs(3),
            "delays accumulated: {took:?}"
        );
    }

    #[tokio::test]
    async fn a_blackhole_holds_bytes_until_it_ends() {
        let echo = echo_server().await;
        let relay = Relay::start("127.0.0.1:0", &echo.to_string(), RelayConfig::default())
            .await
            .unwrap();
        let mut s = TcpStream::connect(relay.local_addr()).await.unwrap();
        round_trip(&mut s, b"before").await;
        relay.set_blackhole(true);
        assert!(relay.is_blackholed());
        s.write_all(b"held").await.unwrap();
        let mut buf = [0u8; 4];
        let silent = tokio::time::timeout(Duration::from_millis(300), s.read(&mut buf)).await;
        assert!(silent.is_err(), "a black-holed relay answered: {silent:?}");
        // A connection opened during the partition is not connected upstream either.
        let mut late = TcpStream::connect(relay.local_addr()).await.unwrap();
        late.write_all(b"late").await.unwrap();
        relay.set_blackhole(false);
        // Held bytes arrive once the partition ends, in order, then traffic flows again.
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"held");
        round_trip(&mut s, b"after").await;
        late.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"late");
    }
}
