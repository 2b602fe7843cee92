//! `relay` (hidden, for tests and the compose topology): a delaying TCP relay with a
//! per-direction delay and a black hole, the stand-in for distance and partitions where the
//! kernel has no `netem` (see `openbench_inference::relay`). It runs inside the image, which
//! holds only this binary.

use anyhow::Context;
use openbench_inference::relay::{Relay, RelayConfig};
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `relay`.
#[derive(Debug, clap::Args)]
pub struct RelayArgs {
    /// Address to listen on (port 0 picks a free one; the bound address is printed).
    #[arg(long)]
    listen: String,
    /// Upstream `host:port` every connection is forwarded to (resolved per connection).
    #[arg(long)]
    to: String,
    /// Delay of each direction, ms (the per-direction flags override it).
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// Delay of bytes from the caller to the upstream, ms.
    #[arg(long)]
    up_delay_ms: Option<u64>,
    /// Delay of bytes from the upstream back to the caller, ms.
    #[arg(long)]
    down_delay_ms: Option<u64>,
    /// Start black-holed. On Unix, SIGUSR1 starts the black hole and SIGUSR2 ends it.
    #[arg(long)]
    blackhole: bool,
}

/// Runs the relay until Ctrl-C or SIGTERM.
pub async fn run(args: RelayArgs) -> anyhow::Result<ExitCode> {
    let config = RelayConfig {
        upstream_delay: Duration::from_millis(args.up_delay_ms.unwrap_or(args.delay_ms)),
        downstream_delay: Duration::from_millis(args.down_delay_ms.unwrap_or(args.delay_ms)),
        blackhole: args.blackhole,
    };
    let relay = Relay::start(&args.listen, &args.to, config).await?;
    println!(
        "relay listening on {} to {} (up {} ms, down {} ms{})",
        relay.local_addr(),
        args.to,
        config.upstream_delay.as_millis(),
        config.downstream_delay.as_millis(),
        if config.blackhole {
            ", black-holed"
        } else {
            ""
        }
    );
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut start = signal(SignalKind::user_defined1()).context("installing SIGUSR1")?;
        let mut end = signal(SignalKind::user_defined2()).context("installing SIGUSR2")?;
        let stop = super::wait_for_signal();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                r = &mut stop => { r?; break; }
                _ = start.recv() => {
                    relay.set_blackhole(true);
                    eprintln!("relay: black hole on");
                }
                _ = end.recv() => {
                    relay.set_blackhole(false);
                    eprintln!("relay: black hole off");
                }
            }
        }
    }
    #[cfg(not(unix))]
    super::wait_for_signal().await?;
    Ok(ExitCode::SUCCESS)
}
