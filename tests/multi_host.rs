#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The compose topology (`deploy/compose.yaml`) on this machine's Docker engine: a coordinator,
//! the simulator host and two probe regions on separate networks, TLS with client certificates
//! and a token on every coordinator↔probe hop. The image is built from this test's binary
//! (the Dockerfile's `prebuilt` target on the registry-free base).
//!
//! 1. Security, over the network: no token, a wrong token, plaintext to the TLS port, an
//!    over-long deadline and a second caller on a busy lane are each refused.
//! 2. Distance: a paired run with no added delay, then one with west's path to the providers
//!    delayed (400 ms up, 150 ms down) and east's coordinator↔probe hop delayed (400 ms each
//!    way). West's TTFA must shift by up + down; nothing of east may change.
//! 3. Faults: east's probe is killed mid-run and west's is cut off for 30 s; the run ends by
//!    itself, harness failures fall only on the affected lanes and rounds, and a resume ends
//!    with every lane-round recorded exactly once.
//!
//! Without docker, docker-compose or the base image the test reports itself skipped, unless
//! `OPENBENCH_REQUIRE_REAL_TARGETS` is set (CI sets it and builds the base first).

mod coordinator_support;
mod multi_host_support;
mod real_targets;

use coordinator_support::{bin, committed_counts, planned, records};
use multi_host_support::{Topology, build_image, missing_tools, must, security};
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir::{FULL_PLAN, FULL_RESULTS};
use real_targets::skip::skip_or_fail;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

/// West's added delay towards the providers and back, ms. Asymmetric, so that every plausible
/// mistake moves the shift by at least 150 ms from the expected 550: one direction missing
/// (400 or 150), one delay applied to both directions (800 or 300).
const WEST_UP_MS: u64 = 400;
const WEST_DOWN_MS: u64 = 150;
/// East's added coordinator↔probe delay, ms, each direction.
const LINK_EAST_MS: u64 = 400;
/// Allowed error of a median shift, ms. The relay never releases a byte early, so the shift's
/// error is only what a loaded machine adds to wake-ups in the relay, the probe and the
/// simulator: the medians of 12 requests moved by under 5 ms on the shared 2-core development
/// machine. 100 ms is twenty times that and still below every error it must catch: a direction
/// missing or doubled (at least 150 ms off, see above) or the coordinator↔probe delay leaking
/// into east's timings (+400 ms or more).
const TOLERANCE_MS: f64 = 100.0;

/// The spec of the fault phase: short deadlines so a dead region costs 3 s per round, and
/// enough rounds (21) that the run outlasts the 30 s partition.
const FAULT_TIMEOUT_MS: u64 = 2_000;
const FAULT_GRACE_MS: u64 = 1_000;
const FAULT_ITEMS: u64 = 7;
/// Coordinator↔probe delay of the fault phase, ms each way: a healthy round then takes about a
/// second, so the kill lands mid-run rather than after a run of 100 ms rounds has ended.
const FAULT_LINK_MS: u64 = 250;
const PARTITION: Duration = Duration::from_secs(30);

#[test]
fn two_regions_over_tls_measure_distance_and_survive_faults() {
    if let Some(why) = missing_tools() {
        skip_or_fail(
            "multi_host::two_regions_over_tls_measure_distance_and_survive_faults",
            &why,
        );
        return;
    }
    let started = Instant::now();
    let build = build_image(Path::new(bin()));
    println!("image built in {:.1} s", build.as_secs_f64());
    let spec =
        std::fs::read_to_string(multi_host_support::repo().join("deploy/compose/two-regions.yaml"))
            .unwrap();
    let mut topology = Topology::new(&spec);
    topology.up();
    println!("topology up at {:.1} s", started.elapsed().as_secs_f64());

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(security::refusals(&topology));
    println!(
        "security cases done at {:.1} s",
        started.elapsed().as_secs_f64()
    );

    distance(&mut topology);
    println!("distance done at {:.1} s", started.elapsed().as_secs_f64());

    faults(&mut topology, &spec);
    println!(
        "multi-host test took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// A full run in the topology as it is; its records.
fn full_run(topology: &Topology) -> (Vec<TerminalRecord>, std::path::PathBuf) {
    let out = topology.coordinator(&[]).output().unwrap();
    assert!(out.status.success(), "the run failed: {}", text(&out));
    let dir = topology.run_dir(&out.stdout);
    (records(&dir.join(FULL_RESULTS)), dir)
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
}

/// Median of `field` over the completed records of `region`.
fn median(
    records: &[TerminalRecord],
    region: &str,
    field: fn(&TerminalRecord) -> Option<f64>,
) -> f64 {
    let mut values: Vec<f64> = records
        .iter()
        .filter(|r| r.region == region && r.outcome == Outcome::Completed)
        .map(|r| field(r).unwrap())
        .collect();
    assert!(!values.is_empty(), "no completed record in {region}");
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// (lane, round) → (outcome, answer): what a delay must never change.
fn answers(records: &[TerminalRecord]) -> BTreeMap<(String, u64), (Outcome, String)> {
    records
        .iter()
        .map(|r| {
            (
                (r.lane.clone(), r.round_index),
                (r.outcome, r.answer_text.clone()),
            )
        })
        .collect()
}

fn distance(topology: &mut Topology) {
    let (baseline, _) = full_run(topology);
    // 2 providers × 2 regions, 2 items × 3 families.
    assert_eq!(baseline.len(), 24, "{baseline:#?}");
    assert!(
        baseline.iter().all(|r| r.outcome == Outcome::Completed),
        "{baseline:#?}"
    );

    topology.set("WEST_PROVIDERS_UP_MS", &WEST_UP_MS.to_string());
    topology.set("WEST_PROVIDERS_DOWN_MS", &WEST_DOWN_MS.to_string());
    topology.set("LINK_EAST_DELAY_MS", &LINK_EAST_MS.to_string());
    topology.up();
    let (delayed, _) = full_run(topology);
    assert_eq!(delayed.len(), 24);

    let added = (WEST_UP_MS + WEST_DOWN_MS) as f64;
    let ttfa = |r: &TerminalRecord| r.ttfa_ms;
    let e2e = |r: &TerminalRecord| r.e2e_ms;
    // Causal: no delayed west request can see its first answer byte sooner than both delays.
    for r in delayed.iter().filter(|r| r.region == "west") {
        assert!(r.ttfa_ms.unwrap() >= added, "{r:#?}");
    }
    let west_shift = median(&delayed, "west", ttfa) - median(&baseline, "west", ttfa);
    let west_e2e_shift = median(&delayed, "west", e2e) - median(&baseline, "west", e2e);
    let east_ttfa = median(&delayed, "east", ttfa) - median(&baseline, "east", ttfa);
    let east_e2e = median(&delayed, "east", e2e) - median(&baseline, "east", e2e);
    println!(
        "west TTFA shift {west_shift:.1} ms (E2E {west_e2e_shift:.1} ms) for {added} ms configured \
         ({WEST_UP_MS} up + {WEST_DOWN_MS} down); east with {LINK_EAST_MS} ms each way on the \
         coordinator hop: TTFA {east_ttfa:+.1} ms, E2E {east_e2e:+.1} ms"
    );
    assert!(
        (west_shift - added).abs() <= TOLERANCE_MS,
        "west TTFA shifted {west_shift} ms"
    );
    assert!(
        (west_e2e_shift - added).abs() <= TOLERANCE_MS,
        "west E2E shifted {west_e2e_shift} ms"
    );
    assert!(
        east_ttfa.abs() <= TOLERANCE_MS,
        "east TTFA moved {east_ttfa} ms"
    );
    assert!(
        east_e2e.abs() <= TOLERANCE_MS,
        "east E2E moved {east_e2e} ms"
    );
    // Outcomes and answers are the simulator's, whatever the distance.
    assert_eq!(answers(&baseline), answers(&delayed));

    for name in [
        "WEST_PROVIDERS_UP_MS",
        "WEST_PROVIDERS_DOWN_MS",
        "LINK_EAST_DELAY_MS",
    ] {
        topology.set(name, "0");
    }
}

/// The first round (if any) in which `region` has a harness failure.
fn first_harness_round(records: &[TerminalRecord], region: &str) -> Option<u64> {
    records
        .iter()
        .filter(|r| r.region == region && r.outcome == Outcome::HarnessError)
        .map(|r| r.round_index)
        .min()
}

/// Waits (bounded) until the results file satisfies `done`; returns its records then.
fn wait_records(
    path: &Path,
    what: &str,
    done: impl Fn(&[TerminalRecord]) -> bool,
) -> Vec<TerminalRecord> {
    let started = Instant::now();
    loop {
        let recs = if path.exists() {
            records(path)
        } else {
            Vec::new()
        };
        if done(&recs) {
            return recs;
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "timed out waiting for {what}: {recs:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One line per round: each lane's outcome (H marks a harness failure), for the test's log.
fn print_rounds(records: &[TerminalRecord]) {
    let mut rounds: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for r in records {
        let mark = if r.outcome == Outcome::HarnessError {
            "H"
        } else {
            "ok"
        };
        rounds
            .entry(r.round_index)
            .or_default()
            .push(format!("{}={mark}", r.lane));
    }
    for (round, mut lanes) in rounds {
        lanes.sort();
        println!("  round {round:2}: {}", lanes.join(" "));
    }
}

fn faults(topology: &mut Topology, spec: &str) {
    let spec = spec
        .replace(
            "timeout_ms: 20000",
            &format!("timeout_ms: {FAULT_TIMEOUT_MS}"),
        )
        .replace(
            "harness_grace_ms: 5000",
            &format!("harness_grace_ms: {FAULT_GRACE_MS}"),
        )
        .replace(
            "full_items_per_family: 2",
            &format!("full_items_per_family: {FAULT_ITEMS}"),
        );
    topology.set_spec(&spec);
    topology.set("LINK_EAST_DELAY_MS", &FAULT_LINK_MS.to_string());
    topology.set("LINK_WEST_DELAY_MS", &FAULT_LINK_MS.to_string());
    topology.up();
    // Looked up before the run: a docker-compose call takes a second or more.
    let east = topology.container("probe-east");
    let west = topology.container("probe-west");
    let west_lan = topology.network("west-lan");
    let rounds = 3 * FAULT_ITEMS;
    let lanes: usize = 4;

    let run_started = Instant::now();
    let mut run = topology
        .coordinator(&[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(topology.path("fault-run.stderr")).unwrap())
        .spawn()
        .unwrap();
    // The coordinator prints its run directory first; the rest of its output is kept for errors.
    let stdout = run.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let dir = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the fault run printed no run directory");
        if line.starts_with("run directory: ") {
            break topology.run_dir(line.as_bytes());
        }
    };
    let path = dir.join(FULL_RESULTS);
    wait_records(&path, "round 0", |recs| {
        recs.iter().filter(|r| r.round_index == 0).count() == lanes
    });
    // Round 0 is in: kill east's probe.
    must("docker", &["kill", &east]);
    // Once east has a harness failure while west's lanes of that round completed, cut west.
    let seen = wait_records(&path, "east's first harness failure", |recs| {
        first_harness_round(recs, "east").is_some_and(|r| {
            recs.iter()
                .filter(|x| x.round_index == r && x.region == "west")
                .count()
                == 2
        })
    });
    let kill_round = first_harness_round(&seen, "east").unwrap();
    // West's rounds complete up to here were finished before the cut.
    let at_cut = records(&path);
    let west_done = |round: u64| {
        at_cut
            .iter()
            .filter(|r| r.round_index == round && r.region == "west")
            .count()
            == 2
    };
    let cut_after = (0..rounds).take_while(|r| west_done(*r)).last().unwrap();
    must("docker", &["network", "disconnect", &west_lan, &west]);
    let cut = Instant::now();
    std::thread::sleep(PARTITION);
    must(
        "docker",
        &[
            "network",
            "connect",
            "--alias",
            "probe-west-lan",
            &west_lan,
            &west,
        ],
    );
    println!(
        "west cut off for {:.1} s after round {cut_after}",
        cut.elapsed().as_secs_f64()
    );

    // No hang: the run ends by itself, each round bounded by deadline + grace.
    let bound = Duration::from_millis((FAULT_TIMEOUT_MS + FAULT_GRACE_MS + 2_000) * rounds)
        + Duration::from_secs(60);
    loop {
        if run.try_wait().unwrap().is_some() {
            break;
        }
        assert!(run_started.elapsed() < bound, "the run hung past {bound:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let status = run.wait().unwrap();
    let out_text = reader.join().unwrap()
        + &std::fs::read_to_string(topology.path("fault-run.stderr")).unwrap_or_default();
    println!(
        "fault run ended after {:.1} s",
        run_started.elapsed().as_secs_f64()
    );
    let first = records(&path);
    print_rounds(&first);
    assert!(
        !status.success(),
        "a run with dead regions reported complete: {out_text}"
    );

    // Harness failures only on the affected lanes and rounds: none before the kill; east's from
    // the kill on; west's only from rounds that started after the cut.
    for r in first.iter().filter(|r| r.outcome == Outcome::HarnessError) {
        match r.region.as_str() {
            "east" => assert!(r.round_index >= kill_round, "{r:#?}"),
            "west" => assert!(r.round_index > cut_after, "{r:#?}"),
            other => panic!("harness failure in {other}: {r:#?}"),
        }
        // TODO(i9-faults): once dead and partitioned regions are detected within the bound
        // (keepalive, health, reconnect), also assert that west's failures end in the first
        // round that starts after the reconnect plus that bound, and that each failure came
        // within the bound rather than after deadline + grace.
    }
    for r in first.iter().filter(|r| r.round_index < kill_round) {
        assert_eq!(r.outcome, Outcome::Completed, "{r:#?}");
    }
    for r in first
        .iter()
        .filter(|r| r.round_index == kill_round && r.region == "west")
    {
        assert_eq!(
            r.outcome,
            Outcome::Completed,
            "a healthy region failed: {r:#?}"
        );
    }

    // Resume with both regions back: every lane-round exactly once.
    topology.must(&["start", "probe-east"]);
    topology.wait_for_log("probe-east", "probe: region east serving", 2);
    let inside = Path::new("/work/runs").join(dir.strip_prefix(topology.path("runs")).unwrap());
    let resumed = topology
        .coordinator(&[
            "run",
            "--run-dir",
            inside.to_str().unwrap(),
            "--full",
            "--approve-full",
            "--approval-id",
            "compose",
        ])
        .output()
        .unwrap();
    assert!(
        resumed.status.success(),
        "the resume failed: {}",
        text(&resumed)
    );
    let all = records(&path);
    let counts = committed_counts(&all);
    let plan = planned(&dir.join(FULL_PLAN));
    assert_eq!(plan.len() as u64, rounds * lanes as u64);
    for (id, lane, round) in &plan {
        assert_eq!(
            counts.get(id),
            Some(&1),
            "{lane} round {round} ({id}) is not recorded once"
        );
    }
    assert_eq!(counts.len(), plan.len());
}
