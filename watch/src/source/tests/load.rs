//! `watch` over load runs: the current step, target against achieved rate, live ITL, and a
//! saturation search's growing schedule with a resumed step flagged.

use super::*;

/// The load fixture's lanes: `a@eu` and `b@us`, as in the worked example.
fn load_lanes() -> Vec<Lane> {
    ["a@eu", "b@us"]
        .iter()
        .map(|label| {
            let (provider, region) = label.split_once('@').unwrap_or((label, ""));
            Lane {
                label: (*label).into(),
                provider: provider.into(),
                region: region.into(),
            }
        })
        .collect()
}

/// Every load request asks the same (the view never looks at content).
struct Same;

impl openbench_common::schedule::RequestSource for Same {
    fn request(
        &self,
        _position: &openbench_common::schedule::LoadPosition,
    ) -> openbench_common::schedule::RequestContent {
        openbench_common::schedule::RequestContent {
            group: "synthetic".into(),
            item_key: "k".into(),
            messages: Vec::new(),
            output: None,
            tools: Vec::new(),
        }
    }
}

/// Step 0: a closed loop of 2 users on a@eu and 1 on b@us; step 1: an open loop whose releases
/// ask a@eu for 4/s (5 releases over 1 s) and b@us for 2/s (3 over 1 s).
fn load_schedule() -> openbench_common::schedule::Schedule {
    use openbench_common::schedule::{LoadPhase, Pacing, Phase, Schedule};
    let phase = |name: &str, pacing| LoadPhase {
        name: name.into(),
        load: name.into(),
        lanes: load_lanes(),
        pacing,
        source: std::sync::Arc::new(Same),
    };
    Schedule {
        version: "v".into(),
        attempt: 0,
        phases: vec![
            Phase::ClosedLoop(phase(
                "step-0 closed c=2",
                Pacing::Users {
                    users: vec![2, 1],
                    until_ms: 1000.0,
                },
            )),
            Phase::OpenLoop(phase(
                "step-1 constant 4/s",
                Pacing::Releases {
                    offsets_ms: vec![
                        vec![0.0, 250.0, 500.0, 750.0, 1000.0],
                        vec![0.0, 500.0, 1000.0],
                    ],
                    max_in_flight: 8,
                },
            )),
        ],
    }
}

/// One execution of a load request: its record (lane, phase, actual send, outcome) and one
/// event per offset, answer-bearing where the offset is positive and reasoning-only where it is
/// negative (its absolute value).
fn load_execution(
    id: &str,
    lane: &str,
    phase: u32,
    sent_ms: f64,
    outcome: Outcome,
    events_ms: &[f64],
) -> openbench_common::record::Execution {
    use openbench_common::record::{Classification, Execution, StreamEvent, TerminalRecord};
    let mut r = TerminalRecord::new("2026-01-01T00:00:00Z".into(), outcome);
    r.request_id = id.into();
    r.lane = lane.into();
    (r.provider, r.region) = match lane.split_once('@') {
        Some((p, region)) => (p.into(), region.into()),
        None => (lane.into(), String::new()),
    };
    r.phase = Some(phase);
    r.round_index = u64::from(phase);
    r.sent_offset_ms = Some(sent_ms);
    let answers: Vec<f64> = events_ms.iter().copied().filter(|ms| *ms > 0.0).collect();
    if outcome == Outcome::Completed {
        r.ttfa_ms = answers.first().copied();
        r.e2e_ms = answers.last().copied();
        r.answer_tokens = Some(answers.len() as u64);
    }
    let events = events_ms
        .iter()
        .enumerate()
        .map(|(i, &ms)| StreamEvent {
            request_id: String::new(),
            index: i as u32,
            offset_ms: ms.abs(),
            classification: if ms > 0.0 {
                Classification::Answer
            } else {
                Classification::Reasoning
            },
            event: None,
            reasoning: if ms > 0.0 { String::new() } else { "r".into() },
            answer: if ms > 0.0 { "x".into() } else { String::new() },
            finish_reason: None,
        })
        .collect();
    Execution { record: r, events }
}

/// The load row, against a run directory written by the coordinator's own writer: the current
/// step is the highest phase with a record; its lanes show the plan's target (users, or the rate
/// the releases ask for), the achieved rate of the sends recorded so far and the ITL p50/p99 of
/// the answer events in the events file, all worked out by hand below.
#[test]
fn a_load_run_shows_its_current_step_target_achieved_rate_and_live_itl() {
    use crate::view::LoadLaneView;
    use openbench_common::rundir::{RunFiles, RunWriter};
    let dir = run_dir();
    let at = |name: &str| layout::path(dir.path(), name);
    write_json_atomic(&at(layout::FULL_PLAN), &load_schedule().plan_file())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut writer =
        RunWriter::open(RunFiles::new(dir.path(), 0)).unwrap_or_else(|e| panic!("{e}"));
    let mut write = |executions: &[openbench_common::record::Execution]| {
        for e in executions {
            writer.append_execution(e).unwrap_or_else(|e| panic!("{e}"));
        }
    };
    let mut source = RunSource::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(view(&source).load, None, "no record yet: no current step");

    // Step 0 (closed loop): a@eu sent at 0 and 300 ms, b@us at 100 ms.
    write(&[
        load_execution("s0-a0", "a@eu", 0, 0.0, Outcome::Completed, &[50.0, 65.0]),
        load_execution("s0-b0", "b@us", 0, 100.0, Outcome::Completed, &[40.0]),
        load_execution(
            "s0-a1",
            "a@eu",
            0,
            300.0,
            Outcome::Completed,
            &[20.0, 30.0, 60.0],
        ),
    ]);
    assert!(source.refresh().is_ok_and(|r| r.changed));
    let load = view(&source).load.unwrap_or_else(|| panic!("a load row"));
    assert_eq!((load.phase, load.name.as_str()), (0, "step-0 closed c=2"));
    let lane = |lane: &str, target: Option<f64>, users: Option<u32>| LoadLaneView {
        lane: lane.into(),
        target_per_s: target,
        users,
        requests: 0,
        achieved_per_s: None,
        itl_gaps: 0,
        itl_p50_ms: None,
        itl_p99_ms: None,
    };
    assert_eq!(
        load.lanes,
        [
            // 2 sends 0.3 s apart: 1 / 0.3 s; gaps 15 (65 − 50), 10, 30 → p50 15, p99 30.
            LoadLaneView {
                requests: 2,
                achieved_per_s: Some(1.0 / 0.3),
                itl_gaps: 3,
                itl_p50_ms: Some(15.0),
                itl_p99_ms: Some(30.0),
                ..lane("a@eu", None, Some(2))
            },
            // One send: no rate yet; one answer event: no gap.
            LoadLaneView {
                requests: 1,
                ..lane("b@us", None, Some(1))
            },
        ]
    );

    // Step 1 (open loop) begins: step 0's figures leave the row.
    write(&[
        // Gaps 10, 20; the reasoning-only event at 120 ms is not an answer event.
        load_execution(
            "s1-a0",
            "a@eu",
            1,
            0.0,
            Outcome::Completed,
            &[100.0, 110.0, -120.0, 130.0],
        ),
        load_execution("s1-b0", "b@us", 1, 10.0, Outcome::Completed, &[50.0, 80.0]),
        load_execution(
            "s1-a1",
            "a@eu",
            1,
            260.0,
            Outcome::Completed,
            &[100.0, 140.0],
        ),
        // A failure counts as a send and gives no gap.
        load_execution("s1-a2", "a@eu", 1, 520.0, Outcome::HttpError, &[]),
        // A harness failure is ours: neither a send of the provider's nor a gap.
        load_execution("s1-a3", "a@eu", 1, 900.0, Outcome::HarnessError, &[]),
    ]);
    assert!(source.refresh().is_ok_and(|r| r.changed));
    let v = view(&source);
    let load = v.load.clone().unwrap_or_else(|| panic!("a load row"));
    assert_eq!((load.phase, load.name.as_str()), (1, "step-1 constant 4/s"));
    assert_eq!(
        load.lanes,
        [
            // Target 4 gaps over 1 s; sends 0, 260, 520: 2 / 0.52 s; gaps 10, 20, 40.
            LoadLaneView {
                requests: 3,
                achieved_per_s: Some(2.0 / 0.52),
                itl_gaps: 3,
                itl_p50_ms: Some(20.0),
                itl_p99_ms: Some(40.0),
                ..lane("a@eu", Some(4.0), None)
            },
            LoadLaneView {
                requests: 1,
                itl_gaps: 1,
                itl_p50_ms: Some(30.0),
                itl_p99_ms: Some(30.0),
                ..lane("b@us", Some(2.0), None)
            },
        ]
    );
    let text = crate::plain::render(&v);
    assert!(
        text.contains(
            "\nload step 1: step-1 constant 4/s\n\
             lane                         target   achieved requests    ITL p50/p99 ms (gaps)\n\
             a@eu                         4.00/s     3.85/s        3            20.0/40.0 (3)\n\
             b@us                         2.00/s          -        1            30.0/30.0 (1)\n"
        ),
        "{text}"
    );
    // The region filter keeps the row's lanes of that region only.
    let us = View::build(
        source.header(),
        source.state(),
        &ViewOptions {
            region: Some("us".into()),
            ..ViewOptions::default()
        },
    );
    let lanes: Vec<String> = us
        .load
        .map(|l| l.lanes.into_iter().map(|l| l.lane).collect())
        .unwrap_or_default();
    assert_eq!(lanes, ["b@us"]);
    // Following by offset equals a fresh read of the whole files.
    let fresh = RunSource::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(view(&fresh), v);
}

/// A saturation search's schedule after `phases` steps: open loops asking a@eu for 4/s (5
/// releases over 1 s) and b@us for 2/s (3 over 1 s), 8 requests a step.
fn search_schedule(phases: usize) -> openbench_common::schedule::Schedule {
    use openbench_common::schedule::{LoadPhase, Pacing, Phase, Schedule};
    let step = |i: usize| {
        Phase::OpenLoop(LoadPhase {
            name: format!("step-{i} constant 4/s"),
            load: "constant 4/s".into(),
            lanes: load_lanes(),
            pacing: Pacing::Releases {
                offsets_ms: vec![
                    vec![0.0, 250.0, 500.0, 750.0, 1000.0],
                    vec![0.0, 500.0, 1000.0],
                ],
                max_in_flight: 8,
            },
            source: std::sync::Arc::new(Same),
        })
    };
    Schedule {
        version: "v".into(),
        attempt: 0,
        phases: (0..phases).map(step).collect(),
    }
}

/// The planned (request id, lane label) of phase `index` of `schedule`, in plan order.
fn planned_ids(
    schedule: &openbench_common::schedule::Schedule,
    index: usize,
) -> Vec<(String, String)> {
    let ids = schedule.load_request_ids(index);
    let lanes = load_lanes();
    let openbench_common::schedule::Phase::OpenLoop(phase) = &schedule.phases[index] else {
        panic!("an open loop")
    };
    ids.into_iter()
        .zip(openbench_common::schedule::positions(
            &lanes,
            &phase.pacing,
            index as u32,
        ))
        .map(|(id, p)| (id, p.lane))
        .collect()
}

/// The load demo's saturation search writes each step it chooses as a phase file beside the
/// plan; `watch` counts them all (before, it read `full-plan.json` alone and showed
/// `requests 13/8`), flags a step resumed mid-way and says the run's times are the simulator's,
/// scaled. Checked on the plain text and on the TUI drawn on ratatui's TestBackend.
#[test]
fn a_growing_schedule_counts_every_phase_file_and_flags_a_resumed_step() {
    use openbench_common::rundir::{RunFiles, RunWriter, write_json_once};
    let dir = run_dir();
    let at = |name: &str| layout::path(dir.path(), name);
    let mut lock: RunLock = read_json(&at(layout::RUN_LOCK)).unwrap_or_else(|e| panic!("{e}"));
    lock.simulator_time_scale = Some(0.03);
    write_json_atomic(&at(layout::RUN_LOCK), &lock).unwrap_or_else(|e| panic!("{e}"));
    write_json_atomic(&at(layout::FULL_PLAN), &search_schedule(1).plan_file())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut writer =
        RunWriter::open(RunFiles::new(dir.path(), 0)).unwrap_or_else(|e| panic!("{e}"));
    let mut write = |phase: u32, sitting: u32, ids: &[(String, String)]| {
        for (k, (id, lane)) in ids.iter().enumerate() {
            let mut e = load_execution(
                id,
                lane,
                phase,
                k as f64 * 100.0,
                Outcome::Completed,
                &[10.0, 20.0],
            );
            e.record.sitting = Some(sitting);
            writer
                .append_execution(&e)
                .unwrap_or_else(|e| panic!("{e}"));
        }
    };
    // Step 0 runs to its end in sitting 1.
    write(0, 1, &planned_ids(&search_schedule(1), 0));
    let mut source = RunSource::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let v = view(&source);
    assert_eq!((v.requests_done, v.requests_total), (8, 8));
    assert_eq!((v.rounds_done, v.rounds_total), (1, 1));

    // The search chooses step 1: its phase file appears beside the plan. Sitting 1 sends 3 of
    // its requests and is interrupted; sitting 2 sends 2 more.
    let grown = search_schedule(2);
    let phase_file = crate::plan_file::phase_file_path(&at(layout::FULL_PLAN), 1);
    write_json_once(&phase_file, &grown.phase_file(1)).unwrap_or_else(|e| panic!("{e}"));
    let step1 = planned_ids(&grown, 1);
    write(1, 1, &step1[..3]);
    write(1, 2, &step1[3..5]);
    assert!(source.refresh().is_ok_and(|r| r.changed));
    let v = view(&source);
    // 8 + 8 planned; 8 + 5 sent; one phase of two done.
    assert_eq!((v.requests_done, v.requests_total), (13, 16));
    assert_eq!((v.rounds_done, v.rounds_total), (1, 2));
    let load = v.load.clone().unwrap_or_else(|| panic!("a load row"));
    assert_eq!((load.phase, load.sittings.clone()), (1, vec![1, 2]));
    let text = crate::plain::render(&v);
    assert!(text.contains("phases 1/2  requests 13/16"), "{text}");
    assert!(
        text.contains(
            "load step 1: step-1 constant 4/s  RESUMED MID-STEP (sittings 1, 2): rates span the pause"
        ),
        "{text}"
    );
    assert!(
        text.contains("run run-t  [full, running]  simulated: times ×0.03 of the profiles'"),
        "{text}"
    );
    // The TUI shows the same, drawn on a test terminal.
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 48))
        .unwrap_or_else(|e| panic!("{e}"));
    terminal
        .draw(|frame| crate::render::draw(frame, &v))
        .unwrap_or_else(|e| panic!("{e}"));
    let buffer = terminal.backend().buffer();
    let screen: String = (0..buffer.area.height)
        .map(|y| {
            (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
                + "\n"
        })
        .collect();
    assert!(screen.contains("requests 13/16"), "{screen}");
    assert!(
        screen.contains("RESUMED MID-STEP (sittings 1, 2)"),
        "{screen}"
    );
    assert!(screen.contains("simulated: times ×0.03"), "{screen}");
    // Following by offset equals a fresh read of every file.
    let fresh = RunSource::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(view(&fresh), v);
}
