//! A stranger cannot starve a probe: over real sockets on loopback, connections that never finish
//! a handshake (no byte at all, half a TLS ClientHello, half an HTTP/2 preface, a preface and
//! nothing else) are closed at the handshake deadline, seen from the client; a connection that
//! keeps calling without the token is closed at the unauthenticated timeout; past the cap the
//! oldest connection goes, of the newcomer's own address first, else of the address holding the
//! most; and the coordinator's authenticated connection keeps its place, its pings and its
//! `Execute` while strangers hold more connections than the cap.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::record::{Execution, Outcome};
use openbench_probe::auth::ProbeToken;
use openbench_probe::client::{ClientSecurity, connect};
use openbench_probe::connections::ConnectionLimits;
use openbench_probe::server::{ProbeSecurity, ProbeServerHandle, serve_secured};
use openbench_probe::tls::ClientTlsFiles;
use openbench_proto::link::{channel, link_client};
use openbench_proto::v1::PingRequest;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::pki::Pki;
use support::session::{execute_call, open, planned_in, probe_config, session};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const TOKEN: &str = "probe-token-5c1e77";

/// How much later than its deadline a close may be seen on a loaded machine (scheduling only:
/// the deadline itself is the server's).
const SLACK: Duration = Duration::from_secs(4);

/// The start of a TLS ClientHello record that announces 512 bytes and sends one.
const HALF_CLIENT_HELLO: &[u8] = &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01];
/// The first half of the HTTP/2 client preface.
const HALF_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n";
/// The whole HTTP/2 client preface and an empty SETTINGS frame: a handshake, and no call.
const PREFACE_AND_SETTINGS: &[u8] =
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

fn limits(
    handshake: Duration,
    unauthenticated: Duration,
    max: usize,
    per_source: usize,
) -> ConnectionLimits {
    ConnectionLimits {
        handshake_timeout: handshake,
        unauthenticated_timeout: unauthenticated,
        max_unauthenticated: max,
        max_unauthenticated_per_source: per_source,
    }
}

/// Where a probe whose tests open no session lets its key go: nowhere that exists.
const NO_UPSTREAM: &str = "https://unused.invalid/";

/// A probe of region `eu-west` with the token, TLS from `pki` when given, and `connections`,
/// whose key may go to `upstream` only.
async fn probe(
    pki: Option<&Pki>,
    connections: ConnectionLimits,
    upstream: &str,
) -> ProbeServerHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let security = ProbeSecurity {
        tls: pki.map(|pki| pki.server(false).load().unwrap()),
        token: Some(ProbeToken::new(TOKEN, "test").unwrap()),
        connections,
    };
    serve_secured(listener, probe_config("eu-west", upstream), security)
        .await
        .unwrap()
}

/// A stranger's connection to `addr` from loopback address `127.0.0.<host>`, having sent
/// `bytes`; and the instant just before it connected (the server's clock for it starts later).
async fn stranger(addr: SocketAddr, host: u8, bytes: &[u8]) -> (TcpStream, Instant) {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::from((Ipv4Addr::new(127, 0, 0, host), 0)))
        .unwrap();
    let before = Instant::now();
    let mut stream = socket.connect(addr).await.unwrap();
    if !bytes.is_empty() {
        stream.write_all(bytes).await.unwrap();
    }
    (stream, before)
}

/// Reads until the server closes `stream` (end of stream or reset); the instant it did, or
/// `None` when it is still open after `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<Instant> {
    let mut buf = [0u8; 4096];
    let read_to_end = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return Instant::now(),
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(within, read_to_end).await.ok()
}

/// A loopback TCP relay in front of `target` that counts the connections made through it.
struct Relay {
    addr: SocketAddr,
    opened: Arc<AtomicUsize>,
    ended: Arc<Mutex<usize>>,
}

async fn relay(target: SocketAddr) -> Relay {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let opened = Arc::new(AtomicUsize::new(0));
    let ended = Arc::new(Mutex::new(0));
    let (count, done) = (opened.clone(), ended.clone());
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let done = done.clone();
            tokio::spawn(async move {
                if let Ok(mut outbound) = TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
                *done.lock().unwrap() += 1;
            });
        }
    });
    Relay {
        addr,
        opened,
        ended,
    }
}

impl Relay {
    fn opened(&self) -> usize {
        self.opened.load(Ordering::SeqCst)
    }

    fn ended(&self) -> usize {
        *self.ended.lock().unwrap()
    }
}

fn security(pki: &Pki, token: Option<&str>) -> ClientSecurity {
    ClientSecurity {
        tls: ClientTlsFiles {
            ca: Some(pki.path("ca.pem")),
            identity: None,
        },
        token: token.map(|t| ProbeToken::new(t, "test").unwrap()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_finish_a_handshake_are_closed_at_the_deadline() {
    let deadline = Duration::from_secs(1);
    let limits = limits(deadline, Duration::from_secs(30), 64, 16);
    let pki = Pki::generate();
    let tls = probe(Some(&pki), limits, NO_UPSTREAM).await;
    let plain = probe(None, limits, NO_UPSTREAM).await;
    let cases: [(&str, SocketAddr, &[u8]); 5] = [
        ("TLS, no byte", tls.addr(), b""),
        ("TLS, half a ClientHello", tls.addr(), HALF_CLIENT_HELLO),
        ("plaintext, no byte", plain.addr(), b""),
        (
            "plaintext, half the HTTP/2 preface",
            plain.addr(),
            HALF_PREFACE,
        ),
        (
            "plaintext, HTTP/2 preface and SETTINGS, no call",
            plain.addr(),
            PREFACE_AND_SETTINGS,
        ),
    ];
    let mut held = Vec::new();
    for (what, addr, bytes) in cases {
        let (stream, before) = stranger(addr, 1, bytes).await;
        held.push((what, stream, before));
    }
    for (what, mut stream, before) in held {
        let closed = closed_within(&mut stream, deadline + SLACK)
            .await
            .unwrap_or_else(|| {
                panic!("{what}: still open {:?} after connecting", deadline + SLACK)
            });
        let after = closed - before;
        println!("{what}: closed {} ms after connecting", after.as_millis());
        // The server's deadline starts at accept, after the client began to connect.
        assert!(
            after >= deadline,
            "{what}: closed after {after:?}, before the deadline"
        );
    }
    tls.shutdown().await.unwrap();
    plain.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_calling_without_the_token_is_closed_at_the_unauthenticated_timeout() {
    let unauthenticated = Duration::from_secs(2);
    let pki = Pki::generate();
    let handle = probe(
        Some(&pki),
        limits(Duration::from_secs(1), unauthenticated, 64, 16),
        NO_UPSTREAM,
    )
    .await;
    let through = relay(handle.addr()).await;
    let url = format!("https://localhost:{}", through.addr.port());
    let mut impostor = link_client(
        channel(&url, &security(&pki, Some("not-the-token")))
            .await
            .unwrap(),
    );
    let started = Instant::now();
    // Calls every 100 ms: busy, never idle, never authenticated.
    while started.elapsed() < unauthenticated + SLACK && through.ended() == 0 {
        let err = impostor.ping(PingRequest {}).await.unwrap_err();
        assert!(
            matches!(
                err.code(),
                tonic::Code::Unauthenticated | tonic::Code::Unavailable | tonic::Code::Unknown
            ),
            "{err:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ended_after = started.elapsed();
    assert_eq!(through.ended(), 1, "the connection was not closed");
    println!("closed {} ms after the first call", ended_after.as_millis());
    assert!(ended_after >= unauthenticated.saturating_sub(Duration::from_millis(100)));
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_cap_the_oldest_goes_first_from_the_address_holding_the_most() {
    // Deadlines far away: every close here is the cap's.
    let long = Duration::from_secs(60);
    let handle = probe(None, limits(long, long, 6, 3), NO_UPSTREAM).await;
    let addr = handle.addr();
    let from = |host: u8| stranger(addr, host, b"");
    let (mut a0, mut a1, mut a2) = (from(2).await.0, from(2).await.0, from(2).await.0);
    let (mut b0, mut b1, mut b2) = (from(3).await.0, from(3).await.0, from(3).await.0);
    // 127.0.0.3 is at its cap of 3: its own oldest goes.
    let mut b3 = from(3).await.0;
    let soon = Duration::from_secs(10);
    assert!(closed_within(&mut b0, soon).await.is_some(), "b0 open");
    // 6 open (a0–a2, b1–b3) is the overall cap; .2 and .3 hold 3 each, and .2's oldest is older.
    let mut c0 = from(4).await.0;
    assert!(closed_within(&mut a0, soon).await.is_some(), "a0 open");
    // Now .3 holds the most (3 against 2 and 1): its oldest goes, not a1, the oldest overall.
    let mut c1 = from(4).await.0;
    assert!(closed_within(&mut b1, soon).await.is_some(), "b1 open");
    let short = Duration::from_millis(300);
    for (name, stream) in [
        ("a1", &mut a1),
        ("a2", &mut a2),
        ("b2", &mut b2),
        ("b3", &mut b3),
        ("c0", &mut c0),
        ("c1", &mut c1),
    ] {
        assert_eq!(
            closed_within(stream, short).await,
            None,
            "{name} was closed"
        );
    }
    handle.shutdown().await.unwrap();
}

/// Keeps `per_host` connections of each kind open from each of `hosts` until `stop`: new ones
/// replace those the probe closes. Returns how many it opened.
async fn flood(addr: SocketAddr, hosts: &[u8], per_host: usize, stop: Instant) -> usize {
    let mut held: Vec<TcpStream> = Vec::new();
    let mut opened = 0;
    while Instant::now() < stop {
        let mut still = Vec::new();
        for stream in held.drain(..) {
            let mut buf = [0u8; 64];
            match stream.try_read(&mut buf) {
                Ok(0) => {}
                Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => {}
                _ => still.push(stream),
            }
        }
        held = still;
        let wanted = hosts.len() * per_host * 2;
        let mut i = 0;
        while held.len() < wanted {
            let host = hosts[i % hosts.len()];
            let bytes: &[u8] = if i % 2 == 0 { b"" } else { HALF_CLIENT_HELLO };
            held.push(stranger(addr, host, bytes).await.0);
            opened += 1;
            i += 1;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    opened
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coordinators_connection_keeps_its_place_while_strangers_hold_the_cap() {
    let (handshake, unauthenticated) = (Duration::from_secs(1), Duration::from_secs(2));
    let (cap, per_source) = (8, 4);
    let pki = Pki::generate();
    let upstream = start(vec![
        sse_head(),
        data(r#"{"model":"m","choices":[{"delta":{"content":"{}"},"finish_reason":"stop"}]}"#),
        chunk("data: [DONE]\n\n"),
        Step::End,
    ])
    .await;
    let handle = probe(
        Some(&pki),
        limits(handshake, unauthenticated, cap, per_source),
        &upstream.endpoint(),
    )
    .await;
    let through = relay(handle.addr()).await;
    let url = format!("https://localhost:{}", through.addr.port());
    let coordinator = security(&pki, Some(TOKEN));
    let mut client = connect(&url, &coordinator).await.unwrap();
    let mut link = link_client(channel(&url, &coordinator).await.unwrap());
    link.ping(PingRequest {}).await.unwrap();
    let adapters = vec![adapter("together", &upstream.endpoint())];
    let id = open(&mut client, &session("eu-west", adapters, 20_000))
        .await
        .unwrap();
    let connections = through.opened();
    assert_eq!(connections, 2, "one connection for Probe, one for Link");

    // Strangers on two other addresses hold 3× the cap for longer than both deadlines.
    let stop = Instant::now() + unauthenticated + Duration::from_secs(3);
    let strangers = tokio::spawn(flood(handle.addr(), &[2, 3], cap, stop));
    let mut pings = 0;
    while Instant::now() < stop {
        link.ping(PingRequest {}).await.unwrap();
        pings += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let reply = client
        .execute(execute_call(
            &planned_in("together", "eu-west", 20_000),
            &id,
        ))
        .await
        .unwrap()
        .into_inner();
    let execution: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(execution.record.outcome, Outcome::Completed);
    let opened = strangers.await.unwrap();
    println!("{pings} pings answered while strangers opened {opened} connections");
    assert!(opened > 3 * cap, "the strangers never exceeded the cap");
    // The coordinator never had to reconnect: its connections were never closed.
    assert_eq!(through.opened(), connections);
    assert_eq!(through.ended(), 0);
    handle.shutdown().await.unwrap();
}
