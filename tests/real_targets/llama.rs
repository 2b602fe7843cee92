//! llama.cpp's `llama-server` serving Gemma 3 270M on loopback, as the tests start it: whether it
//! is installed (`deploy/local/llama-server.sh installed`), its paths, and instances on ports they
//! bind themselves, with a chosen number of threads and of parallel slots.

use super::child::{LoggedChild, address_after};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How long an instance may take to load the model and listen.
const START_LIMIT: Duration = Duration::from_secs(180);

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/local/llama-server.sh")
}

/// `Err(why)` when the server build or the weights are missing (the script's own words).
pub fn installed() -> Result<(), String> {
    let out = Command::new("bash")
        .arg(script())
        .arg("installed")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script().display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}

/// The server binary and the model file, as `llama-server.sh paths` prints them.
pub struct ServerPaths {
    pub server: PathBuf,
    pub model: PathBuf,
}

/// Reads the paths from `llama-server.sh paths`.
pub fn server_paths() -> ServerPaths {
    let out = Command::new("bash")
        .arg(script())
        .arg("paths")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "llama-server.sh paths failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("llama-server.sh paths printed no {name}: {text}"))
    };
    ServerPaths {
        server: field("server="),
        model: field("model="),
    }
}

/// One llama-server instance on the port it chose itself (`--port 0`, read back from its
/// `listening on http://…` line); killed when dropped. Flags as `llama-server.sh start` uses.
pub struct Instance {
    _child: LoggedChild,
    pub port: u16,
}

/// Starts an instance named `name` with `threads` threads and `slots` parallel slots (`-np`,
/// continuous batching across them; the 4,096-token context is split between the slots), its log
/// in `dir`. When it dies at start, the failure quotes why and its log's last lines.
pub fn start(paths: &ServerPaths, name: &str, threads: u32, slots: u32, dir: &Path) -> Instance {
    let bin_dir = paths.server.parent().unwrap_or(Path::new("."));
    let library_path = match std::env::var_os("LD_LIBRARY_PATH") {
        Some(old) => format!("{}:{}", bin_dir.display(), old.to_string_lossy()),
        None => bin_dir.display().to_string(),
    };
    let mut command = Command::new(&paths.server);
    command
        .env("LD_LIBRARY_PATH", library_path)
        .arg("-m")
        .arg(&paths.model)
        .args(["--host", "127.0.0.1", "--port", "0", "-t"])
        .arg(threads.to_string())
        .args(["--jinja", "--alias", "gemma-3-270m", "-c", "4096", "-np"])
        .arg(slots.to_string());
    let what = format!("llama-server instance {name}");
    let log = dir.join(format!("{name}.log"));
    let mut child = LoggedChild::spawn(&what, command, &log).unwrap_or_else(|e| panic!("{e}"));
    let addr = child
        .wait_ready(START_LIMIT, |line| {
            address_after(line, "listening on http://")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    Instance {
        _child: child,
        port: addr.port(),
    }
}
