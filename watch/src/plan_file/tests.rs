//! Plan files of both kinds, written by the serializer the coordinator writes them with
//! (`Schedule::plan_file`) and read back as outlines.

use super::*;
use crate::state::tests::plan;
use openbench_common::rundir::write_json_atomic;
use openbench_common::schedule::{
    LoadPhase, LoadPosition, Phase, RequestContent, RequestSource, Schedule,
};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Every request asks the same thing (the outline never looks at content).
struct Same;

impl RequestSource for Same {
    fn request(&self, _position: &LoadPosition) -> RequestContent {
        RequestContent {
            group: "g".into(),
            item_key: "k".into(),
            messages: Vec::new(),
            output: None,
            tools: Vec::new(),
        }
    }
}

fn lane(key: &str) -> Lane {
    Lane {
        label: key.into(),
        provider: key.into(),
        region: "local".into(),
    }
}

/// A closed loop of 2 slots × 3 requests and an open loop of 5 requests, over lanes a and b.
fn schedule() -> Schedule {
    let load = |name: &str, pacing| LoadPhase {
        name: name.into(),
        load: name.into(),
        lanes: vec![lane("a"), lane("b")],
        pacing,
        source: Arc::new(Same),
    };
    Schedule {
        version: "v1".into(),
        attempt: 0,
        phases: vec![
            Phase::ClosedLoop(load(
                "closed",
                Pacing::Slots {
                    concurrency: 2,
                    per_slot: 3,
                },
            )),
            Phase::OpenLoop(load(
                "open",
                Pacing::Releases {
                    offsets_ms: vec![(0..5).map(|k| f64::from(k) * 100.0).collect(); 2],
                    max_in_flight: 2,
                },
            )),
        ],
    }
}

/// `plan` written as a plan file and read back.
fn read_back(plan: &impl serde::Serialize) -> Outline {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("plan.json");
    write_json_atomic(&path, plan).unwrap_or_else(|e| panic!("{e}"));
    read(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_phases_plan_shows_one_column_and_one_unit_per_phase() {
    let schedule = schedule();
    let outline = read_back(&schedule.plan_file());

    assert!(outline.by_phase);
    assert_eq!(outline.lanes, [lane("a"), lane("b")]);
    assert_eq!(outline.columns, ["closed", "open"]);
    let sizes: Vec<usize> = outline.units.iter().map(|u| u.requests.len()).collect();
    // 2 lanes × 2 slots × 3, then 2 lanes × 5.
    assert_eq!(sizes, [12, 10]);
    for (index, unit) in outline.units.iter().enumerate() {
        let ids: Vec<String> = unit.requests.iter().map(|(id, _)| id.clone()).collect();
        assert_eq!(ids, schedule.load_request_ids(index), "phase {index}");
        let per_lane = unit.requests.iter().filter(|(_, l)| l.label == "a").count();
        assert_eq!(per_lane * 2, unit.requests.len());
    }
    let distinct: BTreeSet<&str> = outline
        .units
        .iter()
        .flat_map(|u| u.requests.iter().map(|(id, _)| id.as_str()))
        .collect();
    assert_eq!(distinct.len(), 22);
}

#[test]
fn a_rounds_plan_keeps_its_families_and_rounds() {
    let outline = read_back(&plan());
    assert!(!outline.by_phase);
    assert_eq!(outline.columns, ["f1", "f2"]);
    let units: Vec<(&str, Vec<&str>)> = outline
        .units
        .iter()
        .map(|u| {
            let ids = u.requests.iter().map(|(id, _)| id.as_str()).collect();
            (u.column.as_str(), ids)
        })
        .collect();
    assert_eq!(
        units,
        [
            ("f1", vec!["req-0a", "req-0b"]),
            ("f2", vec!["req-1a", "req-1b"]),
            ("f1", vec!["req-2a", "req-2b"]),
        ]
    );
}

#[test]
fn records_of_a_phases_plan_count_under_their_phase_and_finish_it() {
    let schedule = schedule();
    let outline = read_back(&schedule.plan_file());
    let mut state = crate::state::RunState::new(Some(&outline), &[], &["g".into()]);
    assert_eq!((state.rounds_done, state.rounds_total), (0, 2));
    // Every request of the open loop (phase 1) completes; its group is "g", its column "open".
    for (id, lane) in &outline.units[1].requests {
        let mut r = crate::state::tests::completed(0, "a", 10.0, 20.0, 30.0);
        r.request_id = id.clone();
        (r.lane, r.provider, r.region) =
            (lane.label.clone(), lane.provider.clone(), "local".into());
        r.task_family = "g".into();
        r.phase = Some(1);
        state.record(&r);
    }
    assert_eq!(state.families, ["closed", "open"]);
    let counts: Vec<(usize, usize)> = state.cells[0]
        .iter()
        .map(|c| (c.planned, c.completed))
        .collect();
    assert_eq!(counts, [(6, 0), (5, 5)]);
    assert_eq!((state.rounds_done, state.rounds_total), (1, 2));
}

/// A timed closed loop plans no request (how many it sends is an outcome): its lanes are open
/// ended, so their progress reads `done/planned+` with no percentage, while a lane with only
/// planned requests keeps its `done/planned pct%`.
#[test]
fn a_timed_closed_loop_leaves_its_lanes_without_a_total() {
    use crate::source::Header;
    use crate::state::RunState;
    use crate::view::{View, ViewOptions};
    use openbench_common::rundir::{RunMode, RunStatus};
    let mut schedule = schedule();
    let timed = LoadPhase {
        name: "timed".into(),
        load: "closed 3 users".into(),
        lanes: vec![lane("a")],
        pacing: Pacing::Users {
            users: vec![3],
            until_ms: 2000.0,
        },
        source: Arc::new(Same),
    };
    schedule.phases.push(Phase::ClosedLoop(timed));
    let outline = read_back(&schedule.plan_file());
    let units: Vec<(usize, Vec<&str>)> = outline
        .units
        .iter()
        .map(|u| {
            let lanes = u.open_ended.iter().map(|l| l.label.as_str()).collect();
            (u.requests.len(), lanes)
        })
        .collect();
    assert_eq!(units, [(12, vec![]), (10, vec![]), (0, vec!["a"])]);

    let state = RunState::new(Some(&outline), &[], &[]);
    let header = Header {
        run_id: "run-x".into(),
        mode: RunMode::Full,
        status: Some(RunStatus::Running),
        attempt: 0,
        simulator_time_scale: None,
    };
    let view = View::build(&header, &state, &ViewOptions::default());
    let progress: Vec<(String, String)> = view
        .lanes
        .iter()
        .map(|l| (l.lane.clone(), crate::plain::lane_progress(l)))
        .collect();
    // Lane a: 6 closed + 5 open planned, plus the timed loop; lane b: 6 + 5.
    assert_eq!(
        progress,
        [("a".into(), "0/11+".into()), ("b".into(), "0/11 0%".into())]
    );
}

/// Conversations: a source that reads its slots' history.
struct Talking;

impl RequestSource for Talking {
    fn request(&self, position: &LoadPosition) -> RequestContent {
        Same.request(position)
    }
    fn reads_history(&self) -> bool {
        true
    }
}

#[test]
fn a_conversation_phase_is_marked_in_the_plan_file_and_its_lanes_have_no_total() {
    let mut schedule = schedule();
    schedule.phases.push(Phase::ClosedLoop(LoadPhase {
        name: "talk".into(),
        load: "closed c=1".into(),
        lanes: vec![lane("b")],
        pacing: Pacing::Slots {
            concurrency: 1,
            per_slot: 4,
        },
        source: Arc::new(Talking),
    }));
    let text = serde_json::to_value(schedule.plan_file()).unwrap();
    let marks: Vec<Option<&serde_json::Value>> = text["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.get("reads_history"))
        .collect();
    // Only the conversation phase carries the field; the others keep their bytes.
    assert_eq!(marks, [None, None, Some(&serde_json::Value::Bool(true))]);

    let outline = read_back(&schedule.plan_file());
    let units: Vec<(usize, Vec<&str>)> = outline
        .units
        .iter()
        .map(|u| {
            (
                u.requests.len(),
                u.open_ended.iter().map(|l| l.label.as_str()).collect(),
            )
        })
        .collect();
    // Its 4 planned turns are a ceiling: lane b's progress has no total.
    assert_eq!(units, [(12, vec![]), (10, vec![]), (4, vec!["b"])]);

    // An older plan file (no field) still reads, its phases with totals.
    let mut old = text.clone();
    if let Some(p) = old["phases"][2].as_object_mut() {
        p.remove("reads_history");
    }
    let outline = read_back(&old);
    assert!(outline.units.iter().all(|u| u.open_ended.is_empty()));
}
