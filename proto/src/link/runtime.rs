//! A runtime of its own for the link's control traffic: the coordinator's health pings (and the
//! connection they travel on), and the probe's gRPC server. Streams in flight (thousands of
//! held requests, large answers) keep the main runtime's workers busy; a ping polled there waits
//! its turn behind them, goes unanswered for its timeout, and the region is declared down while
//! it is merely busy (docs/faults.md, "The link is not starved by streams"). A task spawned on
//! this runtime runs on its own OS thread, so the scheduler gives it the CPU between the main
//! runtime's tasks.

use std::sync::Arc;
use std::sync::Mutex;

/// A single-threaded tokio runtime on an OS thread of its own, kept while any clone is alive;
/// the last clone dropped stops it (from any context, async or not).
#[derive(Clone, Debug)]
pub struct LinkRuntime(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    handle: tokio::runtime::Handle,
    stop: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Ok(mut stop) = self.stop.lock()
            && let Some(stop) = stop.take()
        {
            let _ = stop.send(());
        }
    }
}

impl LinkRuntime {
    /// Starts the runtime on a thread named `name`.
    pub fn start(name: &str) -> std::io::Result<LinkRuntime> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                // Drives every task spawned through the handle until the last clone is dropped;
                // the runtime is then dropped here, outside any async context.
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })?;
        Ok(LinkRuntime(Arc::new(Inner {
            handle,
            stop: Mutex::new(Some(stop)),
        })))
    }

    /// The handle to spawn on (or to enter, so that what is created there, a channel's
    /// connection task or a server's connections, lives on this runtime).
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.0.handle
    }

    /// Runs `future` to its end on this runtime and returns its output; an error when the
    /// runtime stopped first.
    pub async fn run<T: Send + 'static>(
        &self,
        future: impl std::future::Future<Output = T> + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        self.0.handle.spawn(future).await
    }
}
