//! Repeats (`load.repeats`, docs/load.md, "Repeats") on loopback against the embedded
//! simulator: a Poisson step run three times is three phases, each with its own seeded
//! schedule and its own request ids; the report's per-repeat TTFA and E2E p50/p99 and success
//! are the ones computed here from each repeat's records, and the across-repeat mean and 95%
//! t interval are computed here from those (t₀.₉₇₅ with 2 degrees of freedom = 4.3027);
//! the results store keeps both; a run stopped inside a repeat resumes with every planned id
//! once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod load_workflow_support;
mod real_targets;

use coordinator_support::{
    close, committed_counts, nearest_rank_by_hand, options, records, stopping_after,
    t_interval_of_three,
};
use load_workflow_support::*;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir as layout;
use openbench_common::workflow::{PlanInputs, Workflow};
use openbench_coordinator::{RunDir, RunOptions, RunStatus, prepare_inputs, run_full};
use openbench_load::run::LoadWorkflow;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A Poisson step of 20/s over 1.5 s, run three times.
fn repeated_spec(dir: &Path) -> PathBuf {
    let load = format!(
        "  seed: 11
  phases: {{warmup_s: 0, measure: {{duration_s: 1.5}}, cooldown_s: 0}}
  steps: [{{model: poisson, rate_per_s: 20}}]
  repeats: 3
{WORKLOAD}
  ignore_eos: [p]"
    );
    write_spec(dir, &provider("p", "sim://plain?slots=8"), &load, "")
}

/// (TTFA p50, TTFA p99, E2E p50, E2E p99, success) of one repeat's records, by hand.
fn by_hand(records: &[&TerminalRecord]) -> [f64; 5] {
    let done: Vec<&&TerminalRecord> = records
        .iter()
        .filter(|r| r.outcome == Outcome::Completed)
        .collect();
    let ttfa: Vec<f64> = done.iter().filter_map(|r| r.ttfa_ms).collect();
    let e2e: Vec<f64> = done.iter().filter_map(|r| r.e2e_ms).collect();
    [
        nearest_rank_by_hand(&ttfa, 0.5),
        nearest_rank_by_hand(&ttfa, 0.99),
        nearest_rank_by_hand(&e2e, 0.5),
        nearest_rank_by_hand(&e2e, 0.99),
        done.len() as f64 / records.len() as f64,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_repeats_report_each_repeat_and_the_interval_across_them() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = repeated_spec(tmp.path());
    let (dir, _) = run(&spec).await;
    let all = records(&dir.join(layout::FULL_RESULTS));
    let ids: BTreeSet<&str> = all.iter().map(|r| r.request_id.as_str()).collect();
    assert_eq!(ids.len(), all.len(), "a request id twice");

    // Three phases, one per repeat, each with its own Poisson draw: their schedules differ.
    let phase = |p: u32| -> Vec<&TerminalRecord> {
        let mut mine: Vec<&TerminalRecord> = all.iter().filter(|r| r.phase == Some(p)).collect();
        mine.sort_by_key(|r| r.sequence);
        mine
    };
    let repeats: Vec<Vec<&TerminalRecord>> = (0..3).map(phase).collect();
    assert!(
        repeats.iter().all(|r| r.len() >= 15),
        "{:?}",
        repeats.iter().map(Vec::len).collect::<Vec<_>>()
    );
    assert_eq!(repeats.iter().map(Vec::len).sum::<usize>(), all.len());
    let offsets: Vec<Vec<u64>> = repeats
        .iter()
        .map(|r| {
            r.iter()
                .map(|x| (x.scheduled_offset_ms.unwrap() * 1e3) as u64)
                .collect()
        })
        .collect();
    assert_ne!(offsets[0], offsets[1]);
    assert_ne!(offsets[1], offsets[2]);
    // The phases name their repeat (artifacts/full-plan.json), so every record says which it belongs to.
    let phases = std::fs::read_to_string(dir.join(layout::FULL_PLAN)).unwrap();
    for r in 1..=3 {
        assert!(
            phases.contains(&format!("step-0 repeat {r}/3 poisson 20/s")),
            "{phases}"
        );
    }

    // Per repeat, by hand from its records; then mean and t interval across them.
    let hand: Vec<[f64; 5]> = repeats.iter().map(|r| by_hand(r)).collect();
    LoadWorkflow.report(&dir, &Default::default()).unwrap();
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("load-metrics.json")).unwrap())
            .unwrap();
    let step = &metrics["repeats"][0];
    assert_eq!(step["step"], 0);
    assert_eq!(step["phases"], serde_json::json!([0, 1, 2]));
    let pooled = step["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pooled")
        .unwrap();
    let names = [
        "ttfa_p50_ms",
        "ttfa_p99_ms",
        "e2e_p50_ms",
        "e2e_p99_ms",
        "success",
    ];
    let mut expected_across = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let figure = pooled["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["figure"] == *name)
            .unwrap();
        let values = [hand[0][k], hand[1][k], hand[2][k]];
        for (r, v) in values.iter().enumerate() {
            let got = figure["per_repeat"][r].as_f64().unwrap();
            assert!(close(got, *v), "{name} repeat {r}: {got} vs {v}");
        }
        let (mean, low, high) = t_interval_of_three(&values);
        let across = &figure["across"];
        assert_eq!(across["n"], 3);
        assert!(
            close(across["mean"].as_f64().unwrap(), mean),
            "{name} {across}"
        );
        assert!(
            close(across["low"].as_f64().unwrap(), low),
            "{name} {across}"
        );
        assert!(
            close(across["high"].as_f64().unwrap(), high),
            "{name} {across}"
        );
        expected_across.push((name.to_string(), mean, low, high));
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## Repeats"), "{md}");
    assert!(
        md.contains("| 1 poisson 20/s · repeat 2/3 | pooled |"),
        "{md}"
    );
    assert!(
        md.contains("| 0 poisson 20/s | pooled | ttfa_p50_ms |"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("95% t interval"));

    // The store keeps each repeat's value and the interval, as reported, in SQLite and (when
    // deploy/postgres/test-server.sh runs) PostgreSQL.
    let locations = real_targets::skip::store_locations(tmp.path(), "load_repeats::postgres");
    for location in locations {
        let (dir, hand, across) = (dir.clone(), hand.clone(), expected_across.clone());
        // The store's PostgreSQL client is synchronous: it runs off the runtime.
        tokio::task::spawn_blocking(move || stored(&location, &dir, &hand, &across))
            .await
            .unwrap();
    }
}

/// Publishes `dir` to `location` and checks the pooled rows of `load_repeats` and
/// `load_repeat_intervals` against the hand-computed figures.
fn stored(location: &str, dir: &Path, hand: &[[f64; 5]], across: &[(String, f64, f64, f64)]) {
    let mut store = openbench_store::Store::open(location).unwrap();
    let outcome = openbench_store::publish::publish(&mut store, dir, &LoadWorkflow).unwrap();
    let id = openbench_store::Value::from(outcome.run_id.as_str());
    let rows = store
        .query(
            "SELECT figure, repeat, phase, value FROM load_repeats WHERE run_id = $1 \
             AND row_name = 'pooled' AND figure = 'ttfa_p50_ms' ORDER BY repeat",
            std::slice::from_ref(&id),
        )
        .unwrap();
    assert_eq!(rows.len(), 3);
    for (r, row) in rows.iter().enumerate() {
        assert_eq!(row[1].int(), Some(r as i64 + 1));
        assert_eq!(row[2].int(), Some(r as i64));
        assert!(close(row[3].real().unwrap(), hand[r][0]));
    }
    for (name, mean, low, high) in across {
        let row = store
            .query(
                "SELECT repeats, mean, low, high FROM load_repeat_intervals WHERE run_id = $1 \
                 AND step = 0 AND row_name = 'pooled' AND figure = $2",
                &[id.clone(), openbench_store::Value::from(name.as_str())],
            )
            .unwrap();
        assert_eq!(row[0][0].int(), Some(3), "{name}");
        assert!(close(row[0][1].real().unwrap(), *mean), "{name}");
        assert!(close(row[0][2].real().unwrap(), *low), "{name}");
        assert!(close(row[0][3].real().unwrap(), *high), "{name}");
    }
}

async fn sitting(
    spec: &Path,
    dir: &Path,
    options: impl Fn(&openbench_coordinator::RunInputs) -> RunOptions,
) -> RunStatus {
    let inputs = prepare_inputs(spec, Arc::new(LoadWorkflow), "test-code-digest").unwrap();
    let run = RunDir::open_or_create(&inputs, Some(dir), None, "test").unwrap();
    let outcome = run_full(&inputs, &run, "T-R", &options(&inputs))
        .await
        .unwrap();
    outcome.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stopped_inside_a_repeat_resumes_with_every_planned_id_once() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = repeated_spec(tmp.path());
    let inputs = prepare_inputs(&spec, Arc::new(LoadWorkflow), "test-code-digest").unwrap();
    let dir = RunDir::create(&inputs, Some("T-R"), "test")
        .unwrap()
        .dir
        .clone();
    // Stop once 35 requests are in: inside the second repeat or late in the first.
    let status = sitting(&spec, &dir, |i| stopping_after(i, 35)).await;
    assert_eq!(status, RunStatus::Interrupted);
    let first = records(&dir.join(layout::FULL_RESULTS)).len();
    let status = sitting(&spec, &dir, options).await;
    assert_eq!(status, RunStatus::Complete);

    let recs = records(&dir.join(layout::FULL_RESULTS));
    assert!(recs.len() > first);
    let counts = committed_counts(&recs);
    assert!(counts.values().all(|&n| n == 1), "a request sent twice");
    let plan_inputs = PlanInputs {
        spec: &inputs.spec.spec,
        dataset: &inputs.dataset,
        run_dir: &dir,
    };
    let schedule = LoadWorkflow.plan(&plan_inputs, 0).unwrap();
    assert_eq!(schedule.phases.len(), 3);
    let planned: BTreeSet<String> = (0..3).flat_map(|i| schedule.load_request_ids(i)).collect();
    let recorded: BTreeSet<String> = counts.into_keys().collect();
    assert_eq!(recorded, planned);
    // The stop fell inside a repeat: one phase holds records of both sittings.
    let split = (0..3u32).any(|p| {
        let sittings: BTreeSet<Option<u32>> = recs
            .iter()
            .filter(|r| r.phase == Some(p))
            .map(|r| r.sitting)
            .collect();
        sittings.len() == 2
    });
    assert!(split, "no repeat was interrupted");
}
