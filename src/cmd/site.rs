//! `site`: the published side built from the results store (docs/site.md) — `site publish`
//! names a stored complete run as a snapshot under an approval id, `site build` writes the
//! static site of every published snapshot, `site serve` previews a built site on loopback.

use super::store::StoreArg;
use anyhow::Context;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use openbench_store::Store;
use openbench_store::snapshot::Recorded;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

/// The `site` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SiteCommand {
    /// Publish a stored complete run as a snapshot (the site shows only published snapshots).
    Publish(PublishArgs),
    /// Build the static site from the store's published snapshots.
    Build(BuildArgs),
    /// Serve a built site on 127.0.0.1 for previewing.
    Serve(ServeArgs),
}

/// Arguments of `site publish`.
#[derive(Debug, clap::Args)]
pub struct PublishArgs {
    /// The stored run to publish (its run id).
    #[arg(long = "run", value_name = "RUN_ID")]
    run_id: String,
    /// Who approved the publication (recorded with the snapshot, as `run --approval-id`).
    #[arg(long)]
    approval_id: String,
    #[command(flatten)]
    store: StoreArg,
}

/// Arguments of `site build`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Folder to write the site into (created if needed).
    #[arg(long, default_value = "public")]
    out: PathBuf,
}

/// Arguments of `site serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The built site's folder.
    dir: PathBuf,
    /// Port on 127.0.0.1 (0: any free port, printed).
    #[arg(long, default_value_t = 8000)]
    port: u16,
}

/// Runs a `site` subcommand.
pub async fn run(command: SiteCommand) -> anyhow::Result<ExitCode> {
    match command {
        SiteCommand::Publish(args) => {
            let said = tokio::task::spawn_blocking(move || -> anyhow::Result<String> {
                let mut store = Store::open(&args.store.location)?;
                let now = openbench_common::clock::now_rfc3339();
                let recorded = openbench_store::snapshot::publish(
                    &mut store,
                    &args.run_id,
                    &args.approval_id,
                    &now,
                )?;
                Ok(match recorded {
                    Recorded::Added => format!(
                        "published snapshot: run {} (approval {}) in {}",
                        args.run_id,
                        args.approval_id.trim(),
                        store.name()
                    ),
                    Recorded::Unchanged => format!(
                        "already published, unchanged: run {} (approval {})",
                        args.run_id,
                        args.approval_id.trim()
                    ),
                })
            })
            .await??;
            println!("{said}");
        }
        SiteCommand::Build(args) => {
            let written = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let mut store = Store::open(&args.store.location)?;
                Ok(openbench_site::build(&mut store, &args.out)?)
            })
            .await??;
            println!("wrote {} files", written.len());
            if let Some(index) = written.iter().find(|p| p.ends_with("index.html")) {
                println!("open {}", index.display());
            }
        }
        SiteCommand::Serve(args) => serve(args).await?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Serves `args.dir` on 127.0.0.1 until Ctrl-C or SIGTERM.
async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let root = args
        .dir
        .canonicalize()
        .with_context(|| format!("site folder {}", args.dir.display()))?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .with_context(|| format!("binding 127.0.0.1:{}", args.port))?;
    let addr = listener.local_addr()?;
    println!("serving {} at http://{addr}/", root.display());
    let app = axum::Router::new().fallback(move |uri: Uri| {
        let root = root.clone();
        async move { file_response(&root, uri.path()).await }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = super::wait_for_signal().await;
        })
        .await
        .context("serving the site")
}

/// The file under `root` for a request path (`/` and folders: their `index.html`); paths with
/// `..` or other non-plain parts are refused.
async fn file_response(root: &Path, path: &str) -> Response {
    let relative = Path::new(path.trim_start_matches('/'));
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return StatusCode::NOT_FOUND.into_response();
    }
    let mut file = root.join(relative);
    if path.ends_with('/') || file.is_dir() {
        file = file.join("index.html");
    }
    let kind = match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("json") => "application/json",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    };
    match tokio::fs::read(&file).await {
        Ok(bytes) => ([(header::CONTENT_TYPE, kind)], bytes).into_response(),
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}
