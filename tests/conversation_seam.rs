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

mod coordinator_support;

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use coordinator_support::{options, records};
use openbench_common::hash::sha256_hex;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::request::{ChatMessage, Role};
use openbench_common::rundir as layout;
use openbench_common::schedule::{
    LoadPhase, LoadPosition, Next, Pacing, Phase, RequestContent, RequestSource, Schedule, Turn,
    lanes, load_request_id,
};
use openbench_common::spec::Spec;
use openbench_common::workflow::{
    DatasetRelease, PlanInputs, ReportOptions, ReportOutcome, Workflow, WorkflowError,
};
use openbench_coordinator::{RunDir, RunStatus, prepare_inputs, run_full};
use openbench_example_echo::ExampleEcho;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SYSTEM: &str = "Answer the user's question about the conversation so far.";
const DIGEST: &str = "seam-test-digest";
/// Set in the child sitting this test binary runs of itself: the run directory to resume and
/// its spec.
const CHILD_ENV: &str = "OPENBENCH_SEAM_CHILD_RUN";
const CHILD_SPEC_ENV: &str = "OPENBENCH_SEAM_CHILD_SPEC";

/// What the upstream does with the requests of one conversation.
#[derive(Clone, Copy, Default)]
struct Script {
    /// This slot's questions say HOLD: the upstream holds each until it has received the last
    /// turn of slot `release_after`.
    held_slot: Option<u32>,
    /// This (slot, turn)'s question says FAIL: the upstream answers HTTP 500.
    failing: Option<(u32, u64)>,
}

/// A conversation of `turns` turns per slot.
struct Talk {
    turns: u64,
    script: Script,
}

impl Talk {
    fn question(&self, at: &LoadPosition) -> String {
        let mut q = format!(
            "user {}/{} turn {}: what did you say before?",
            at.lane, at.slot, at.sequence
        );
        if self.script.held_slot == Some(at.slot) {
            q.push_str(" HOLD");
        }
        if self.script.failing == Some((at.slot, at.sequence)) {
            q.push_str(" FAIL");
        }
        q
    }
}

/// The think time before turn k of slot s: a pure function of the position.
fn think_ms(at: &LoadPosition) -> f64 {
    if at.sequence == 0 {
        0.0
    } else {
        (10 + (at.slot as u64 * 7 + at.sequence * 13) % 30) as f64
    }
}

fn message(role: Role, content: &str) -> ChatMessage {
    ChatMessage {
        role,
        content: content.into(),
    }
}

impl RequestSource for Talk {
    fn request(&self, at: &LoadPosition) -> RequestContent {
        RequestContent {
            group: "talk".into(),
            item_key: format!("turn-{}", at.sequence),
            messages: vec![
                message(Role::System, SYSTEM),
                message(Role::User, &self.question(at)),
            ],
            output: None,
        }
    }

    fn next(&self, at: &LoadPosition, history: &[Turn]) -> Next {
        if at.sequence >= self.turns {
            return Next::Stop;
        }
        let Some(last) = history.last() else {
            return Next::Send {
                content: self.request(at),
                think_ms: think_ms(at),
            };
        };
        if last.record.outcome != Outcome::Completed {
            return Next::Stop;
        }
        let mut content = last.request.clone();
        content.item_key = format!("turn-{}", at.sequence);
        content
            .messages
            .push(message(Role::Assistant, &last.record.answer_text));
        content
            .messages
            .push(message(Role::User, &self.question(at)));
        Next::Send {
            content,
            think_ms: think_ms(at),
        }
    }

    fn reads_history(&self) -> bool {
        true
    }
}

/// The example workflow with one closed-loop phase of conversations.
struct TalkWorkflow {
    users: u32,
    turns: u64,
    script: Script,
}

impl Workflow for TalkWorkflow {
    fn name(&self) -> &'static str {
        ExampleEcho.name()
    }
    fn description(&self) -> &'static str {
        "conversations over the example workflow"
    }
    fn check_spec(&self, spec: &mut Spec) -> Vec<String> {
        ExampleEcho.check_spec(spec)
    }
    fn item_groups(&self, spec: &Spec) -> Vec<String> {
        ExampleEcho.item_groups(spec)
    }
    fn load_dataset(&self, dir: &Path, manifest: &str) -> Result<DatasetRelease, WorkflowError> {
        ExampleEcho.load_dataset(dir, manifest)
    }
    fn smoke_failures(
        &self,
        schedule: &Schedule,
        records: &BTreeMap<String, TerminalRecord>,
    ) -> Vec<String> {
        ExampleEcho.smoke_failures(schedule, records)
    }
    fn report(
        &self,
        run_dir: &Path,
        options: &ReportOptions,
    ) -> Result<ReportOutcome, WorkflowError> {
        ExampleEcho.report(run_dir, options)
    }
    fn plan(&self, inputs: &PlanInputs<'_>, attempt: u32) -> Result<Schedule, WorkflowError> {
        let source = Talk {
            turns: self.turns,
            script: self.script,
        };
        Ok(Schedule {
            version: inputs.spec.benchmark.schedule_version.clone(),
            attempt,
            phases: vec![Phase::ClosedLoop(LoadPhase {
                name: "talk".into(),
                load: format!("closed c={}", self.users),
                lanes: lanes(inputs.spec),
                pacing: Pacing::Slots {
                    concurrency: self.users,
                    per_slot: self.turns,
                },
                source: Arc::new(source),
            })],
        })
    }
}

/// One request the upstream received: when, and its messages.
#[derive(Clone)]
struct Received {
    messages: Vec<(String, String)>,
}

#[derive(Clone, Default)]
struct Upstream {
    log: Arc<Mutex<Vec<Received>>>,
    /// The question whose arrival releases the held requests.
    release_on: Arc<Mutex<Option<String>>>,
    /// Set when a held request was released by that arrival (not by the 30 s safety net).
    released_by_arrival: Arc<Mutex<bool>>,
    /// Delay of every answer.
    delay: Duration,
}

/// The answer to `messages`: their count and a digest of every role and content, so an answer
/// says exactly what was asked.
fn reply(messages: &[(String, String)]) -> String {
    let text: String = messages
        .iter()
        .map(|(role, content)| format!("{role}:{content}\n"))
        .collect();
    format!("reply n={} {}", messages.len(), &sha256_hex(&text)[..12])
}

fn chunk(content: &str, finish: Option<&str>) -> String {
    let v = serde_json::json!({
        "id": "t", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}],
    });
    format!("data: {v}\n\n")
}

async fn complete(State(up): State<Upstream>, body: String) -> Response {
    let request: serde_json::Value = serde_json::from_str(&body).unwrap();
    let messages: Vec<(String, String)> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let role = m["role"].as_str().unwrap_or_default().to_string();
            let content = m["content"].as_str().unwrap_or_default().to_string();
            (role, content)
        })
        .collect();
    let question = messages.last().map(|m| m.1.clone()).unwrap_or_default();
    up.log.lock().unwrap().push(Received {
        messages: messages.clone(),
    });
    if question.contains("FAIL") {
        return Response::builder()
            .status(500)
            .body(Body::from("{\"error\":\"failed turn\"}"))
            .unwrap();
    }
    if question.contains("HOLD") {
        let started = Instant::now();
        loop {
            let wanted = up.release_on.lock().unwrap().clone();
            let arrived = wanted.is_some_and(|w| {
                up.log
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|r| r.messages.last().is_some_and(|m| m.1.starts_with(&w)))
            });
            if arrived {
                *up.released_by_arrival.lock().unwrap() = true;
                break;
            }
            if started.elapsed() > Duration::from_secs(30) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    tokio::time::sleep(up.delay).await;
    let body = format!(
        "{}{}data: [DONE]\n\n",
        chunk(&reply(&messages), None),
        chunk("", Some("stop"))
    );
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(body))
        .unwrap()
}

/// Starts the upstream on its own thread and runtime; its endpoint and state.
fn start_upstream(delay: Duration) -> (String, Upstream) {
    let up = Upstream {
        delay,
        ..Upstream::default()
    };
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(complete))
        .with_state(up.clone());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await
        })
    });
    (format!("http://{addr}/v1/chat/completions"), up)
}

fn write_spec(dir: &Path, endpoint: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/prompts.txt"), "alpha\n").unwrap();
    let spec = format!(
        "benchmark: {{slug: talk, workflow: example-echo, schedule_version: talk-v1}}
request: {{temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 60000,
  harness_grace_ms: 60000}}
providers:
  - {{key: up, endpoint: '{endpoint}', model: m, auth: {{scheme: none}}, max_tokens_field: max_tokens}}
dataset: {{source: data, manifest: prompts.txt}}
run_root: runs
echo:
  phases:
    - {{kind: closed_loop, name: unused, concurrency: 1, per_slot: 1}}
"
    );
    let path = dir.join("spec.yaml");
    std::fs::write(&path, spec).unwrap();
    path
}

/// The committed records of the run, by (slot, turn).
fn turns(dir: &Path) -> BTreeMap<(u32, u64), TerminalRecord> {
    records(&dir.join(layout::FULL_RESULTS))
        .into_iter()
        .filter(|r| r.outcome.is_committed())
        .map(|r| ((r.slot.unwrap(), r.sequence.unwrap()), r))
        .collect()
}

/// The messages turn `k` of `slot` must carry, rebuilt from the committed answers before it.
fn expected(
    talk: &Talk,
    lane: &str,
    slot: u32,
    k: u64,
    by_turn: &BTreeMap<(u32, u64), TerminalRecord>,
) -> Vec<(String, String)> {
    let at = |sequence| LoadPosition {
        phase: 0,
        lane: lane.into(),
        lane_index: 0,
        slot,
        sequence,
    };
    let mut messages = vec![
        ("system".to_string(), SYSTEM.to_string()),
        ("user".to_string(), talk.question(&at(0))),
    ];
    for j in 1..=k {
        messages.push((
            "assistant".into(),
            by_turn[&(slot, j - 1)].answer_text.clone(),
        ));
        messages.push(("user".into(), talk.question(&at(j))));
    }
    messages
}

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
