//! The example workflow end to end (docs/adding-a-workflow.md): its spec section checked, a
//! simulated smoke, a closed-loop and an open-loop phase run through the real coordinator, an
//! in-process probe and the embedded simulator with several requests in flight per lane, every
//! record's timing within causal bounds, a resume that sends nothing more, and its report; a run
//! interrupted in each phase and finished in a third sitting, every request recorded once under
//! the ids its plan gives, and `watch` reading the run's phases plan.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use coordinator_support::{committed_counts, options, records, stopping_after};
use openbench_common::clock::rfc3339_unix_micros;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir as layout;
use openbench_common::workflow::{PlanInputs, ReportOptions, Workflow};
use openbench_coordinator::{
    RunDir, RunInputs, RunOptions, RunStatus, prepare_inputs, run_full, run_smoke,
};
use openbench_example_echo::ExampleEcho;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

const CONCURRENCY: usize = 3;
const PER_SLOT: usize = 4;
const OPEN_COUNT: usize = 10;
const OPEN_IN_FLIGHT: usize = 4;
/// 100 requests a second: one every 10 ms.
const OPEN_GAP_US: i64 = 10_000;

fn write_spec(dir: &Path, extra: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(
        dir.join("data/prompts.txt"),
        "alpha\nbravo charlie\ndelta\necho foxtrot golf\n",
    )
    .unwrap();
    let spec = format!(
        "benchmark: {{slug: example, workflow: example-echo, schedule_version: echo-v1}}
request: {{temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 20000,
  harness_grace_ms: 60000}}
providers:
  - {{key: zai, endpoint: 'sim://zai', model: m, auth: {{scheme: none}}, max_tokens_field: max_tokens}}
  - {{key: modal, endpoint: 'sim://modal', model: m, auth: {{scheme: none}}, max_tokens_field: max_tokens}}
dataset: {{source: data, manifest: prompts.txt}}
simulator: {{time_scale: 0.05, seed: 5}}
run_root: runs
echo:
  phases:
    - {{kind: closed_loop, name: closed, concurrency: {CONCURRENCY}, per_slot: {PER_SLOT}}}
    - {{kind: open_loop, name: open, count: {OPEN_COUNT}, rate_per_s: 100, max_in_flight: {OPEN_IN_FLIGHT}}}
{extra}"
    );
    let path = dir.join("spec.yaml");
    std::fs::write(&path, spec).unwrap();
    path
}

fn micros(text: &str) -> i64 {
    rfc3339_unix_micros(text).unwrap_or_else(|| panic!("not a timestamp: {text:?}"))
}

/// (start, end) of a record on the probe's clock, µs.
fn span(r: &TerminalRecord) -> (i64, i64) {
    let start = micros(&r.started_at);
    (start, start + (r.e2e_ms.unwrap() * 1000.0).round() as i64)
}

/// The most records of `rs` in flight at one instant.
fn most_in_flight(rs: &[&TerminalRecord]) -> usize {
    let mut edges: Vec<(i64, i32)> = Vec::new();
    for r in rs {
        let (a, b) = span(r);
        edges.push((a, 1));
        edges.push((b, -1));
    }
    // An end and a start at one instant: the end first (they did not overlap).
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    most as usize
}

#[test]
fn the_section_is_checked_with_every_problem_named() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_spec(tmp.path(), "typo: 1\n");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("concurrency: 3", "concurrency: 0")
        .replace("rate_per_s: 100", "rate_per_s: -1");
    std::fs::write(&path, text).unwrap();
    let err = prepare_inputs(&path, Arc::new(ExampleEcho), "c")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("3 problem(s)"), "{err}");
    assert!(err.contains("typo: unknown section"), "{err}");
    assert!(
        err.contains("echo.phases[0].concurrency: must be at least 1"),
        "{err}"
    );
    assert!(
        err.contains("echo.phases[1].rate_per_s: -1 must be above 0"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_and_open_loops_run_with_several_requests_in_flight_per_lane() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = write_spec(tmp.path(), "");
    let inputs = prepare_inputs(&spec, Arc::new(ExampleEcho), "test-code-digest").unwrap();
    let run = RunDir::create(&inputs, Some("T-1"), "test").unwrap();
    let smoke = run_smoke(&inputs, &run, &options(&inputs)).await.unwrap();
    assert!(smoke.passed, "{:?}", smoke.attempts);
    assert_eq!(records(&run.dir.join(layout::smoke_results(1))).len(), 2);

    let before = micros(&openbench_common::clock::now_rfc3339());
    let outcome = run_full(&inputs, &run, "T-1", &options(&inputs))
        .await
        .unwrap();
    let after = micros(&openbench_common::clock::now_rfc3339());
    let recs = records(&run.dir.join(layout::FULL_RESULTS));
    let failed: Vec<&str> = recs
        .iter()
        .filter_map(|r| r.error_message.as_deref())
        .collect();
    assert_eq!(outcome.status, RunStatus::Complete, "{failed:?}");
    let per_lane = CONCURRENCY * PER_SLOT + OPEN_COUNT;
    assert_eq!(recs.len(), 2 * per_lane);
    let ids: BTreeSet<&str> = recs.iter().map(|r| r.request_id.as_str()).collect();
    assert_eq!(ids.len(), recs.len(), "every request has its own id");

    let mut by: BTreeMap<(u32, String), Vec<&TerminalRecord>> = BTreeMap::new();
    for r in &recs {
        assert_eq!(r.outcome, Outcome::Completed, "{r:?}");
        let (start, end) = span(r);
        // Causal bounds: every request ran inside the sitting, its answer after its start.
        assert!(
            before <= start && end <= after,
            "{start}..{end} outside {before}..{after}"
        );
        assert!(r.ttfa_ms.unwrap() <= r.e2e_ms.unwrap());
        by.entry((r.phase.unwrap(), r.lane.clone()))
            .or_default()
            .push(r);
    }
    assert_eq!(by.len(), 4, "two phases × two lanes");
    for ((phase, lane), rs) in &by {
        let most = most_in_flight(rs);
        if *phase == 0 {
            assert_eq!(rs.len(), CONCURRENCY * PER_SLOT);
            assert!(rs.iter().all(|r| r.scheduled_at.is_none()));
            // Closed loop: each slot's next request starts only after its previous one ended.
            let mut slots: BTreeMap<u32, Vec<&TerminalRecord>> = BTreeMap::new();
            for r in rs {
                slots.entry(r.slot.unwrap()).or_default().push(r);
            }
            assert_eq!(slots.len(), CONCURRENCY);
            for slot in slots.values_mut() {
                slot.sort_by_key(|r| r.sequence);
                for pair in slot.windows(2) {
                    assert!(
                        span(pair[0]).1 <= span(pair[1]).0,
                        "{lane}: a slot overlapped"
                    );
                }
            }
            assert!(
                (2..=CONCURRENCY).contains(&most),
                "{lane}: {most} in flight"
            );
        } else {
            assert_eq!(rs.len(), OPEN_COUNT);
            let mut rs = rs.clone();
            rs.sort_by_key(|r| r.sequence);
            let first = micros(rs[0].scheduled_at.as_deref().unwrap());
            for (k, r) in rs.iter().enumerate() {
                // Planned at 0, 10, 20, … ms from the phase's start (to the µs of the
                // timestamps), sent no earlier, and the lag recorded is the send's.
                let scheduled = micros(r.scheduled_at.as_deref().unwrap());
                assert!(
                    (scheduled - first - k as i64 * OPEN_GAP_US).abs() <= 1,
                    "{k}"
                );
                let lag = r.send_lag_ms.unwrap();
                assert!(lag >= 0.0, "{lag}");
                assert!(span(r).0 >= scheduled, "started before its scheduled time");
            }
            assert!(
                (2..=OPEN_IN_FLIGHT).contains(&most),
                "{lane}: {most} in flight"
            );
        }
    }

    // A resume finds every request committed and sends nothing.
    let dir = run.dir.clone();
    drop(run);
    let run = RunDir::open(&inputs, &dir, "test").unwrap();
    let again = run_full(&inputs, &run, "T-1", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(again.status, RunStatus::Complete);
    assert_eq!(again.sitting.records_written, 0);
    assert_eq!(records(&dir.join(layout::FULL_RESULTS)).len(), 2 * per_lane);
    drop(run);

    // The report, through the trait.
    let report = ExampleEcho.report(&dir, &ReportOptions::default()).unwrap();
    let table = &report.summary_table;
    for lane in ["zai", "modal"] {
        let rows: Vec<&str> = table
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(lane))
            .collect();
        assert_eq!(rows.len(), 2, "{table}");
        let counts: Vec<&str> = rows
            .iter()
            .map(|l| l.split_whitespace().nth(2).unwrap())
            .collect();
        assert_eq!(counts, ["12", "10"], "{table}");
    }
    assert!(
        std::fs::read_to_string(dir.join(layout::REPORT_MD))
            .unwrap()
            .contains(table.as_str())
    );
}

/// One sitting over the run in `dir`: opens it, runs, closes it; returns the status and the
/// records now in the results file.
async fn sitting(inputs: &RunInputs, dir: &Path, options: &RunOptions) -> (RunStatus, usize) {
    let run = RunDir::open(inputs, dir, "test").unwrap();
    let outcome = run_full(inputs, &run, "T-2", options).await.unwrap();
    drop(run);
    (
        outcome.status,
        records(&dir.join(layout::FULL_RESULTS)).len(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_interrupted_in_each_phase_finishes_in_a_third_sitting_with_every_id_once() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = write_spec(tmp.path(), "");
    let inputs = prepare_inputs(&spec, Arc::new(ExampleEcho), "test-code-digest").unwrap();
    let dir = RunDir::create(&inputs, Some("T-2"), "test")
        .unwrap()
        .dir
        .clone();
    let per_lane = CONCURRENCY * PER_SLOT + OPEN_COUNT;
    let closed_total = 2 * CONCURRENCY * PER_SLOT;

    // Sitting 1 stops inside the closed loop: at most the 6 requests in flight when the stop was
    // asked for, and the 6 released while it was on its way, follow the 5th.
    let (status, first) = sitting(&inputs, &dir, &stopping_after(&inputs, 5)).await;
    assert_eq!(status, RunStatus::Interrupted);
    assert!((5..closed_total).contains(&first), "{first} records");
    // Sitting 2 finishes the closed loop and stops two requests into the open loop.
    let (status, second) = sitting(&inputs, &dir, &stopping_after(&inputs, closed_total + 2)).await;
    assert_eq!(status, RunStatus::Interrupted);
    assert!(
        (closed_total + 2..2 * per_lane).contains(&second),
        "{second} records"
    );
    // Sitting 3 sends the rest.
    let (status, third) = sitting(&inputs, &dir, &options(&inputs)).await;
    assert_eq!(status, RunStatus::Complete);
    assert_eq!(third, 2 * per_lane);

    let recs = records(&dir.join(layout::FULL_RESULTS));
    assert!(recs.iter().all(|r| r.outcome == Outcome::Completed));
    let counts = committed_counts(&recs);
    assert!(counts.values().all(|&n| n == 1), "a request sent twice");
    // The ids are the ones the plan gives, planned again from the same inputs.
    let plan_inputs = PlanInputs {
        spec: &inputs.spec.spec,
        dataset: &inputs.dataset,
        run_dir: &dir,
    };
    let schedule = ExampleEcho.plan(&plan_inputs, 0).unwrap();
    let planned: BTreeSet<String> = (0..schedule.phases.len())
        .flat_map(|i| schedule.load_request_ids(i))
        .collect();
    let recorded: BTreeSet<String> = counts.into_keys().collect();
    assert_eq!(recorded, planned);

    // `watch` reads the phases plan: one column and one unit of progress per phase.
    let view = openbench_watch::snapshot(&dir).unwrap();
    assert!(view.by_phase);
    assert_eq!(view.families, ["closed", "open"]);
    assert_eq!((view.rounds_done, view.rounds_total), (2, 2));
    assert_eq!((view.requests_done, view.requests_total), (44, 44));
    let lanes: BTreeMap<&str, (usize, usize)> = view
        .lanes
        .iter()
        .map(|l| (l.lane.as_str(), (l.planned, l.completed)))
        .collect();
    assert_eq!(
        lanes,
        BTreeMap::from([("modal", (22, 22)), ("zai", (22, 22))])
    );
}
