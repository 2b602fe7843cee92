//! Held streams: an upstream on 127.0.0.1 that accepts and never answers, a `probe serve` child
//! on a free loopback port, and a load spec through it (`load_held_streams`,
//! `load_resume_after_kill`).

use super::bin;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// An upstream on 127.0.0.1 that accepts every connection, reads whatever comes and never
/// answers; returns its port and the count of connections accepted.
pub fn holding_upstream() -> (u16, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let listener = socket.listen(4096).unwrap();
            port_tx.send(listener.local_addr().unwrap().port()).unwrap();
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = stream.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                    }
                });
            }
        });
    });
    (port_rx.recv().unwrap(), count)
}

/// A `probe serve` child, killed when dropped.
pub struct ProbeProcess {
    /// The child process.
    pub child: Child,
    /// Its listening address (`127.0.0.1:PORT`).
    pub addr: String,
}

impl Drop for ProbeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `probe serve` for `region` on a free loopback port and waits for its address.
pub fn start_probe(dir: &std::path::Path, spec: &str, region: &str) -> ProbeProcess {
    let mut child = Command::new(bin())
        .current_dir(dir)
        .args([
            "probe",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--spec",
            spec,
            "--region",
            region,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // It says where it listens on stderr.
    let mut out = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    // "probe: region far serving … on 127.0.0.1:PORT (plaintext, no token)"
    let addr = line
        .split(" on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    // Keeps reading so the probe never blocks on a full pipe, and passes its log on to the
    // test's stderr (shown when the test fails; RUST_LOG=info for more).
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            eprintln!("probe: {line}");
        }
    });
    ProbeProcess { child, addr }
}

/// A load spec: `users` closed-loop users for `measure_s` of provider `held` (the upstream on
/// `upstream`) through the probe at `probe` (region `far`), each request's deadline `timeout_ms`.
pub fn load_spec(
    upstream: u16,
    probe: &str,
    users: usize,
    measure_s: u64,
    timeout_ms: u64,
) -> String {
    format!(
        "benchmark: {{slug: load-held, workflow: load, schedule_version: load-held-v1}}
request: {{temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: {timeout_ms},
  harness_grace_ms: 60000}}
providers:
  - key: held
    endpoint: http://127.0.0.1:{upstream}/v1/chat/completions
    model: m
    auth: {{scheme: none}}
    max_tokens_field: max_tokens
dataset: {{source: ., manifest: none}}
run_root: runs
regions:
  - name: far
    probe: {probe}
load:
  seed: 1
  phases: {{warmup_s: 0, measure: {{duration_s: {measure_s}}}, cooldown_s: 0}}
  steps: [{{model: closed, concurrency: {users}}}]
  workload:
    kind: synthetic
    input_tokens: {{dist: fixed, tokens: 10}}
    output_tokens: {{dist: fixed, tokens: 16}}
"
    )
}

/// Peak resident memory (`VmHWM`) of a live process, in MiB.
pub fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}
