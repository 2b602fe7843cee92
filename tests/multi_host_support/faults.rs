//! The fault phase of `tests/multi_host.rs`: east's probe container is killed mid-run
//! (`docker kill`), and started again once that shows (`docker start`: a new process that knows
//! no session, so the coordinator must open the run's session on it again before east's later
//! rounds are measured); then west's probe is cut off its network for 30 s (`docker network
//! disconnect` / `connect`). The run must end by itself, harness failures must fall only on the
//! affected lanes and rounds, each fault must show in the records within the coordinator's
//! detection bound (docs/faults.md), and the end-of-session re-run (or a resume) must leave
//! every lane-round recorded exactly once. It prints how long each fault took to show in the
//! records (the detection time, as the records can see it) and how long each region took to be
//! measured again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::{Topology, must};
use crate::coordinator_support::{committed_counts, planned, records};
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir::{FULL_PLAN, FULL_RESULTS};
use openbench_coordinator::health::LinkSettings;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Short deadlines, so that a region that is dead but not yet detected costs 3 s per round.
const TIMEOUT_MS: u64 = 2_000;
const GRACE_MS: u64 = 1_000;
/// 30 items × 3 families = 90 rounds of about a second each (east's rounds pace the run while
/// west is cut off; a detected dead lane costs nothing): the run outlasts the restart of east
/// and the partition of west (the test asserts it does).
const ITEMS: u64 = 30;
/// Coordinator↔probe delay, ms each way: a healthy round then takes about a second, so the kill
/// lands mid-run rather than after the run's 100 ms rounds have all ended.
const LINK_MS: u64 = 250;
const PARTITION: Duration = Duration::from_secs(30);
const LANES: usize = 4;

/// The bound within which a dead or partitioned region is detected: the coordinator's default
/// ping interval + ping timeout (3 s, docs/faults.md). Each fault must show in the records
/// within it.
fn detection_bound() -> Duration {
    LinkSettings::default().detection_bound()
}

/// How soon a region that is back must be measured again. A cut longer than the HTTP/2
/// keepalive (2 s + 5 s) closes the coordinator's connection, so the monitor's retries make new
/// ones; one started during the cut reaches the relay, whose connection upstream cannot be
/// made, and hangs until the link's 10 s connect timeout (`proto/src/link/client.rs`). The
/// bound: that timeout, then the longest retry backoff while down, one ping timeout for the
/// answered retry and one round (17 s; measured 14.1 s, about connect timeout + backoff).
fn recovery_bound() -> Duration {
    let link = LinkSettings::default();
    let connect_timeout = Duration::from_secs(10);
    connect_timeout
        + link.backoff_max
        + link.ping_timeout
        + Duration::from_millis(2 * LINK_MS + 500)
}

/// Runs the fault phase on `topology` (up, with `spec` as the base spec).
pub fn kill_and_partition(topology: &mut Topology, spec: &str) {
    let spec = spec
        .replace("timeout_ms: 20000", &format!("timeout_ms: {TIMEOUT_MS}"))
        .replace(
            "harness_grace_ms: 5000",
            &format!("harness_grace_ms: {GRACE_MS}"),
        )
        .replace(
            "full_items_per_family: 2",
            &format!("full_items_per_family: {ITEMS}"),
        );
    topology.set_spec(&spec);
    topology.set("LINK_EAST_DELAY_MS", &LINK_MS.to_string());
    topology.set("LINK_WEST_DELAY_MS", &LINK_MS.to_string());
    topology.up();
    // Looked up before the run: a docker-compose call takes a second or more.
    let east = topology.container("probe-east");
    let west = topology.container("probe-west");
    let west_lan = topology.network("west-lan");
    let rounds = 3 * ITEMS;

    let mut run = Coordinator::start(topology);
    let dir = run.dir.clone();
    let path = dir.join(FULL_RESULTS);
    wait_records(&path, "round 0", |recs| in_round(recs, 0, None) == LANES);

    // Kill east; cut west once east's failure shows in a round whose west lanes completed.
    must("docker", &["kill", &east]);
    let killed = Instant::now();
    let east_detected = wait_until(killed + Duration::from_secs(180), || {
        first_harness_round(&live_records(&path), "east").map(|_| killed.elapsed())
    })
    .expect("east's death never showed in the records");
    let seen = wait_records(&path, "west's lanes of east's first failed round", |recs| {
        first_harness_round(recs, "east").is_some_and(|r| in_round(recs, r, Some("west")) == 2)
    });
    let kill_round = first_harness_round(&seen, "east").unwrap();

    // Start east again: the new process has no session; east is measured again only once the
    // coordinator has re-opened the run's session on it.
    must("docker", &["start", &east]);
    let restarted = Instant::now();
    topology.wait_for_log("probe-east", "probe: region east serving", 2);
    let east_back = wait_records(&path, "east measured again after its restart", |recs| {
        let last = last_harness_round(recs, "east");
        recs.iter().any(|r| {
            r.region == "east"
                && r.outcome == Outcome::Completed
                && !r.out_of_round
                && r.round_index > last
        })
    });
    let east_recovered = restarted.elapsed();
    let east_down_rounds = (kill_round, last_harness_round(&east_back, "east"));
    let at_cut = live_records(&path);
    // West's rounds complete when it was cut were finished before the cut.
    let cut_after = (0..rounds)
        .take_while(|r| in_round(&at_cut, *r, Some("west")) == 2)
        .last()
        .unwrap();
    must("docker", &["network", "disconnect", &west_lan, &west]);
    let cut = Instant::now();
    let west_detected = wait_until(cut + PARTITION, || {
        first_harness_round(&live_records(&path), "west").map(|_| cut.elapsed())
    });
    std::thread::sleep((cut + PARTITION).saturating_duration_since(Instant::now()));
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
    let healed = Instant::now();
    assert!(
        run.running(),
        "the run ended before the partition did: raise ITEMS so it outlasts {PARTITION:?}"
    );
    let west_recovered = wait_until(healed + Duration::from_secs(120), || {
        let recs = live_records(&path);
        let last_failure =
            first_harness_round(&recs, "west").map(|_| last_harness_round(&recs, "west"));
        recs.iter()
            .any(|r| {
                r.region == "west"
                    && r.outcome == Outcome::Completed
                    && last_failure.is_some_and(|f| r.round_index > f)
            })
            .then(|| healed.elapsed())
            .or_else(|| (!run.running()).then_some(Duration::MAX))
    })
    .filter(|t| *t != Duration::MAX);

    // No hang: the run ends by itself, each round bounded by deadline + grace (+ slack).
    let bound = Duration::from_millis((TIMEOUT_MS + GRACE_MS + 2_000) * rounds);
    let (success, output) = run.finish(bound);
    let first = records(&path);
    print_rounds(&first);
    println!(
        "east killed after round 0: first harness failure in round {kill_round}, {:.1} s after \
         the kill; restarted, measured again {:.1} s after the restart (failed rounds {}..={}); \
         west cut after round {cut_after}: first harness failure {}; west completed again {} \
         after the reconnect",
        east_detected.as_secs_f64(),
        east_recovered.as_secs_f64(),
        east_down_rounds.0,
        east_down_rounds.1,
        seconds(west_detected),
        seconds(west_recovered)
    );

    // Harness failures only on the affected lanes and rounds, each for an unreachable region
    // (never a restarted probe's refusal of a session it does not know).
    for r in first
        .iter()
        .filter(|r| r.outcome == Outcome::HarnessError && !r.out_of_round)
    {
        assert_eq!(
            r.error_type,
            Some(openbench_common::record::ErrorType::RegionUnreachable),
            "{r:#?}"
        );
        match r.region.as_str() {
            "east" => assert!(
                (east_down_rounds.0..=east_down_rounds.1).contains(&r.round_index),
                "{r:#?}"
            ),
            "west" => assert!(r.round_index > cut_after, "{r:#?}"),
            other => panic!("harness failure in {other}: {r:#?}"),
        }
    }
    for r in first.iter().filter(|r| r.round_index < kill_round) {
        assert_eq!(r.outcome, Outcome::Completed, "{r:#?}");
    }
    for r in first
        .iter()
        .filter(|r| r.region == "west" && r.round_index <= cut_after)
    {
        assert_eq!(
            r.outcome,
            Outcome::Completed,
            "a healthy region failed: {r:#?}"
        );
    }
    for line in output
        .lines()
        .filter(|l| l.contains("west") || l.contains("session"))
    {
        println!("  coordinator: {line}");
    }
    let bound = detection_bound();
    assert!(
        east_detected <= bound,
        "east detected after {east_detected:?}"
    );
    assert!(
        west_detected.is_some_and(|t| t <= bound),
        "west detected after {west_detected:?}"
    );
    assert!(
        west_recovered.is_some_and(|t| t <= recovery_bound()),
        "west recovered after {west_recovered:?}"
    );

    // Both regions were back by the end of the session, so its re-run measured the lost
    // lane-rounds; whatever it left, a resume finishes. Every lane-round exactly once.
    if !success {
        resume(topology, &dir, &output);
    }
    let counts = committed_counts(&records(&path));
    let plan = planned(&dir.join(FULL_PLAN));
    assert_eq!(plan.len() as u64, rounds * LANES as u64);
    for (id, lane, round) in &plan {
        assert_eq!(
            counts.get(id),
            Some(&1),
            "{lane} round {round} ({id}) is not recorded once"
        );
    }
    assert_eq!(counts.len(), plan.len());
}

/// Resumes the run in `dir` (whose first session printed `output`) with both regions up.
fn resume(topology: &Topology, dir: &Path, output: &str) {
    println!("the first sitting ended incomplete; resuming: {output}");
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
        "the resume failed: {}{}",
        String::from_utf8_lossy(&resumed.stdout),
        String::from_utf8_lossy(&resumed.stderr)
    );
}

fn seconds(t: Option<Duration>) -> String {
    t.map_or_else(|| "never".into(), |t| format!("{:.1} s", t.as_secs_f64()))
}

/// The coordinator's full run in the background: its run directory (on the host) and output.
struct Coordinator {
    child: std::process::Child,
    dir: std::path::PathBuf,
    started: Instant,
    stdout: std::thread::JoinHandle<String>,
    stderr: std::path::PathBuf,
}

impl Coordinator {
    fn start(topology: &Topology) -> Coordinator {
        let stderr = topology.path("fault-run.stderr");
        let mut child = topology
            .coordinator(&[])
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        // The coordinator prints its run directory first; the rest is kept for errors.
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let stdout = std::thread::spawn(move || {
            use std::io::BufRead;
            let mut all = String::new();
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
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
        Coordinator {
            child,
            dir,
            started: Instant::now(),
            stdout,
            stderr,
        }
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Waits for the exit (failing past `bound` from the start: a hang); success and output.
    fn finish(mut self, bound: Duration) -> (bool, String) {
        while self.running() {
            assert!(
                self.started.elapsed() < bound,
                "the run hung past {bound:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let status = self.child.wait().unwrap();
        println!(
            "fault run ended after {:.1} s",
            self.started.elapsed().as_secs_f64()
        );
        let output = self.stdout.join().unwrap()
            + &std::fs::read_to_string(&self.stderr).unwrap_or_default();
        (status.success(), output)
    }
}

/// Records of `round` (of `region`, when given).
fn in_round(records: &[TerminalRecord], round: u64, region: Option<&str>) -> usize {
    records
        .iter()
        .filter(|r| r.round_index == round && region.is_none_or(|g| r.region == g))
        .count()
}

/// The first round (if any) in which `region` has a harness failure.
fn first_harness_round(records: &[TerminalRecord], region: &str) -> Option<u64> {
    harness_rounds(records, region).min()
}

fn last_harness_round(records: &[TerminalRecord], region: &str) -> u64 {
    harness_rounds(records, region).max().unwrap_or(0)
}

fn harness_rounds<'a>(
    records: &'a [TerminalRecord],
    region: &'a str,
) -> impl Iterator<Item = u64> + 'a {
    records
        .iter()
        .filter(move |r| r.region == region && r.outcome == Outcome::HarnessError)
        .map(|r| r.round_index)
}

/// The records of a results file the coordinator may be appending to: complete lines only.
fn live_records(path: &Path) -> Vec<TerminalRecord> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Polls `check` every 100 ms until it gives a value or `deadline` passes.
fn wait_until<T>(deadline: Instant, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (bounded) until the results file satisfies `done`; returns its records then.
fn wait_records(
    path: &Path,
    what: &str,
    done: impl Fn(&[TerminalRecord]) -> bool,
) -> Vec<TerminalRecord> {
    let deadline = Instant::now() + Duration::from_secs(180);
    wait_until(deadline, || {
        let recs = live_records(path);
        done(&recs).then_some(recs)
    })
    .unwrap_or_else(|| panic!("timed out waiting for {what}: {:#?}", live_records(path)))
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
