//! The scripted upstream of `bench fidelity` and `bench load-generator`: simulator processes
//! (this binary's `sim serve`) replaying exact chunk schedules (`x-sim-schedule`) and, with
//! `x-sim-id`, logging when each write was handed to the connection (read back from
//! `GET /debug/writes/{id}`): the mechanism
//! `tests/timing_accuracy.rs` checks the probe against. Separate processes keep the upstream's CPU
//! out of the measured process and off its runtime, and loopback latency is measured on its own.

use anyhow::Context;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Instant;

/// Gaps of lane `lane`'s schedule, ms: the role chunk 5 ms after the request arrives, the first
/// answer piece 20 ms later, then `chunks − 1` gaps of 1 to 2·`gap_ms` − 1 ms (mean `gap_ms`)
/// from a fixed linear congruential sequence seeded by the lane, so every run replays the same
/// schedule.
pub fn schedule(lane: usize, chunks: usize, gap_ms: u64) -> Vec<u64> {
    let spread = (2 * gap_ms.max(1)).saturating_sub(1);
    let mut state = 12_345u64.wrapping_add(lane as u64);
    let mut gaps = vec![5, 20];
    for _ in 1..chunks {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        gaps.push(1 + (state >> 33) % spread);
    }
    gaps
}

/// One simulator process.
pub struct Upstream {
    child: Child,
    /// Kept open so the process never writes into a closed pipe.
    _stdout: BufReader<ChildStdout>,
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
}

impl Upstream {
    /// Starts `sim serve --port 0` from this binary and reads its address from the first line.
    pub fn start() -> anyhow::Result<Upstream> {
        let exe = std::env::current_exe().context("locating this binary")?;
        let mut child = Command::new(exe)
            .args(["sim", "serve", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting `sim serve` for the scripted upstream")?;
        let stdout = child
            .stdout
            .take()
            .context("the simulator's standard output")?;
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .context("reading the simulator's first line")?;
        // "simulator listening; base URL http://127.0.0.1:PORT/v1 (profile plain)"
        let origin = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .and_then(|url| url.strip_suffix("/v1"))
            .map(str::to_string);
        let Some(origin) = origin else {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("the simulator did not print its address: {line:?}");
        };
        Ok(Upstream {
            child,
            _stdout: stdout,
            origin,
        })
    }

    /// The chat endpoint of the default (`plain`) profile.
    pub fn endpoint(&self) -> String {
        format!("{}/v1/chat/completions", self.origin)
    }

    /// The write log of `id`: (write index, µs after the request arrived), in order.
    pub async fn write_log(
        &self,
        client: &reqwest::Client,
        id: &str,
    ) -> anyhow::Result<Vec<(usize, u64)>> {
        let url = format!("{}/debug/writes/{id}", self.origin);
        let stamps: Vec<Stamp> = client
            .get(&url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .with_context(|| format!("fetching {url}"))?
            .json()
            .await
            .with_context(|| format!("reading {url}"))?;
        Ok(stamps.into_iter().map(|s| (s.index, s.offset_us)).collect())
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(serde::Deserialize)]
struct Stamp {
    index: usize,
    offset_us: u64,
}

/// One-way loopback latency, µs: half the round trip of one byte over a TCP connection with
/// Nagle off (an echo thread on 127.0.0.1), `samples` times after a short warm-up.
pub fn loopback_one_way_us(samples: usize) -> anyhow::Result<Vec<f64>> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding the loopback echo")?;
    let addr = listener.local_addr()?;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut stream, _) = listener.accept()?;
        stream.set_nodelay(true)?;
        let mut byte = [0u8; 1];
        while stream.read(&mut byte)? == 1 {
            stream.write_all(&byte)?;
        }
        Ok(())
    });
    let mut stream = TcpStream::connect(addr).context("connecting to the loopback echo")?;
    stream.set_nodelay(true)?;
    let mut out = Vec::with_capacity(samples);
    let mut byte = [7u8; 1];
    for i in 0..samples + 100 {
        let start = Instant::now();
        stream.write_all(&byte)?;
        stream.read_exact(&mut byte)?;
        if i >= 100 {
            out.push(start.elapsed().as_nanos() as f64 / 2_000.0);
        }
    }
    drop(stream);
    let _ = echo.join();
    Ok(out)
}
