//! Sessions across real processes: `probe serve` holds the provider key (from its own
//! environment, declared with `--credential`) and a token, with no spec; a `smoke` without the
//! token is refused before round 1, naming the region, with no record written; with the token
//! and without the key in its own environment, the smoke runs on the probe's key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod real_targets;

use coordinator_support::*;
use openbench_common::record::Outcome;
use openbench_common::rundir as layout;
use real_targets::child::LoggedChild;
use std::process::Command;
use std::time::Duration;

const KEY_VAR: &str = "OBT_CLI_PROBE_KEY";
const SECRET: &str = "sk-cli-probe-0d9e7b41";
const TOKEN: &str = "cli-probe-token-77a1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_smoke_without_the_token_stops_up_front_and_with_it_runs_on_the_probes_key() {
    let tmp = tempfile::tempdir().unwrap();
    let sim = loopback_simulator().await;

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
            "--credential",
            KEY_VAR,
            "--allow-endpoint",
            &format!("{KEY_VAR}=http://{}/profiles/", sim.addr()),
        ])
        .env(KEY_VAR, SECRET)
        .env("OPENBENCH_PROBE_TOKEN", TOKEN);
    let mut probe = LoggedChild::spawn("probe", command, &tmp.path().join("probe.log")).unwrap();
    let addr = probe
        .wait_ready(Duration::from_secs(60), |line| {
            line.strip_prefix(&format!(
                "probe: region east serving credentials {KEY_VAR} on "
            ))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string)
        })
        .unwrap_or_else(|e| panic!("{e}"));

    let data = sample_dataset(tmp.path(), "data", 20260902);
    let prov = Prov {
        key: "zai".into(),
        profile: "zai".into(),
        extra: format!("    auth: {{scheme: bearer, env: {KEY_VAR}}}\n"),
    };
    let spec = write_spec(tmp.path(), &data, &[prov], 1, 0.01, 2_000);
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("sim://zai", &sim.profile_endpoint("zai"));
    std::fs::write(
        &spec,
        format!("{text}regions:\n  - name: east\n    probe: http://{addr}\n"),
    )
    .unwrap();
    let spec_arg = spec.to_str().unwrap();

    // Without the token: refused at Describe, naming the region; no record anywhere.
    let o = run_bin(tmp.path(), &["smoke", "--spec", spec_arg], &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "region east: the probe refused Describe: Unauthenticated: this probe requires a \
             bearer token"
        ),
        "{stderr}"
    );
    let refused = printed_run_dir(&o.stdout);
    assert_eq!(records(&refused.join(layout::smoke_results(1))).len(), 0);

    // With the token, and still no key in the coordinator's environment: the smoke runs.
    let o = run_bin(
        tmp.path(),
        &["smoke", "--spec", spec_arg],
        &[("OPENBENCH_PROBE_TOKEN", TOKEN)],
    );
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(out.contains("smoke attempt 1"), "{out}");
    let run_dir = printed_run_dir(&o.stdout);
    let recs = records(&run_dir.join(layout::smoke_results(1)));
    assert_eq!(recs.len(), 3, "{out}");
    for r in &recs {
        assert_ne!(r.outcome, Outcome::HarnessError, "{:?}", r.error_message);
        assert!(
            r.probe_id
                .as_deref()
                .is_some_and(|id| id.starts_with("east@"))
        );
    }
    let log = probe.log_text();
    assert!(!log.contains(SECRET));
    // The ready line lists what the key may reach.
    assert!(
        log.contains(&format!(
            "; keys may reach: {KEY_VAR} → http://{}/profiles/",
            sim.addr()
        )),
        "{log}"
    );
}
