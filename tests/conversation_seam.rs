//! The seam (issue 40 item 1): a load phase's slot is a conversation. Its source sees the slot's
//! committed turns, carries every earlier question and answer verbatim, plans a think time and
//! stops the slot after a failed turn. Against an upstream on loopback that logs every request it
//! receives and answers each with a digest of the messages it got:
//! - a sitting SIGKILLed mid-conversation and resumed rebuilds each slot's history from the
//!   records on disk: every turn the resumed sitting sends carries the answers the killed one
//!   committed, every request id is its position's, each once;
//! - a user held by the upstream does not delay another user's next turns (the held answer is
//!   released only once the other user's last turn arrived), and a failed turn ends its
//!   conversation with no further request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conversation_support;
mod coordinator_support;

use conversation_support::*;
use coordinator_support::{options, records};
use openbench_common::record::Outcome;
use openbench_common::rundir as layout;
use openbench_common::schedule::{LoadPosition, load_request_id};
use openbench_coordinator::{RunDir, RunStatus, prepare_inputs, run_full};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KILL_USERS: u32 = 3;
const KILL_TURNS: u64 = 6;

/// The sitting the kill test runs as a child process of this binary and SIGKILLs; a no-op in a
/// normal test run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_sitting_of_the_kill_test() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let spec = std::path::PathBuf::from(std::env::var_os(CHILD_SPEC_ENV).unwrap());
    let workflow = TalkWorkflow {
        users: KILL_USERS,
        turns: KILL_TURNS,
        script: Script::default(),
        open: None,
    };
    let inputs = prepare_inputs(&spec, Arc::new(workflow), DIGEST).unwrap();
    let run = RunDir::open(&inputs, &dir, "run").unwrap();
    run_full(&inputs, &run, "T-TALK", &options(&inputs))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_resumed_after_sigkill_carries_the_answers_the_killed_sitting_committed() {
    let tmp = tempfile::tempdir().unwrap();
    let (endpoint, up) = start_upstream(Duration::from_millis(60));
    let spec = write_spec(tmp.path(), &endpoint);
    let talk = || TalkWorkflow {
        users: KILL_USERS,
        turns: KILL_TURNS,
        script: Script::default(),
        open: None,
    };
    let inputs = prepare_inputs(&spec, Arc::new(talk()), DIGEST).unwrap();
    let run = RunDir::create(&inputs, Some("T-TALK"), "test").unwrap();
    let dir = run.dir.clone();
    drop(run);

    // The first sitting, in a child process of this test binary, SIGKILLed mid-conversation.
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_sitting_of_the_kill_test", "--nocapture"])
        .env(CHILD_ENV, &dir)
        .env(CHILD_SPEC_ENV, &spec)
        .current_dir(tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let results = dir.join(layout::FULL_RESULTS);
    let started = Instant::now();
    let written = || {
        std::fs::read(&results)
            .map(|bytes| bytes.iter().filter(|b| **b == b'\n').count())
            .unwrap_or(0)
    };
    while written() < 7 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = turns(&dir);
    assert!(
        before.len() >= 7 && before.len() < (KILL_USERS as usize * KILL_TURNS as usize),
        "killed mid-run: {} turns committed",
        before.len()
    );

    // The resumed sitting, in process.
    let run = RunDir::open(&inputs, &dir, "run").unwrap();
    let outcome = run_full(&inputs, &run, "T-TALK", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    let by_turn = turns(&dir);
    let all = records(&results);
    let source = Talk {
        turns: KILL_TURNS,
        script: Script::default(),
    };
    let lane = "up";
    // Every turn once, under its position's id; the killed sitting's turns kept as they were.
    assert_eq!(by_turn.len(), (KILL_USERS as usize) * (KILL_TURNS as usize));
    for ((slot, k), r) in &by_turn {
        let position = LoadPosition {
            phase: 0,
            lane: lane.into(),
            lane_index: 0,
            slot: *slot,
            sequence: *k,
        };
        assert_eq!(r.request_id, load_request_id("talk-v1", &position, 0));
        let committed = all
            .iter()
            .filter(|o| o.request_id == r.request_id && o.outcome.is_committed())
            .count();
        assert_eq!(committed, 1, "{} committed once", r.request_id);
        if let Some(earlier) = before.get(&(*slot, *k)) {
            assert_eq!(earlier.answer_text, r.answer_text);
        }
        // The answer says what was asked: the turns before it and their committed answers.
        let asked = expected(&source, lane, *slot, *k, &by_turn);
        assert_eq!(r.answer_text, reply(&asked), "slot {slot} turn {k}");
        assert_eq!(r.round_id, "", "a load record carries no round id");
        assert_eq!(
            r.think_ms,
            (think_ms(&position) > 0.0).then(|| think_ms(&position))
        );
    }
    // Every request the upstream received (a turn cut by the kill arrived twice) is the one its
    // position's history gives.
    for received in up.log.lock().unwrap().iter() {
        let question = &received.messages.last().unwrap().1;
        let (slot, k) = (0..KILL_USERS)
            .flat_map(|s| (0..KILL_TURNS).map(move |k| (s, k)))
            .find(|(s, k)| question.starts_with(&format!("user up/{s} turn {k}:")))
            .unwrap();
        assert_eq!(
            received.messages,
            expected(&source, lane, slot, k, &by_turn)
        );
    }
    // Some conversation crossed the kill: a turn of the resumed sitting answered after one the
    // killed sitting committed.
    let crossed = by_turn.iter().any(|((slot, k), r)| {
        *k > 0 && r.sitting == Some(2) && by_turn[&(*slot, k - 1)].sitting == Some(1)
    });
    assert!(crossed, "no conversation crossed the kill");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_user_delays_no_other_users_turn_and_a_failed_turn_ends_its_conversation() {
    let tmp = tempfile::tempdir().unwrap();
    let (endpoint, up) = start_upstream(Duration::ZERO);
    let turns_per_user = 4;
    // Slot 0 is held until slot 2's last turn arrives; slot 1's second turn fails.
    *up.release_on.lock().unwrap() = Some(format!("user up/2 turn {}:", turns_per_user - 1));
    let spec = write_spec(tmp.path(), &endpoint);
    let workflow = TalkWorkflow {
        users: 3,
        turns: turns_per_user,
        script: Script {
            held_slot: Some(0),
            failing: Some((1, 1)),
        },
        open: None,
    };
    let inputs = prepare_inputs(&spec, Arc::new(workflow), DIGEST).unwrap();
    let run = RunDir::create(&inputs, Some("T-TALK"), "test").unwrap();
    let outcome = run_full(&inputs, &run, "T-TALK", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    assert!(
        *up.released_by_arrival.lock().unwrap(),
        "the held user's first turn was released by the other user's last turn"
    );
    let by_turn = turns(&run.dir);
    let count = |slot| by_turn.keys().filter(|(s, _)| *s == slot).count();
    assert_eq!((count(0), count(1), count(2)), (4, 2, 4));
    let failed = &by_turn[&(1, 1)];
    assert_eq!(failed.outcome, Outcome::HttpError);
    assert_eq!(failed.http_status, Some(500));
    // No request of slot 1 after its failed turn reached the upstream.
    let asked_after = up.log.lock().unwrap().iter().any(|r| {
        r.messages
            .last()
            .unwrap()
            .1
            .starts_with("user up/1 turn 2:")
    });
    assert!(!asked_after, "a turn was sent after the failed one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loops_releases_each_start_a_conversation_whose_turns_follow_their_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let (endpoint, _up) = start_upstream(Duration::from_millis(20));
    let spec = write_spec(tmp.path(), &endpoint);
    let offsets = vec![0.0, 40.0, 80.0];
    let workflow = TalkWorkflow {
        // At most 2 conversations in flight: the third waits for one to end.
        users: 2,
        turns: 3,
        script: Script::default(),
        open: Some(offsets.clone()),
    };
    let inputs = prepare_inputs(&spec, Arc::new(workflow), DIGEST).unwrap();
    let run = RunDir::create(&inputs, Some("T-TALK"), "test").unwrap();
    let outcome = run_full(&inputs, &run, "T-TALK", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    let by_turn = turns(&run.dir);
    assert_eq!(by_turn.len(), 9, "3 conversations of 3 turns");
    // How many requests conversations send is an outcome: the plan lists none.
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.dir.join(layout::FULL_PLAN)).unwrap())
            .unwrap();
    assert_eq!(plan["phases"][0]["requests"], 0);
    let source = Talk {
        turns: 3,
        script: Script::default(),
    };
    for ((slot, k), r) in &by_turn {
        let position = LoadPosition {
            phase: 0,
            lane: "up".into(),
            lane_index: 0,
            slot: *slot,
            sequence: *k,
        };
        assert_eq!(r.request_id, load_request_id("talk-v1", &position, 0));
        assert_eq!(
            r.answer_text,
            reply(&expected(&source, "up", *slot, *k, &by_turn))
        );
        // The first turn is the release, on its schedule; later ones follow their answer.
        let scheduled = (*k == 0).then(|| offsets[*slot as usize]);
        assert_eq!(r.scheduled_offset_ms, scheduled, "slot {slot} turn {k}");
        assert_eq!(r.think_ms, (*k > 0).then(|| think_ms(&position)));
    }
}
