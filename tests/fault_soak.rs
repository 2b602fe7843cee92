#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Fault soak: a full run against a simulator process whose lanes between them
//! send every fault of the catalogue (one lane per fault quirk, plus stochastic profiles), through
//! a remote `probe serve`. The coordinator is SIGKILLed at seeded random moments and resumed, and
//! the probe is killed and restarted on its port in the middle of a session. Afterwards every
//! lane-round has exactly one committed record, `report` recomputes the run's artifacts byte for
//! byte, the coordinator's and the probe's resident memory stayed flat across sessions, and every
//! file of the run directory parses.
//!
//! `fault_soak_short` runs in CI (well under two minutes here); `fault_soak_long` is the same with
//! ten times the rounds and kills (`cargo test --test fault_soak -- --ignored`).

mod coordinator_support;
mod real_targets;

use coordinator_support::kill::{Lcg, check_invariants, result_lines, rss_bytes, run_until_killed};
use coordinator_support::*;
use openbench_common::rundir as layout;
use openbench_simulator::CATALOGUE;
use real_targets::child::LoggedChild;
use real_targets::ours::{start_probe, start_simulator};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Profiles with their own stochastic failure draws, beside the one-fault lanes.
const STOCHASTIC: [&str; 3] = ["zai", "nebius", "parasail"];

/// How big a soak is.
struct Size {
    /// Items per family (rounds = 3 × items).
    items: usize,
    /// Sessions killed at a random moment before the final resume.
    kills: usize,
}

#[test]
fn fault_soak_short() {
    soak(&Size { items: 3, kills: 4 }, 0x50a6_0001);
}

#[test]
#[ignore = "long: about ten times the short soak"]
fn fault_soak_long() {
    soak(
        &Size {
            items: 20,
            kills: 40,
        },
        0x50a6_0002,
    );
}

/// One lane per fault of the catalogue (on the `plain` profile) and the stochastic profiles.
fn providers() -> Vec<Prov> {
    let mut out: Vec<Prov> = CATALOGUE
        .iter()
        .filter(|(quirk, _, _)| quirk.is_fault())
        .map(|(_, name, _)| Prov {
            key: format!("f-{name}"),
            profile: "plain".into(),
            extra: format!("    extra_headers: {{x-sim-quirk: {name}}}\n"),
        })
        .collect();
    out.extend(STOCHASTIC.iter().map(|p| Prov::sim(p)));
    out
}

/// The spec: `providers` served by the simulator process at `sim_root` (`http://host:port`),
/// through the probe at `probe`, with small stream limits so the floods stay small on disk.
fn write_soak_spec(
    dir: &Path,
    data: &Path,
    providers: &[Prov],
    items: usize,
    sim_root: &str,
    probe: &str,
) -> PathBuf {
    let spec = write_spec(dir, data, providers, items, 0.01, 400);
    let mut text = std::fs::read_to_string(&spec).unwrap().replace(
        &format!("  harness_grace_ms: {HARNESS_GRACE_MS}\n"),
        &format!(
            "  harness_grace_ms: {HARNESS_GRACE_MS}\n  limits: {{line_bytes: 65536, event_bytes: 65536, events: 1000}}\n"
        ),
    );
    for profile in ["plain"].iter().chain(STOCHASTIC.iter()) {
        text = text.replace(
            &format!("endpoint: sim://{profile}\n"),
            &format!("endpoint: {sim_root}/profiles/{profile}/v1/chat/completions\n"),
        );
    }
    text.push_str(&format!("regions:\n  - name: east\n    probe: {probe}\n"));
    std::fs::write(&spec, text).unwrap();
    spec
}

/// A `probe serve` for region east of `spec` on `listen`; returns it and its address.
fn start_east_probe(
    dir: &Path,
    spec: &str,
    listen: &str,
    generation: usize,
) -> (LoggedChild, String) {
    start_probe(
        dir,
        &format!("probe-{generation}"),
        spec,
        "east",
        listen,
        &[],
    )
}

/// Resident memory of the probe process.
fn probe_rss(probe: &mut Option<LoggedChild>) -> u64 {
    probe
        .as_mut()
        .and_then(LoggedChild::pid)
        .and_then(rss_bytes)
        .unwrap_or(0)
}

fn soak(size: &Size, seed: u64) {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let data = sample_dataset(work, "data", 20260902);
    let (_sim, sim_base) = start_simulator(work, &data);
    let sim_root = sim_base
        .trim_end_matches('/')
        .trim_end_matches("/v1")
        .to_string();
    let providers = providers();
    let lanes = providers.len();
    // The probe reads its providers from the spec; the spec then learns the probe's address.
    let spec = write_soak_spec(
        work,
        &data,
        &providers,
        size.items,
        &sim_root,
        "http://127.0.0.1:1",
    );
    let spec_s = spec.to_str().unwrap().to_string();
    let (first_probe, probe_addr) = start_east_probe(work, &spec_s, "127.0.0.1:0", 0);
    let mut probe = Some(first_probe);
    write_soak_spec(
        work,
        &data,
        &providers,
        size.items,
        &sim_root,
        &format!("http://{probe_addr}"),
    );
    let o = run_bin(work, &["init", "--spec", &spec_s], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = printed_run_dir(&o.stdout);

    let mut rng = Lcg(seed);
    let mut coordinator_peaks: Vec<u64> = Vec::new();
    let mut probe_rss_after: Vec<u64> = Vec::new();
    let mut restarted = false;
    let mut kills = 0;
    let restart_in = rng.next_in(0, size.kills as u64) as usize;
    for session in 0..size.kills {
        let now = result_lines(&dir);
        let target = now + rng.next_in(lanes as u64, lanes as u64 * 3) as usize;
        let extra = Duration::from_millis(rng.next_in(0, 60));
        // In one session the probe is restarted halfway to the kill.
        let restart_at = (session == restart_in).then_some(now + (target - now) / 2);
        let mut peak = 0u64;
        kills += usize::from(run_until_killed(
            work,
            &spec_s,
            &dir,
            Some(target),
            extra,
            |pid| {
                peak = peak.max(rss_bytes(pid).unwrap_or(0));
                if !restarted && restart_at.is_some_and(|at| result_lines(&dir) >= at) {
                    // The probe dies mid-session and comes back on the same port.
                    restarted = true;
                    drop(probe.take());
                    probe = Some(start_east_probe(work, &spec_s, &probe_addr, 1).0);
                }
            },
        ));
        coordinator_peaks.push(peak);
        probe_rss_after.push(probe_rss(&mut probe));
        check_invariants(&dir, true, lanes);
    }
    let mut peak = 0u64;
    let killed = run_until_killed(work, &spec_s, &dir, None, Duration::ZERO, |pid| {
        peak = peak.max(rss_bytes(pid).unwrap_or(0));
    });
    assert!(!killed);
    coordinator_peaks.push(peak);
    probe_rss_after.push(probe_rss(&mut probe));
    assert!(restarted, "the probe restart never happened");
    assert!(kills * 2 >= size.kills, "only {kills} kills landed mid-run");

    // Exactly one committed record per lane-round, and nothing uncommitted left behind.
    check_invariants(&dir, false, lanes);
    let plan = planned(&dir.join(layout::FULL_PLAN));
    let counts = committed_counts(&records(&dir.join(layout::FULL_RESULTS)));
    assert_eq!(plan.len(), 3 * size.items * lanes);
    for (id, lane, round) in &plan {
        assert_eq!(counts.get(id), Some(&1), "{lane} round {round}: {id}");
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(layout::RUN_MANIFEST)).unwrap()).unwrap();
    assert_eq!(manifest["status"], "complete", "{manifest}");

    // `report` recomputes what the run wrote, byte for byte.
    let derived = [
        layout::EVALUATIONS,
        layout::FAILURES,
        layout::METRICS,
        layout::PAIRED,
        layout::REPORT_MD,
        layout::REPORT_HTML,
    ];
    let before: Vec<Vec<u8>> = derived
        .iter()
        .map(|n| std::fs::read(dir.join(n)).unwrap())
        .collect();
    let o = run_bin(work, &["report", "--run-dir", dir.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (name, bytes) in derived.iter().zip(&before) {
        assert!(
            &std::fs::read(dir.join(name)).unwrap() == bytes,
            "{name} differs after report"
        );
    }

    // Every file parses.
    for file in files_under(&dir) {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with('.') {
            continue; // the writer lock and the manifest's reserve
        }
        let bytes = std::fs::read(&file).unwrap();
        if name.ends_with(".jsonl") {
            for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
                if !line.is_empty() {
                    let parsed: Result<serde_json::Value, _> = serde_json::from_slice(line);
                    assert!(parsed.is_ok(), "{}:{}: {parsed:?}", file.display(), n + 1);
                }
            }
        } else if name.ends_with(".json") {
            let parsed: Result<serde_json::Value, _> = serde_json::from_slice(&bytes);
            assert!(parsed.is_ok(), "{}: {parsed:?}", file.display());
        } else if name.ends_with(".md") || name.ends_with(".html") {
            assert!(std::str::from_utf8(&bytes).is_ok(), "{}", file.display());
        }
    }

    // Memory stayed flat: no session's peak (nor the long-lived probe) grew past the first by
    // more than half again plus 16 MiB.
    let mib = |b: &u64| b / (1 << 20);
    println!(
        "fault soak: {} lanes × {} rounds, {} sessions ({kills} killed); coordinator peak RSS per session (MiB): {:?}; probe RSS after each (MiB): {:?}",
        lanes,
        3 * size.items,
        coordinator_peaks.len(),
        coordinator_peaks.iter().map(mib).collect::<Vec<_>>(),
        probe_rss_after.iter().map(mib).collect::<Vec<_>>()
    );
    let flat = |series: &[u64], what: &str| {
        let first = series.iter().copied().find(|v| *v > 0).unwrap_or(0);
        for v in series {
            assert!(
                *v <= first + first / 2 + (16 << 20),
                "{what} grew: {series:?}"
            );
        }
    };
    flat(&coordinator_peaks, "coordinator RSS");
    flat(&probe_rss_after, "probe RSS");
}
