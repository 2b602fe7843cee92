#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A forced tool call through the real probe executor against the embedded simulator over
//! loopback, in every dialect with tools: the call carries the same seeded answer the request
//! gets as text, as its arguments; the simulator's tool-call quirks end as
//! `malformed_tool_call` and `truncated_tool_call`; legacy completions refuse the tool.

mod sim_support;

use openbench_common::limits::StreamLimits;
use openbench_common::record::{Execution, Outcome};
use openbench_common::request::{ChatMessage, Role};
use openbench_common::spec::Api;
use openbench_common::tool::{ToolCallError, ToolChoice, ToolOffer};
use serde_json::json;
use sim_support::SimCall;

const WITH_TOOLS: [Api; 3] = [
    Api::OpenaiChat,
    Api::AnthropicMessages,
    Api::OpenaiResponses,
];

fn call(api: Api, quirks: &str) -> SimCall<'_> {
    SimCall {
        api,
        run_id: "run-tools",
        profile: "plain",
        time_scale: 0.05,
        model: "m",
        quirks,
        deadline_ms: 5_000,
        bearer: None,
        limits: StreamLimits::default(),
        messages: vec![
            ChatMessage::text(Role::System, "Answer in JSON.".into()),
            ChatMessage::text(Role::User, "What is the answer?".into()),
        ],
    }
}

fn answer_tool() -> ToolOffer {
    ToolOffer {
        name: "answer".into(),
        description: "Give the answer.".into(),
        parameters: json!({"type": "object", "properties": {"answer": {"type": "string"}},
            "required": ["answer"], "additionalProperties": false}),
        choice: ToolChoice::Forced,
    }
}

async fn run(api: Api, quirks: &'static str, tool: bool) -> Execution {
    sim_support::execute_offering(call(api, quirks), tool.then(answer_tool)).await
}

#[tokio::test]
async fn every_dialect_calls_the_forced_tool_with_the_seeded_answer() {
    let text = run(Api::OpenaiChat, "", false).await.record;
    assert!(!text.answer_text.is_empty());
    for api in WITH_TOOLS {
        let r = run(api, "", true).await.record;
        assert_eq!(
            r.outcome,
            Outcome::Completed,
            "{api}: {:?}",
            r.error_message
        );
        assert_eq!(r.offered_tool.as_deref(), Some("answer"), "{api}");
        assert_eq!(r.tool_calls.len(), 1, "{api}");
        let call = &r.tool_calls[0];
        assert_eq!(call.name, "answer", "{api}");
        assert!(!call.id.is_empty(), "{api}");
        assert_eq!(call.arguments, text.answer_text, "{api}");
        assert_eq!(r.answer_text, "", "{api}: a call is never answer text");
        assert_eq!(r.tool_call_error, None, "{api}");
        // Responses names no stop reason: a stream ending in its function call is `tool_calls`
        // as chat's `tool_calls` and Anthropic's `tool_use` are.
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"), "{api}");
        let (first, last) = (r.ttf_tool_call_ms.unwrap(), r.tool_call_e2e_ms.unwrap());
        assert!(first <= last, "{api}: {first} > {last}");
        assert_eq!(
            r.ttfo_ms,
            Some(first),
            "{api}: the call is the first output"
        );
        assert_eq!((r.ttfa_ms, r.e2e_ms), (None, None), "{api}");
    }
}

#[tokio::test]
async fn the_tool_call_quirks_end_as_their_classes() {
    for api in WITH_TOOLS {
        let r = run(api, "malformed-tool-call", true).await.record;
        assert_eq!(r.outcome, Outcome::Completed, "{api}");
        assert_eq!(
            r.tool_call_error,
            Some(ToolCallError::MalformedToolCall),
            "{api}: {:?}",
            r.tool_calls
        );
        let r = run(api, "truncated-tool-call", true).await.record;
        assert_eq!(r.outcome, Outcome::Completed, "{api}");
        assert!(r.truncated_by_length, "{api}");
        assert_eq!(
            r.tool_call_error,
            Some(ToolCallError::TruncatedToolCall),
            "{api}"
        );
        let r = run(api, "truncated", true).await.record;
        assert_eq!(r.outcome, Outcome::TransportError, "{api}");
        assert_eq!(
            r.tool_call_error,
            Some(ToolCallError::TruncatedToolCall),
            "{api}"
        );
    }
}

#[tokio::test]
async fn legacy_completions_refuse_to_send_a_tool() {
    let r = run(Api::OpenaiCompletions, "", true).await.record;
    assert_eq!(r.outcome, Outcome::TransportError);
    let message = r.error_message.unwrap_or_default();
    assert!(
        message.contains("the openai-completions API has no tools"),
        "{message}"
    );
    assert_eq!(r.http_status, None, "nothing was sent");
}

/// `probe once --tool` offers a tool in the `--api` dialect's own shape, from inline JSON or a
/// file: each dialect with tools calls it with the seeded answer `probe once` gets as text;
/// legacy completions and a broken tool file are refused, naming why.
#[tokio::test]
async fn probe_once_offers_a_tool_in_each_dialect() {
    let sim = openbench_simulator::start(
        openbench_simulator::SimConfig {
            time_scale: 0.05,
            seed: 3,
            ..openbench_simulator::SimConfig::default()
        },
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let base = sim.base_url();
    let tmp = tempfile::tempdir().unwrap();
    let tool_file = tmp.path().join("answer-tool.json");
    std::fs::write(&tool_file, serde_json::to_string(&answer_tool()).unwrap()).unwrap();
    let once = |api: Api, tool: Option<String>| {
        // Asynchronous: the simulator answers on this test's runtime meanwhile.
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_openbench-inference"));
        command.args(["probe", "once", "--api", api.as_str(), "--base-url", &base]);
        command.args(["--model", "m", "--system", "Answer in JSON."]);
        command.args(["--user", "What is the answer?", "--json"]);
        if let Some(tool) = tool {
            command.args(["--tool", &tool]);
        }
        async move { command.output().await.unwrap() }
    };
    let record = |o: &std::process::Output| -> serde_json::Value {
        let stdout = String::from_utf8_lossy(&o.stdout);
        serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("{e}: {stdout}{}", String::from_utf8_lossy(&o.stderr)))
    };
    let text = record(&once(Api::OpenaiChat, None).await);
    let answer = text["answer_text"].as_str().unwrap().to_string();
    assert!(!answer.is_empty(), "{text}");
    let inline = serde_json::to_string(&answer_tool()).unwrap();
    for (api, tool) in [
        (Api::OpenaiChat, inline.clone()),
        (Api::AnthropicMessages, tool_file.display().to_string()),
        (Api::OpenaiResponses, inline.clone()),
    ] {
        let r = record(&once(api, Some(tool)).await);
        assert_eq!(r["outcome"], "completed", "{api}: {r}");
        assert_eq!(r["offered_tool"], "answer", "{api}: {r}");
        assert_eq!(r["tool_calls"][0]["name"], "answer", "{api}: {r}");
        assert_eq!(
            r["tool_calls"][0]["arguments"],
            answer.as_str(),
            "{api}: {r}"
        );
        assert_eq!(r["finish_reason"], "tool_calls", "{api}: {r}");
        assert!(r["ttf_tool_call_ms"].as_f64().is_some(), "{api}: {r}");
        assert_eq!(r["answer_text"], "", "{api}: {r}");
    }
    let refused = once(Api::OpenaiCompletions, Some(inline)).await;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("the openai-completions API has no tools"),
        "{stderr}"
    );
    std::fs::write(&tool_file, r#"{"name": "answer"}"#).unwrap();
    let broken = once(Api::OpenaiChat, Some(tool_file.display().to_string())).await;
    let stderr = String::from_utf8_lossy(&broken.stderr);
    assert!(!broken.status.success());
    assert!(
        stderr.contains(&format!("--tool file {}", tool_file.display()))
            && stderr.contains("missing field `description`"),
        "{stderr}"
    );
}
