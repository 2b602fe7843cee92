//! Our own binary as a real target of the multi-process tests: a `sim serve` process and a
//! `probe serve` process, each started with its log in the test's folder and waited on until it
//! prints its address.

use super::child::{LoggedChild, start_ready};
use std::path::Path;

/// The binary under test.
fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_openbench-inference")
}

/// A `sim serve` on a loopback port the kernel picks, at time scale 0.01, answering from
/// `dataset`; returns it with its base URL (`http://127.0.0.1:PORT/v1`).
pub fn start_simulator(dir: &Path, dataset: &Path) -> (LoggedChild, String) {
    let dataset = dataset.to_string_lossy();
    start_ready(
        bin(),
        dir,
        "simulator",
        &[
            "sim",
            "serve",
            "--port",
            "0",
            "--time-scale",
            "0.01",
            "--dataset",
            &dataset,
        ],
        &[],
        |line| {
            line.strip_prefix("simulator listening; base URL ")
                .and_then(|rest| rest.split_whitespace().next())
                .map(String::from)
        },
    )
}

/// A `probe serve` for `region` of `spec` listening on `listen` (`127.0.0.1:0` for any port),
/// logged as `dir/<what>.log`, with `env`; returns it with the address it serves on.
pub fn start_probe(
    dir: &Path,
    what: &str,
    spec: &str,
    region: &str,
    listen: &str,
    env: &[(&str, &str)],
) -> (LoggedChild, String) {
    let ready = format!("probe: region {region} serving ");
    start_ready(
        bin(),
        dir,
        what,
        &[
            "probe", "serve", "--listen", listen, "--spec", spec, "--region", region,
        ],
        env,
        |line| {
            line.strip_prefix(ready.as_str())
                .and_then(|rest| rest.rsplit(" on ").next())
                // "… on 127.0.0.1:PORT (plaintext, no token)": the address is the first word.
                .and_then(|addr| addr.split_whitespace().next())
                .map(str::to_string)
        },
    )
}
