//! A stranger cannot starve a probe, across real processes: `probe serve` with TLS and a token,
//! its connection limits lowered by flags, while strangers without the token hold more stalled
//! connections (no byte at all, half a TLS ClientHello) than its cap from two other loopback
//! addresses; a smoke through that probe completes with no harness record (no
//! `region_unreachable`: every request completed), and every stranger's connection is closed by the handshake deadline,
//! seen from the stranger's side.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod real_targets;

use coordinator_support::*;
use openbench_common::record::Outcome;
use openbench_common::rundir as layout;
use real_targets::child::LoggedChild;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

const KEY_VAR: &str = "OBT_DOS_PROBE_KEY";
const SECRET: &str = "sk-dos-probe-8e02f6a1";
const TOKEN: &str = "dos-probe-token-4b7d";
/// `--handshake-timeout-s`: the strangers never make a call, so this bounds their connections.
const HANDSHAKE_S: u64 = 1;
/// `--max-unauthenticated` (`--max-unauthenticated-per-source` is half of it).
const CAP: usize = 16;
/// How much later than its deadline a close may be seen on a loaded machine.
const SLACK: Duration = Duration::from_secs(4);

/// The start of a TLS ClientHello record that announces 512 bytes and sends one.
const HALF_CLIENT_HELLO: &[u8] = &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01];

/// What the strangers saw.
#[derive(Debug)]
struct Seen {
    opened: usize,
    closed: usize,
    /// The shortest and longest any connection lived, from before its connect to its close
    /// seen (or to the end, for those still open).
    shortest: Duration,
    longest: Duration,
}

/// Keeps `held` stalled connections to `addr` open from the loopback addresses `127.0.0.<h>`
/// of `hosts` in turn until `stop`, opening a new one for each the probe closes; `ready` once
/// the first `held` are open.
async fn strangers(
    addr: SocketAddr,
    hosts: &'static [u8],
    held: usize,
    ready: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> Seen {
    let mut seen = Seen {
        opened: 0,
        closed: 0,
        shortest: Duration::MAX,
        longest: Duration::ZERO,
    };
    let mut open: Vec<(TcpStream, Instant)> = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let mut still = Vec::new();
        for (stream, since) in open.drain(..) {
            let mut buf = [0u8; 64];
            match stream.try_read(&mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => still.push((stream, since)),
                Ok(n) if n > 0 => still.push((stream, since)),
                _ => {
                    seen.closed += 1;
                    seen.shortest = seen.shortest.min(since.elapsed());
                    seen.longest = seen.longest.max(since.elapsed());
                }
            }
        }
        open = still;
        while open.len() < held {
            let host = hosts[seen.opened % hosts.len()];
            let socket = TcpSocket::new_v4().unwrap();
            socket
                .bind(SocketAddr::from((Ipv4Addr::new(127, 0, 0, host), 0)))
                .unwrap();
            let since = Instant::now();
            let mut stream = socket.connect(addr).await.unwrap();
            if (seen.opened / hosts.len()) % 2 == 1 {
                stream.write_all(HALF_CLIENT_HELLO).await.unwrap();
            }
            open.push((stream, since));
            seen.opened += 1;
        }
        ready.store(true, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (_, since) in &open {
        seen.longest = seen.longest.max(since.elapsed());
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_smoke_completes_while_strangers_hold_more_connections_than_the_cap() {
    let tmp = tempfile::tempdir().unwrap();
    let sim = loopback_simulator().await;
    let (ca, cert, key) = test_ca();
    let file = |name: &str, text: &str| {
        let path = tmp.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (ca, cert, key) = (
        file("ca.pem", &ca),
        file("probe.pem", &cert),
        file("probe.key", &key),
    );
    let token = file("token", TOKEN);
    let (cap, per_source) = (CAP.to_string(), (CAP / 2).to_string());
    let handshake = HANDSHAKE_S.to_string();

    // The key may go to the simulator's zai route and nowhere else (deny by default).
    let allowed = format!("{KEY_VAR}={}", sim.profile_endpoint("zai"));
    let mut command = Command::new(bin());
    command
        .current_dir(tmp.path())
        .args([
            "probe",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--region",
            "east",
        ])
        .args([
            "--credential",
            KEY_VAR,
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
        ])
        .args(["--token-file", &token, "--handshake-timeout-s", &handshake])
        .args([
            "--unauthenticated-timeout-s",
            "2",
            "--max-unauthenticated",
            &cap,
        ])
        .args(["--max-unauthenticated-per-source", &per_source])
        .args(["--allow-endpoint", &allowed])
        .env(KEY_VAR, SECRET);
    let mut probe = LoggedChild::spawn("probe", command, &tmp.path().join("probe.log")).unwrap();
    let addr: SocketAddr = probe
        .wait_ready(Duration::from_secs(60), |line| {
            line.strip_prefix(&format!(
                "probe: region east serving credentials {KEY_VAR} on "
            ))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|addr| addr.parse().ok())
        })
        .unwrap_or_else(|e| panic!("{e}"));

    let data = sample_dataset(tmp.path(), "data", 20260902);
    let prov = Prov {
        key: "zai".into(),
        profile: "zai".into(),
        // Each answer takes 1.5 s, so the smoke outlasts the unauthenticated timeout (2 s):
        // a probe that took the coordinator's connection for a stranger's would cut it.
        extra: format!(
            "    auth: {{scheme: bearer, env: {KEY_VAR}}}\n    extra_headers: {{x-sim-schedule: \"0,1500\"}}\n"
        ),
    };
    let spec = write_spec(tmp.path(), &data, &[prov], 1, 0.01, 2_000);
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("sim://zai", &sim.profile_endpoint("zai"));
    let url = format!("https://localhost:{}", addr.port());
    std::fs::write(
        &spec,
        format!("{text}regions:\n  - name: east\n    probe: {url}\n"),
    )
    .unwrap();

    // Twice the cap from two addresses, and a few more from a third, held for the whole smoke:
    // the cap takes the many first, so the few last until the handshake deadline.
    let stop = Arc::new(AtomicBool::new(false));
    let (flood_ready, patient_ready) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let started = Instant::now();
    let flood = tokio::spawn(strangers(
        addr,
        &[2, 3],
        2 * CAP,
        flood_ready.clone(),
        stop.clone(),
    ));
    let patient = tokio::spawn(strangers(
        addr,
        &[4],
        4,
        patient_ready.clone(),
        stop.clone(),
    ));
    while !flood_ready.load(Ordering::SeqCst) || !patient_ready.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cwd = tmp.path().to_path_buf();
    let spec_arg = spec.to_str().unwrap().to_string();
    let o = tokio::task::spawn_blocking(move || {
        run_bin(
            &cwd,
            &["smoke", "--spec", &spec_arg],
            &[
                ("OPENBENCH_PROBE_TOKEN", TOKEN),
                ("OPENBENCH_PROBE_CA", &ca),
            ],
        )
    })
    .await
    .unwrap();
    let deadline = Duration::from_secs(HANDSHAKE_S);
    tokio::time::sleep_until((started + 2 * deadline + Duration::from_secs(1)).into()).await;
    stop.store(true, Ordering::SeqCst);
    let (flood, patient) = (flood.await.unwrap(), patient.await.unwrap());
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    // The simulator's answers are not the workflow's (the quality gate may fail the smoke):
    // what matters is that every request reached the provider through the probe and back.
    assert!(
        out.contains("smoke attempt 1"),
        "{out}\n{}",
        probe.log_text()
    );
    let run_dir = printed_run_dir(&o.stdout);
    let recs = records(&run_dir.join(layout::smoke_results(1)));
    assert_eq!(recs.len(), 3, "{out}");
    for r in &recs {
        assert_eq!(
            r.outcome,
            Outcome::Completed,
            "{:?} {:?}",
            r.error_type,
            r.error_message
        );
    }
    println!("the flood: {flood:?}\nthe patient: {patient:?}");
    assert!(flood.closed > CAP, "the probe closed only {flood:?}");
    for seen in [&flood, &patient] {
        assert!(
            seen.longest <= deadline + SLACK,
            "a stalled connection stayed open {:?}, past the {deadline:?} handshake deadline",
            seen.longest
        );
    }
    // The few were closed by the deadline, not by the cap.
    assert!(patient.closed >= 4, "{patient:?}");
    assert!(patient.shortest >= deadline, "{patient:?}");
    assert!(!probe.log_text().contains(SECRET));
}
