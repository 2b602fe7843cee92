#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The PostgreSQL password never leaves the store location (issue 36, class 3): one run is
//! published through the binary to a real PostgreSQL (`deploy/postgres/test-server.sh`, trust
//! authentication, so any password is accepted) under every form a user writes its URL in —
//! password in the userinfo, in the query, behind an `@` in the query, an upper-case scheme,
//! `postgresql://`, the libpq keyword/value form — and under forms that cannot be read (a
//! missing `@`, a missing `//`, an unterminated quote, a stray query word). The sentinel
//! password is looked for in stdout, stderr (at trace verbosity), every file the command left in
//! its working directory and every span it exported over OTLP: it is in none of them. Accepted
//! forms name the store `scheme://host:port/database`; refused ones create no SQLite file.

mod coordinator_support;
mod otlp_support;
mod real_targets;

use coordinator_support::{Prov, printed_run_dir, run_bin, sample_dataset, write_spec};
use real_targets::skip::skip_or_fail;
use std::path::Path;

/// The URL `deploy/postgres/test-server.sh` exports.
const POSTGRES_ENV: &str = "OPENBENCH_TEST_POSTGRES_URL";
/// The password planted in every location.
const SENTINEL: &str = "Pw7SENTINEL9x";

/// Every byte a command left: its output and the files in its (otherwise empty) directory.
fn leftovers(cwd: &Path, o: &std::process::Output) -> (String, Vec<String>) {
    let mut text = String::from_utf8_lossy(&o.stdout).to_string();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    let files = std::fs::read_dir(cwd)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    (text, files)
}

/// Publishes `run_dir` to `store` from a fresh empty directory, exporting spans to `otlp`.
fn publish(store: &str, run_dir: &Path, otlp: &str) -> (bool, String, Vec<String>) {
    let cwd = tempfile::tempdir().unwrap();
    let o = run_bin(
        cwd.path(),
        &[
            "--otlp-endpoint",
            otlp,
            "publish",
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--store",
            store,
        ],
        &[("RUST_LOG", "trace")],
    );
    let (text, files) = leftovers(cwd.path(), &o);
    (o.status.success(), text, files)
}

#[test]
fn no_store_url_form_prints_stores_or_exports_its_password() {
    let Ok(url) = std::env::var(POSTGRES_ENV) else {
        skip_or_fail(
            "results_store_urls::no_store_url_form_prints_its_password",
            &format!("{POSTGRES_ENV} is not set (deploy/postgres/test-server.sh starts one)"),
        );
        return;
    };
    let config: postgres::Config = url.parse().unwrap();
    let host = match &config.get_hosts()[0] {
        postgres::config::Host::Tcp(h) => h.clone(),
        other => panic!("{other:?}"),
    };
    let port = config.get_ports()[0];
    let db = config.get_dbname().unwrap();
    let user = config.get_user().unwrap();

    // One small simulated run (3 rounds, one lane) to publish.
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 5);
    let spec = write_spec(tmp.path(), &data, &[Prov::sim("zai")], 1, 0.01, 5000);
    let o = run_bin(
        tmp.path(),
        &[
            "run",
            "--spec",
            spec.to_str().unwrap(),
            "--full",
            "--approve-full",
            "--approval-id",
            "URLS",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run_dir = tmp.path().join(printed_run_dir(&o.stdout));
    let receiver = otlp_support::Receiver::start();
    let otlp = format!("http://{}", receiver.addr);

    let named = format!("{host}:{port}/{db}");
    let accepted = [
        (
            format!("postgres://{user}:{SENTINEL}@{host}:{port}/{db}"),
            "postgres",
        ),
        (
            format!("postgres://{user}@{host}:{port}/{db}?password={SENTINEL}"),
            "postgres",
        ),
        (
            format!("postgres://{user}@{host}:{port}/{db}?password=Pw%40{SENTINEL}"),
            "postgres",
        ),
        (
            format!("postgres://{user}@{host}:{port}/{db}?password=Pw@{SENTINEL}"),
            "postgres",
        ),
        (
            format!(
                "postgres://{user}@{host}:{port}/{db}?application_name=a@b&password={SENTINEL}"
            ),
            "postgres",
        ),
        (
            format!("POSTGRES://{user}:{SENTINEL}@{host}:{port}/{db}"),
            "postgres",
        ),
        (
            format!("postgresql://{user}:{SENTINEL}@{host}:{port}/{db}"),
            "postgresql",
        ),
        (
            format!("host={host} port={port} dbname={db} user={user} password={SENTINEL}"),
            "postgres",
        ),
    ];
    for (location, scheme) in &accepted {
        let (ok, text, files) = publish(location, &run_dir, &otlp);
        assert!(ok, "{location}: {text}");
        assert!(
            text.contains(&format!(" to {scheme}://{named} in ")),
            "{location}: {text}"
        );
        assert!(
            !text.contains(SENTINEL),
            "{location} printed its password: {text}"
        );
        assert!(files.is_empty(), "{location} left files: {files:?}");
    }
    let refused = [
        format!("postgres://{user}:{SENTINEL}/{db}"),
        format!("postgres:{user}:{SENTINEL}@{host}:{port}/{db}"),
        format!("host={host} port={port} password='{SENTINEL}"),
        format!("postgres://{user}@{host}:{port}/{db}?password={SENTINEL}&{SENTINEL}"),
        format!("{user}:{SENTINEL}@{host}:{port}/{db}"),
        format!("postgres://{user}:{SENTINEL}@{host}:{port}/{db}#{SENTINEL}"),
        format!("redis://{user}:{SENTINEL}@{host}:{port}/{db}"),
        // Reads, but nothing listens on port 1: the connection error names no password either.
        format!("postgres://{user}:{SENTINEL}@{host}:1/{db}?password={SENTINEL}"),
    ];
    for location in &refused {
        let (ok, text, files) = publish(location, &run_dir, &otlp);
        assert!(!ok, "{location} was accepted: {text}");
        assert!(text.contains("results store"), "{location}: {text}");
        assert!(
            !text.contains(SENTINEL),
            "{location} printed its password: {text}"
        );
        assert!(
            files.is_empty(),
            "{location} fell through to SQLite: {files:?}"
        );
    }
    let spans = format!("{:?}", receiver.spans());
    assert!(!spans.contains(SENTINEL), "a span holds the password");
}
