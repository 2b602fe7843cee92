//! One module per subcommand (or family of subcommands).

pub mod bench;
pub mod bench_meter;
pub mod compare;
pub mod dataset;
pub mod demo;
pub mod fidelity;
pub mod load_bench;
pub mod own_endpoint;
pub mod preflight;
pub mod probe;
pub mod relay;
pub mod report;
pub mod runs;
pub mod score;
pub mod sim;
pub mod sim_upstream;
pub mod site;
pub mod spec_reference;
pub mod store;
pub mod watch;

use anyhow::Context;

/// Resolves on Ctrl-C or, on Unix, SIGTERM; an error when a handler cannot be installed. The one
/// signal wait of every long-running command (`run`, `smoke`, `sim serve`, `probe serve`).
pub async fn wait_for_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.context("waiting for Ctrl-C")?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    Ok(())
}
