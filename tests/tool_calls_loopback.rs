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
            ChatMessage {
                role: Role::System,
                content: "Answer in JSON.".into(),
            },
            ChatMessage {
                role: Role::User,
                content: "What is the answer?".into(),
            },
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
        // Responses has no tool-call stop: `response.completed` is `stop`.
        let finish = if api == Api::OpenaiResponses {
            "stop"
        } else {
            "tool_calls"
        };
        assert_eq!(r.finish_reason.as_deref(), Some(finish), "{api}");
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
