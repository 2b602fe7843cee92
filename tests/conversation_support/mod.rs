//! The conversation tests' pieces: a source whose slots are conversations ([`Talk`]), the
//! example workflow planning one phase of them ([`TalkWorkflow`]), and an upstream on loopback
//! that logs every request and answers each with a digest of its messages ([`start_upstream`]).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::coordinator_support::records;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use openbench_common::hash::sha256_hex;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::request::{ChatMessage, Role};
use openbench_common::rundir as layout;
use openbench_common::schedule::{
    LoadPhase, LoadPosition, Next, Pacing, Phase, RequestContent, RequestSource, Schedule, Turn,
    lanes,
};
use openbench_common::spec::Spec;
use openbench_common::workflow::{
    DatasetRelease, PlanInputs, ReportOptions, ReportOutcome, Workflow, WorkflowError,
};
use openbench_example_echo::ExampleEcho;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const SYSTEM: &str = "Answer the user's question about the conversation so far.";
pub const DIGEST: &str = "seam-test-digest";
/// Set in the child sitting this test binary runs of itself: the run directory to resume and
/// its spec.
pub const CHILD_ENV: &str = "OPENBENCH_SEAM_CHILD_RUN";
pub const CHILD_SPEC_ENV: &str = "OPENBENCH_SEAM_CHILD_SPEC";

/// What the upstream does with the requests of one conversation.
#[derive(Clone, Copy, Default)]
pub struct Script {
    /// This slot's questions say HOLD: the upstream holds each until it has received the last
    /// turn of slot `release_after`.
    pub held_slot: Option<u32>,
    /// This (slot, turn)'s question says FAIL: the upstream answers HTTP 500.
    pub failing: Option<(u32, u64)>,
}

/// A conversation of `turns` turns per slot.
pub struct Talk {
    pub turns: u64,
    pub script: Script,
}

impl Talk {
    pub fn question(&self, at: &LoadPosition) -> String {
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
pub fn think_ms(at: &LoadPosition) -> f64 {
    if at.sequence == 0 {
        0.0
    } else {
        (10 + (at.slot as u64 * 7 + at.sequence * 13) % 30) as f64
    }
}

pub fn message(role: Role, content: &str) -> ChatMessage {
    ChatMessage::text(role, content.into())
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
            tools: Vec::new(),
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
pub struct TalkWorkflow {
    pub users: u32,
    pub turns: u64,
    pub script: Script,
    /// Release offsets (ms) of an open loop, each starting a conversation; `None`: a closed
    /// loop of `users` slots.
    pub open: Option<Vec<f64>>,
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
            phases: vec![match &self.open {
                None => Phase::ClosedLoop(LoadPhase {
                    name: "talk".into(),
                    load: format!("closed c={}", self.users),
                    lanes: lanes(inputs.spec),
                    pacing: Pacing::Slots {
                        concurrency: self.users,
                        per_slot: self.turns,
                    },
                    source: Arc::new(source),
                }),
                Some(offsets) => Phase::OpenLoop(LoadPhase {
                    name: "talk-open".into(),
                    load: "conversations".into(),
                    lanes: lanes(inputs.spec),
                    pacing: Pacing::Releases {
                        offsets_ms: vec![offsets.clone()],
                        max_in_flight: self.users,
                    },
                    source: Arc::new(source),
                }),
            }],
        })
    }
}

/// One request the upstream received: when, and its messages.
#[derive(Clone)]
pub struct Received {
    pub messages: Vec<(String, String)>,
}

#[derive(Clone, Default)]
pub struct Upstream {
    pub log: Arc<Mutex<Vec<Received>>>,
    /// The question whose arrival releases the held requests.
    pub release_on: Arc<Mutex<Option<String>>>,
    /// Set when a held request was released by that arrival (not by the 30 s safety net).
    pub released_by_arrival: Arc<Mutex<bool>>,
    /// Delay of every answer.
    pub delay: Duration,
}

/// The answer to `messages`: their count and a digest of every role and content, so an answer
/// says exactly what was asked.
pub fn reply(messages: &[(String, String)]) -> String {
    let text: String = messages
        .iter()
        .map(|(role, content)| format!("{role}:{content}\n"))
        .collect();
    format!("reply n={} {}", messages.len(), &sha256_hex(&text)[..12])
}

pub fn chunk(content: &str, finish: Option<&str>) -> String {
    let v = serde_json::json!({
        "id": "t", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}],
    });
    format!("data: {v}\n\n")
}

pub async fn complete(State(up): State<Upstream>, body: String) -> Response {
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
pub fn start_upstream(delay: Duration) -> (String, Upstream) {
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

pub fn write_spec(dir: &Path, endpoint: &str) -> std::path::PathBuf {
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
pub fn turns(dir: &Path) -> BTreeMap<(u32, u64), TerminalRecord> {
    records(&dir.join(layout::FULL_RESULTS))
        .into_iter()
        .filter(|r| r.outcome.is_committed())
        .map(|r| ((r.slot.unwrap(), r.sequence.unwrap()), r))
        .collect()
}

/// The messages turn `k` of `slot` must carry, rebuilt from the committed answers before it.
pub fn expected(
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
