//! The coordinator's health monitors keep pinging while its main runtime is starved (issue 36
//! class 5): thousands of streams in flight keep the main runtime's workers busy, and a monitor
//! polled there sent its ping late or read the answer past its 2 s timeout, so the region was
//! declared down while merely busy. The monitors and their connection run on the link's own
//! runtime thread (docs/faults.md, "The link is not starved by streams"). Here every worker of
//! the main runtime is blocked for 3 s and the monitor must go on sampling the link throughout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use openbench_coordinator::health::{LinkEvent, LinkSettings, Monitors};
use openbench_probe::Credentials;
use openbench_probe::server::{ProbeConfig, serve_on};
use openbench_probe::session_open::{CredentialSource, EndpointRules};
use openbench_proto::link::{ClientSecurity, LinkRuntime, channel, link_client};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// How long the main runtime's workers are held.
const BLOCKED: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitors_keep_sampling_the_link_while_every_main_worker_is_blocked() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let probe = serve_on(
        listener,
        ProbeConfig {
            region: "eu".into(),
            credentials: CredentialSource::Given(Credentials::from_pairs(std::iter::empty::<(
                &str,
                &str,
            )>())),
            endpoints: EndpointRules::default(),
            code_digest: "code".into(),
        },
    )
    .await
    .unwrap();
    let url = format!("http://{}", probe.addr());
    let runtime = LinkRuntime::start("test-link").unwrap();
    let control = runtime
        .run(async move { channel(&url, &ClientSecurity::default()).await.unwrap() })
        .await
        .unwrap();
    let links = BTreeMap::from([("eu".to_string(), link_client(control))]);
    let settings = LinkSettings {
        ping_interval: Duration::from_millis(100),
        ..LinkSettings::default()
    };
    let mut monitors = Monitors::start(&links, BTreeMap::new(), settings, &runtime).await;
    while monitors.events.try_recv().is_ok() {}

    let from = openbench_common::clock::unix_micros(SystemTime::now());
    let blockers: Vec<_> = (0..2)
        .map(|_| tokio::spawn(async { std::thread::sleep(BLOCKED) }))
        .collect();
    for blocker in blockers {
        blocker.await.unwrap();
    }
    let to = from + i64::try_from(BLOCKED.as_micros()).unwrap();
    let mut during = 0;
    let mut downs = Vec::new();
    while let Ok((_, event)) = monitors.events.try_recv() {
        match event {
            LinkEvent::Sample(s) if (from..to).contains(&s.sent_us) => during += 1,
            LinkEvent::Down { reason, .. } => downs.push(reason),
            _ => {}
        }
    }
    eprintln!("{during} pings answered while the main runtime was blocked for {BLOCKED:?}");
    assert!(downs.is_empty(), "{downs:?}");
    // One ping every 100 ms: about 30 in the block; at least 10 even on a loaded machine, none
    // when the monitor waits for the main runtime.
    assert!(during >= 10, "{during} pings answered during the block");
    drop(monitors);
    probe.shutdown().await.unwrap();
}
