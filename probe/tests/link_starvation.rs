//! The probe answers `Link.Ping` while its work runtime is starved (issue 36 class 5): thousands
//! of streams in flight keep the work runtime's workers busy, and a ping served there waited
//! past the coordinator's 2 s timeout (the region was then declared down while merely busy).
//! The server runs on a thread of its own (docs/faults.md, "The link is not starved by
//! streams"). Here every worker of the work runtime is blocked for 3 s, the worst a burst of
//! work could do, and pings from a client on a thread of its own must still be answered at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_probe::client::ClientSecurity;
use openbench_probe::server::serve_on;
use openbench_proto::v1::PingRequest;
use std::time::{Duration, Instant};
use support::session::probe_config;

/// How long the work runtime's workers are held.
const BLOCKED: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_are_answered_while_every_worker_of_the_work_runtime_is_blocked() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let handle = serve_on(listener, probe_config("eu", "http://127.0.0.1:9/"))
        .await
        .unwrap();
    let url = format!("http://{}", handle.addr());
    let (ready_tx, ready) = std::sync::mpsc::channel();
    let (go, go_rx) = std::sync::mpsc::channel::<()>();
    // The coordinator's side, on a thread and runtime of its own.
    let pinger = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let channel = openbench_proto::link::channel(&url, &ClientSecurity::default())
                .await
                .unwrap();
            let mut link = openbench_proto::link::link_client(channel);
            link.ping(PingRequest {}).await.unwrap();
            ready_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            let mut worst = Duration::ZERO;
            for _ in 0..10 {
                let sent = Instant::now();
                tokio::time::timeout(Duration::from_secs(10), link.ping(PingRequest {}))
                    .await
                    .unwrap()
                    .unwrap();
                worst = worst.max(sent.elapsed());
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            worst
        })
    });
    ready.recv().unwrap();
    let blockers: Vec<_> = (0..2)
        .map(|_| tokio::spawn(async { std::thread::sleep(BLOCKED) }))
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let blocked_at = Instant::now();
    go.send(()).unwrap();
    let worst = pinger.join().unwrap();
    let pinged_for = blocked_at.elapsed();
    for blocker in blockers {
        blocker.await.unwrap();
    }
    eprintln!("10 pings in {pinged_for:?} while the work runtime was blocked; worst {worst:?}");
    // Ten pings 100 ms apart all fit inside the block: each was answered by the server's own
    // thread, not after the block (which would take up to 3 s).
    assert!(
        pinged_for < BLOCKED,
        "the pings outlasted the block: {pinged_for:?}"
    );
    assert!(worst < Duration::from_secs(1), "worst ping {worst:?}");
    handle.shutdown().await.unwrap();
}
