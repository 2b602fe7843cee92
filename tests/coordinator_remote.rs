//! The coordinator against remote probes (real probe servers on loopback, a real simulator as the
//! providers): the probes hold the keys and the coordinator none; every record names its probe
//! and the manifest lists each session's probes; a probe with other code, or one missing a key,
//! stops the run before round 1 with nothing written; a probe moved to another port resumes,
//! while a changed endpoint or `extra_body` does not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use coordinator_support::*;
use openbench_common::record::Outcome;
use openbench_common::rundir as layout;
use openbench_coordinator::{
    CoordinatorError, RunDir, RunOptions, RunStatus, StopRequest, run_full,
};
use openbench_probe::Credentials;
use openbench_probe::endpoint_policy::EndpointPolicy;
use openbench_probe::server::{ProbeConfig, ProbeServerHandle, serve_on};
use openbench_probe::session_open::{CredentialSource, EndpointRules};
use openbench_simulator::SimServer;
use std::path::Path;
use std::sync::Arc;

/// The providers' key: only the probes hold it, never this process's environment.
const KEY_VAR: &str = "OBT_REMOTE_ONLY_KEY";
const SECRET: &str = "sk-remote-only-51d0c3e2";

/// A probe of `region` holding `credentials`, built from `code_digest`, whose keys may go only
/// to what `allowed` (`--allow-endpoint` values) allows.
async fn probe(
    region: &str,
    credentials: Credentials,
    code_digest: &str,
    allowed: &[String],
) -> ProbeServerHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ProbeConfig {
        region: region.into(),
        credentials: CredentialSource::Given(credentials),
        endpoints: EndpointRules {
            policy: EndpointPolicy::parse(allowed).unwrap(),
            ..EndpointRules::default()
        },
        code_digest: code_digest.into(),
    };
    serve_on(listener, config).await.unwrap()
}

/// A probe of `region` holding the key, which its owner lets go to `sim`'s profiles.
async fn keyed_probe(region: &str, sim: &SimServer) -> ProbeServerHandle {
    let allowed = format!("{KEY_VAR}=http://{}/profiles/", sim.addr());
    probe(
        region,
        Credentials::from_pairs([(KEY_VAR, SECRET)]),
        "test-code-digest",
        &[allowed],
    )
    .await
}

/// A spec whose two providers (`zai`, `together`) are the simulator's profiles over http, with
/// bearer auth from [`KEY_VAR`], probed from the regions given as (name, probe URL).
fn spec(
    dir: &Path,
    sim: &SimServer,
    regions: &[(&str, String)],
    items: usize,
) -> std::path::PathBuf {
    let data = dir.join("data");
    if !data.exists() {
        sample_dataset(dir, "data", 20260902);
    }
    let auth = format!("    auth: {{scheme: bearer, env: {KEY_VAR}}}\n");
    let providers = [
        Prov {
            key: "zai".into(),
            profile: "zai".into(),
            extra: auth.clone(),
        },
        Prov {
            key: "together".into(),
            profile: "together".into(),
            extra: auth,
        },
    ];
    let path = write_spec(dir, &data, &providers, items, 0.01, 2_000);
    let mut text = std::fs::read_to_string(&path).unwrap();
    for profile in ["zai", "together"] {
        text = text.replace(&format!("sim://{profile}"), &sim.profile_endpoint(profile));
    }
    text.push_str("regions:\n");
    for (name, url) in regions {
        text.push_str(&format!("  - name: {name}\n    probe: {url}\n"));
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn url(handle: &ProbeServerHandle) -> String {
    format!("http://{}", handle.addr())
}

/// Every file under `dir`, read as (lossy) text.
fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.push_str(&all_text(&path));
        } else {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
    out
}

fn manifest(dir: &Path) -> openbench_common::rundir::RunManifest {
    serde_json::from_slice(&std::fs::read(dir.join(layout::RUN_MANIFEST)).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_probes_hold_the_keys_and_records_name_their_probe() {
    assert!(
        std::env::var_os(KEY_VAR).is_none(),
        "{KEY_VAR} must not be in the coordinator's environment"
    );
    let tmp = tempfile::tempdir().unwrap();
    let sim = loopback_simulator().await;
    let east = keyed_probe("east", &sim).await;
    let west = keyed_probe("west", &sim).await;
    let spec = spec(
        tmp.path(),
        &sim,
        &[("east", url(&east)), ("west", url(&west))],
        2,
    );
    // The coordinator loads no key: every region is remote.
    let inputs = inputs(&spec);
    assert_eq!(inputs.credentials.names().count(), 0);
    let run = RunDir::create(&inputs, Some("R-1"), "test").unwrap();
    let outcome = run_full(&inputs, &run, "R-1", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    // 3 families × 2 items = 6 rounds × (2 providers × 2 regions).
    let recs = records(&run.dir.join(layout::FULL_RESULTS));
    assert_eq!(recs.len(), 24);
    assert!(recs.iter().all(|r| r.outcome == Outcome::Completed));

    let m = manifest(&run.dir);
    assert_eq!(m.session_probes.len(), 1);
    let session = &m.session_probes[0];
    assert_eq!((session.session, session.attempt), (1, 0));
    let regions: Vec<&str> = session.probes.keys().map(String::as_str).collect();
    assert_eq!(regions, ["east", "west"]);
    for (region, probe) in &session.probes {
        assert_eq!(probe.host_fingerprint.len(), 64);
        assert_eq!(
            probe.probe_id,
            format!("{region}@{}", &probe.host_fingerprint[..12])
        );
        assert_eq!(probe.version, openbench_common::VERSION);
        assert!(
            probe.clock_source.starts_with("monotonic"),
            "{}",
            probe.clock_source
        );
    }
    for r in &recs {
        let want = &session.probes[&r.region].probe_id;
        assert_eq!(
            r.probe_id.as_ref(),
            Some(want),
            "{} {}",
            r.lane,
            r.round_index
        );
    }
    // The key reached the providers through the probes, and no file of the run holds it.
    assert!(!all_text(&run.dir).contains(SECRET));
    drop(run);
    east.shutdown().await.unwrap();
    west.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_probe_resumes_and_a_changed_adapter_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let sim = loopback_simulator().await;
    let east = keyed_probe("east", &sim).await;
    let path = spec(tmp.path(), &sim, &[("east", url(&east))], 2);
    let inputs = inputs(&path);
    let run = RunDir::create(&inputs, Some("R-2"), "test").unwrap();
    // Stop after the first round: the run is left to resume.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(StopRequest::None);
    let stop_tx = Arc::new(stop_tx);
    let on_progress: openbench_coordinator::ProgressFn = {
        let stop_tx = stop_tx.clone();
        Arc::new(move |p: &openbench_coordinator::Progress| {
            if p.rounds_done >= 1 {
                let _ = stop_tx.send(StopRequest::Finish);
            }
        })
    };
    let options = RunOptions {
        progress: Some(on_progress),
        stop: Some(stop_rx),
        targets: None,
        faults: Default::default(),
    };
    let first = run_full(&inputs, &run, "R-2", &options).await.unwrap();
    assert_eq!(first.status, RunStatus::Interrupted);
    let written = records(&run.dir.join(layout::FULL_RESULTS)).len();
    assert!(
        (2..12).contains(&written),
        "{written} records after the stop"
    );
    let dir = run.dir.clone();
    drop(run);

    // The probe moves to another port: the spec's probe URL changes, nothing else.
    east.shutdown().await.unwrap();
    let moved = keyed_probe("east", &sim).await;
    let moved_path = spec(tmp.path(), &sim, &[("east", url(&moved))], 2);
    let moved_inputs = coordinator_support::inputs(&moved_path);
    let run = RunDir::open(&moved_inputs, &dir, "test").unwrap();
    let second = run_full(&moved_inputs, &run, "R-2", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(second.status, RunStatus::Complete);
    let recs = records(&dir.join(layout::FULL_RESULTS));
    assert_eq!(recs.len(), 12, "every lane-round recorded exactly once");
    let m = manifest(&dir);
    assert_eq!(m.session_probes.len(), 2);
    assert!(
        recs.iter()
            .all(|r| r.probe_id.as_ref() == Some(&m.session_probes[1].probes["east"].probe_id))
    );
    drop(run);

    // A changed endpoint (another simulator route) or extra_body is another provider: refused.
    let original = std::fs::read_to_string(&moved_path).unwrap();
    let changes = [
        original.replace("/profiles/together/", "/profiles/fireworks/"),
        original.replace(
            "    max_tokens_field: max_tokens\n",
            "    max_tokens_field: max_tokens\n    extra_body: {top_k: 1}\n",
        ),
    ];
    for changed in changes {
        assert_ne!(changed, original);
        std::fs::write(&moved_path, &changed).unwrap();
        let changed_inputs = coordinator_support::inputs(&moved_path);
        let err = RunDir::open(&changed_inputs, &dir, "test").unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, CoordinatorError::LockMismatch { .. })
                && text.contains("adapters changed"),
            "{text}"
        );
    }
    moved.shutdown().await.unwrap();
}

/// A run that must stop before round 1: the error, and proof nothing was written.
async fn refused_before_round_one(probe: ProbeServerHandle) -> (String, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let sim = loopback_simulator().await;
    let path = spec(tmp.path(), &sim, &[("east", url(&probe))], 1);
    let inputs = inputs(&path);
    let run = RunDir::create(&inputs, Some("R-3"), "test").unwrap();
    let err = run_full(&inputs, &run, "R-3", &RunOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        records(&run.dir.join(layout::FULL_RESULTS)).len(),
        0,
        "a refused session wrote records"
    );
    let m = manifest(&run.dir);
    assert_eq!(m.status, RunStatus::Initialized, "{m:?}");
    assert_eq!(m.sessions, 0);
    probe.shutdown().await.unwrap();
    (err, tmp)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_built_from_other_code_is_refused_naming_region_and_field() {
    let other = probe(
        "east",
        Credentials::from_pairs([(KEY_VAR, SECRET)]),
        "0ther-code-digest",
        &[],
    )
    .await;
    let (err, _tmp) = refused_before_round_one(other).await;
    assert_eq!(
        err,
        "region east: the probe's code_digest differs: the probe has 0ther-code-d…, this run has \
         test-code-di…: the probe was built from other sources"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_without_the_key_refuses_the_session_naming_provider_and_variable() {
    let keyless = probe("east", Credentials::empty(), "test-code-digest", &[]).await;
    let (err, _tmp) = refused_before_round_one(keyless).await;
    assert_eq!(
        err,
        format!(
            "region east: the probe refused OpenSession: FailedPrecondition: probe in region east \
             lacks credentials: provider zai: credential variable {KEY_VAR} is not set on this \
             probe (its environment or .env); provider together: credential variable {KEY_VAR} \
             is not set on this probe (its environment or .env)"
        )
    );
}
