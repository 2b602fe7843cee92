//! Repeats of paired rounds (`plans.repeats`, docs/methodology.md, "Repeats of paired rounds")
//! on loopback against the embedded simulator: three passes over a 6-round set are 18 rounds,
//! pass 1 the plan made once round for round, each later pass the same items in its own seeded
//! order with its own ids; the report's per-repeat task success, TTFA p50/p99, E2E p50/p99 and
//! tokens/s p50 of every lane are the ones computed here from each repeat's records, and the
//! across-repeat mean and 95% t interval are computed here from those (t₀.₉₇₅ with 2 degrees of
//! freedom = 4.3027); the results store keeps both; `compare` of two repeated runs rests on the
//! intervals; a run stopped inside repeat 2 resumes there with every planned id sent once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod real_targets;

use coordinator_support::*;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rundir::{self as layout, Plan};
use openbench_common::workflow::{PlanInputs, Workflow};
use openbench_coordinator::{RunDir, RunStatus, run_full};
use openbench_micro_single_task::MicroSingleTask;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Items per family (the sample has 13/6/10 rows): 6 rounds per repeat.
const ITEMS: usize = 2;
/// Rounds of one pass.
const ROUNDS: u64 = 6;
/// The two lanes (simulator profiles without operational failures).
const LANES: [&str; 2] = ["baseten", "telnyx"];

/// A spec over the sample dataset at `data`, with `repeats` (a YAML value) under `plans` when
/// given, written in its own folder of `dir`.
fn spec(dir: &Path, data: &Path, name: &str, repeats: Option<&str>) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    let providers: Vec<Prov> = LANES.iter().map(|p| Prov::sim(p)).collect();
    let path = write_spec(&folder, data, &providers, ITEMS, 0.01, 4000);
    if let Some(n) = repeats {
        let text = std::fs::read_to_string(&path).unwrap().replace(
            "  smoke_items_per_family: 1\n",
            &format!("  smoke_items_per_family: 1\n  repeats: {n}\n"),
        );
        std::fs::write(&path, text).unwrap();
    }
    path
}

/// The full run's plan of `spec`, as the workflow plans it (nothing sent).
fn plan_of(spec: &Path) -> Plan {
    let inputs = inputs(spec);
    let plan_inputs = PlanInputs {
        spec: &inputs.spec.spec,
        dataset: &inputs.dataset,
        run_dir: spec.parent().unwrap(),
    };
    let schedule = MicroSingleTask.plan(&plan_inputs, 0).unwrap();
    (**schedule.paired_plan().unwrap()).clone()
}

/// Nearest rank over `values`, or `None` when empty.
fn rank(values: &[f64], p: f64) -> Option<f64> {
    (!values.is_empty()).then(|| nearest_rank_by_hand(values, p))
}

/// (task success, TTFA p50, TTFA p99, E2E p50, E2E p99, tokens/s p50) of one lane's records of
/// one repeat, by hand; `correct` says which request ids the scorer found exactly right.
fn by_hand(records: &[&TerminalRecord], correct: &BTreeSet<String>) -> [Option<f64>; 6] {
    let done: Vec<&&TerminalRecord> = records
        .iter()
        .filter(|r| r.outcome == Outcome::Completed)
        .collect();
    let of = |f: fn(&TerminalRecord) -> Option<f64>| -> Vec<f64> {
        done.iter().filter_map(|r| f(r)).collect()
    };
    let ttfa = of(|r| r.ttfa_ms);
    let e2e = of(|r| r.e2e_ms);
    let tps = of(|r| r.output_tokens_per_second);
    let right = records
        .iter()
        .filter(|r| correct.contains(&r.request_id))
        .count();
    [
        Some(right as f64 / records.len() as f64),
        rank(&ttfa, 0.5),
        rank(&ttfa, 0.99),
        rank(&e2e, 0.5),
        rank(&e2e, 0.99),
        rank(&tps, 0.5),
    ]
}

/// The figures' names in `metrics.json`, in [`by_hand`]'s order.
const FIGURES: [&str; 6] = [
    "task_success_rate",
    "ttfa_p50",
    "ttfa_p99",
    "e2e_latency_p50",
    "e2e_latency_p99",
    "output_tokens_per_second_p50",
];

#[test]
fn repeat_one_is_the_plan_made_once_and_later_repeats_reorder_the_same_items() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let once = plan_of(&spec(tmp.path(), &data, "once", None));
    let one = plan_of(&spec(tmp.path(), &data, "one", Some("1")));
    let three = plan_of(&spec(tmp.path(), &data, "three", Some("3")));
    // `repeats: 1` is the run made once, byte for byte; the once plan names no repeats.
    let once_json = serde_json::to_string(&once).unwrap();
    assert_eq!(serde_json::to_string(&one).unwrap(), once_json);
    assert!(!once_json.contains("\"repeats\""));
    assert_eq!(once.rounds.len() as u64, ROUNDS);
    assert_eq!(three.repeats, Some(3));
    assert_eq!(three.rounds.len() as u64, 3 * ROUNDS);
    // Repeat 1 is the once plan round for round (ids, rotation, items).
    let json = |rounds: &[layout::PlannedRound]| serde_json::to_string(rounds).unwrap();
    assert_eq!(json(&three.rounds[..6]), json(&once.rounds));
    // Every repeat asks the same items; each later repeat in another order, with its own ids.
    let items = |r: usize| -> Vec<(String, String)> {
        three.rounds[r * 6..(r + 1) * 6]
            .iter()
            .map(|x| (x.task_family.clone(), x.item_id.clone()))
            .collect()
    };
    let sorted = |mut v: Vec<(String, String)>| {
        v.sort();
        v
    };
    for r in 1..3 {
        assert_eq!(sorted(items(r)), sorted(items(0)), "repeat {r}");
        assert_eq!(three.repeat_of(r as u64 * ROUNDS), r as u32);
    }
    assert_ne!(items(1), items(0));
    assert_ne!(items(2), items(1));
    let ids: BTreeSet<String> = three
        .rounds
        .iter()
        .flat_map(|r| r.requests.iter().map(|l| l.request_id.clone()))
        .collect();
    assert_eq!(ids.len(), 18 * LANES.len());
    // Out of range is refused, naming the field.
    for bad in ["0", "101"] {
        let path = spec(tmp.path(), &data, &format!("bad{bad}"), Some(bad));
        let err = openbench_coordinator::prepare_inputs(
            &path,
            std::sync::Arc::new(MicroSingleTask),
            "test-code-digest",
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            err.contains(&format!("plans.repeats: {bad} is outside 1..=100")),
            "{err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_repeats_report_each_repeat_and_the_interval_across_them() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let spec = spec(tmp.path(), &data, "three", Some("3"));
    let inputs = inputs(&spec);
    let run = RunDir::create(&inputs, Some("RP-1"), "test").unwrap();
    let outcome = run_full(&inputs, &run, "RP-1", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    let dir = run.dir.clone();
    drop(run);
    let all = records(&dir.join(layout::FULL_RESULTS));
    assert_eq!(all.len(), 36);
    MicroSingleTask.report(&dir, &Default::default()).unwrap();
    let correct: BTreeSet<String> = lines(&dir.join(layout::EVALUATIONS))
        .iter()
        .filter(|e| e["correct"] == true)
        .map(|e| e["request_id"].as_str().unwrap().to_string())
        .collect();
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(layout::METRICS)).unwrap()).unwrap();
    let repeats = &metrics["repeats"];
    assert_eq!(
        (repeats["repeats"].as_u64(), repeats["rounds"].as_u64()),
        (Some(3), Some(18))
    );
    let mut expected: BTreeMap<(String, String), (f64, f64, f64)> = BTreeMap::new();
    for lane in LANES {
        let hand: Vec<[Option<f64>; 6]> = (0..3u64)
            .map(|r| {
                let mine: Vec<&TerminalRecord> = all
                    .iter()
                    .filter(|x| x.lane == lane && x.round_index / ROUNDS == r)
                    .collect();
                assert_eq!(mine.len(), 6, "{lane} repeat {r}");
                by_hand(&mine, &correct)
            })
            .collect();
        let row = repeats["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["lane"] == lane)
            .unwrap();
        for (k, name) in FIGURES.iter().enumerate() {
            let figure = row["figures"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["figure"] == *name)
                .unwrap_or_else(|| panic!("no {name}: {row}"));
            let values = [
                hand[0][k].unwrap(),
                hand[1][k].unwrap(),
                hand[2][k].unwrap(),
            ];
            for (r, v) in values.iter().enumerate() {
                let got = figure["per_repeat"][r].as_f64().unwrap();
                assert!(close(got, *v), "{lane} {name} repeat {r}: {got} vs {v}");
            }
            let (mean, low, high) = t_interval_of_three(&values);
            let across = &figure["across"];
            assert_eq!(across["n"], 3, "{lane} {name}");
            for (field, want) in [("mean", mean), ("low", low), ("high", high)] {
                let got = across[field].as_f64().unwrap();
                assert!(close(got, want), "{lane} {name} {field}: {got} vs {want}");
            }
            expected.insert((lane.to_string(), name.to_string()), (mean, low, high));
        }
    }
    let md = std::fs::read_to_string(dir.join(layout::REPORT_MD)).unwrap();
    assert!(md.contains("## Repeats"), "{md}");
    assert!(
        md.contains(
            "| Provider | Figure | Repeat 1 | Repeat 2 | Repeat 3 | Mean | 95% t interval |"
        ),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.join(layout::REPORT_HTML)).unwrap();
    assert!(html.contains("<section id=\"repeats\">") && html.contains("95% t interval"));

    // compare of two repeated runs (here the run with itself): every figure is the mean across
    // repeats, its intervals overlap (they are the same), so no change is called.
    let out = tmp.path().join("compare");
    let written = MicroSingleTask
        .compare(
            &dir,
            &dir,
            &out,
            openbench_common::workflow::CompareSettings {
                replicates: 1000,
                seed: 20_261_201,
            },
        )
        .unwrap();
    assert_eq!(written.len(), 2);
    let compare = std::fs::read_to_string(out.join("compare.md")).unwrap();
    assert!(
        compare.contains("Both runs repeated their round set (A 3 times, B 3 times)"),
        "{compare}"
    );
    assert!(
        compare.contains("— (repeat intervals overlap)"),
        "{compare}"
    );
    assert!(
        compare.contains("No change has an interval that excludes zero."),
        "{compare}"
    );

    // The store keeps each repeat's value and the interval, as reported, in SQLite and (when
    // deploy/postgres/test-server.sh runs) PostgreSQL.
    let locations = real_targets::skip::store_locations(tmp.path(), "paired_repeats::postgres");
    for location in locations {
        let (dir, expected) = (dir.clone(), expected.clone());
        // The store's PostgreSQL client is synchronous: it runs off the runtime.
        tokio::task::spawn_blocking(move || stored(&location, &dir, &expected))
            .await
            .unwrap();
    }
}

/// Publishes `dir` to `location` and checks `paired_repeats` and `paired_repeat_intervals`
/// against the figures computed by hand.
fn stored(location: &str, dir: &Path, expected: &BTreeMap<(String, String), (f64, f64, f64)>) {
    let mut store = openbench_store::Store::open(location).unwrap();
    let outcome = openbench_store::publish::publish(&mut store, dir, &MicroSingleTask).unwrap();
    let id = openbench_store::Value::from(outcome.run_id.as_str());
    let rows = store
        .query(
            "SELECT repeat FROM paired_repeats WHERE run_id = $1 AND lane = 'telnyx' \
             AND figure = 'e2e_latency_p99' ORDER BY repeat",
            std::slice::from_ref(&id),
        )
        .unwrap();
    let repeats: Vec<Option<i64>> = rows.iter().map(|r| r[0].int()).collect();
    assert_eq!(repeats, [Some(1), Some(2), Some(3)]);
    let rows = store
        .query(
            "SELECT lane, figure, repeats, mean, low, high FROM paired_repeat_intervals \
             WHERE run_id = $1 ORDER BY lane, figure",
            std::slice::from_ref(&id),
        )
        .unwrap();
    assert_eq!(rows.len(), expected.len());
    for row in rows {
        let key = (
            row[0].text().unwrap().to_string(),
            row[1].text().unwrap().to_string(),
        );
        let (mean, low, high) = expected[&key];
        assert_eq!(row[2].int(), Some(3), "{key:?}");
        assert!(close(row[3].real().unwrap(), mean), "{key:?}");
        assert!(close(row[4].real().unwrap(), low), "{key:?}");
        assert!(close(row[5].real().unwrap(), high), "{key:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stopped_inside_repeat_two_resumes_there_with_every_planned_id_once() {
    let tmp = tempfile::tempdir().unwrap();
    let data = sample_dataset(tmp.path(), "data", 20260902);
    let spec = spec(tmp.path(), &data, "three", Some("3"));
    let inputs = inputs(&spec);
    let run = RunDir::create(&inputs, Some("RP-2"), "test").unwrap();
    // Repeat 1 is 12 requests; the sitting finishes its round once 15 are in: inside repeat 2.
    let outcome = run_full(&inputs, &run, "RP-2", &stopping_after(&inputs, 15))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Interrupted);
    let dir = run.dir.clone();
    drop(run);
    let first = records(&dir.join(layout::FULL_RESULTS));
    let last_round = first.iter().map(|r| r.round_index).max().unwrap();
    assert!(
        (ROUNDS..2 * ROUNDS - 1).contains(&last_round),
        "stopped at round {last_round}, not inside repeat 2"
    );
    let run = RunDir::open_or_create(&inputs, Some(&dir), None, "test").unwrap();
    let outcome = run_full(&inputs, &run, "RP-2", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    drop(run);
    let all = records(&dir.join(layout::FULL_RESULTS));
    // The resumed sitting's first record is the round after the stop, inside repeat 2.
    let resumed = &all[first.len()..];
    let resumed_first = resumed.iter().map(|r| r.round_index).min().unwrap();
    assert_eq!(resumed_first, last_round + 1);
    let counts = committed_counts(&all);
    assert!(counts.values().all(|&n| n == 1), "a request sent twice");
    assert_eq!(all.len(), counts.len());
    let planned: BTreeSet<String> = planned(&dir.join(layout::FULL_PLAN))
        .into_iter()
        .map(|(id, _, _)| id)
        .collect();
    assert_eq!(planned.len(), 36);
    assert_eq!(counts.into_keys().collect::<BTreeSet<_>>(), planned);
}
