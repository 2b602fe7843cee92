//! Offering a tool in each dialect (the exact `tools` and `tool_choice` each SDK types), and
//! each dialect's recorded-format tool-call stream read back into the record's calls, with the
//! tool-call timings and the broken-call classes computed by hand (events 10 ms apart).

use super::*;
use crate::dialect::build_body;
use crate::dialect::tests::{adapter, messages, replay};
use openbench_common::record::Outcome;
use openbench_common::spec::RequestContract;
use openbench_common::tool::{ToolCall, ToolCallError};

fn triage(choice: ToolChoice) -> ToolOffer {
    ToolOffer {
        name: "triage".into(),
        description: "File the ticket.".into(),
        parameters: json!({"type": "object", "properties": {"category": {"type": "string"}},
            "required": ["category"], "additionalProperties": false}),
        choice,
    }
}

/// The `tools` and `tool_choice` of a body offering `triage` in `api`.
fn offered(api: Api, choice: ToolChoice) -> (String, String) {
    let contract = RequestContract::reference(20_000);
    let mut body = build_body(&adapter(api), &contract, &messages(), None);
    offer(&mut body, api, &triage(choice)).unwrap();
    (body["tools"].to_string(), body["tool_choice"].to_string())
}

const SCHEMA: &str = r#"{"type":"object","properties":{"category":{"type":"string"}},"required":["category"],"additionalProperties":false}"#;

#[test]
fn each_dialect_offers_the_tool_as_its_api_types_it() {
    // openai-python types/chat/chat_completion_function_tool_param.py and
    // chat_completion_named_tool_choice_param.py.
    assert_eq!(
        offered(Api::OpenaiChat, ToolChoice::Forced),
        (
            format!(
                r#"[{{"type":"function","function":{{"name":"triage","description":"File the ticket.","parameters":{SCHEMA}}}}}]"#
            ),
            r#"{"type":"function","function":{"name":"triage"}}"#.to_string()
        )
    );
    // types/responses/function_tool_param.py (flat; `strict` required) and
    // tool_choice_function_param.py.
    assert_eq!(
        offered(Api::OpenaiResponses, ToolChoice::Forced),
        (
            format!(
                r#"[{{"type":"function","name":"triage","description":"File the ticket.","parameters":{SCHEMA},"strict":false}}]"#
            ),
            r#"{"type":"function","name":"triage"}"#.to_string()
        )
    );
    // anthropic-sdk-python types/tool_param.py and tool_choice_tool_param.py.
    assert_eq!(
        offered(Api::AnthropicMessages, ToolChoice::Forced),
        (
            format!(
                r#"[{{"name":"triage","description":"File the ticket.","input_schema":{SCHEMA}}}]"#
            ),
            r#"{"type":"tool","name":"triage"}"#.to_string()
        )
    );
    assert_eq!(offered(Api::OpenaiChat, ToolChoice::Auto).1, r#""auto""#);
    assert_eq!(
        offered(Api::AnthropicMessages, ToolChoice::Auto).1,
        r#"{"type":"auto"}"#
    );
}

#[test]
fn legacy_completions_refuse_a_tool() {
    let mut body = json!({"prompt": "p"});
    let err = offer(
        &mut body,
        Api::OpenaiCompletions,
        &triage(ToolChoice::Forced),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the openai-completions API has no tools: a request offering tool \"triage\" cannot be sent"
    );
    assert!(body.get("tools").is_none());
    assert!(!Api::OpenaiCompletions.has_tools());
    assert!(Api::ALL.iter().filter(|a| a.has_tools()).count() == 3);
}

fn call(id: &str, arguments: &str) -> Vec<ToolCall> {
    vec![ToolCall {
        id: id.into(),
        name: "triage".into(),
        arguments: arguments.into(),
    }]
}

#[test]
fn chat_tool_call_is_joined_by_index_and_timed() {
    let r = replay(Api::OpenaiChat, "openai_chat_tool.sse");
    assert_eq!(r.outcome, Outcome::Completed);
    // Event 1 (10 ms) names the call; the last argument fragment is event 4 (40 ms).
    assert_eq!(
        r.tool_calls,
        call("call_7Gq", r#"{"category":"bug","priority":"p1"}"#)
    );
    assert_eq!(r.ttf_tool_call_ms, Some(10.0));
    assert_eq!(r.tool_call_e2e_ms, Some(40.0));
    assert_eq!(r.ttfo_ms, Some(10.0));
    assert_eq!((r.ttfa_ms, r.e2e_ms), (None, None));
    assert_eq!(r.answer_text, "");
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.tool_call_error, None);
}

#[test]
fn anthropic_tool_use_block_is_joined_after_a_text_block() {
    let r = replay(Api::AnthropicMessages, "anthropic_tool.sse");
    assert_eq!(r.outcome, Outcome::Completed);
    // Text at event 3 (30 ms); the tool_use block opens at event 5 (50 ms), its last fragment is
    // event 9 (90 ms); the empty fragment (60 ms) and the ping (80 ms) add nothing.
    assert_eq!(
        r.tool_calls,
        call(
            "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
            r#"{"category": "feature", "priority": "p2"}"#
        )
    );
    assert_eq!(
        (r.ttfo_ms, r.ttfa_ms, r.e2e_ms),
        (Some(30.0), Some(30.0), Some(30.0))
    );
    assert_eq!(r.ttf_tool_call_ms, Some(50.0));
    assert_eq!(r.tool_call_e2e_ms, Some(90.0));
    assert_eq!(r.answer_text, "Triaging.");
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.tool_call_error, None);
}

#[test]
fn responses_function_call_is_joined_from_its_item_and_deltas() {
    let r = replay(Api::OpenaiResponses, "openai_responses_tool.sse");
    assert_eq!(r.outcome, Outcome::Completed);
    // The item (20 ms) names it; deltas at 30 and 40 ms; `.done` and the done item repeat the
    // arguments and add nothing.
    assert_eq!(
        r.tool_calls,
        call(
            "call_Zq3",
            r#"{"category":"customer_support","priority":"p0"}"#
        )
    );
    assert_eq!(r.ttf_tool_call_ms, Some(20.0));
    assert_eq!(r.tool_call_e2e_ms, Some(40.0));
    assert_eq!(r.tool_call_error, None);
}

#[test]
fn a_length_stop_inside_a_call_is_a_truncated_tool_call() {
    let r = replay(Api::OpenaiChat, "openai_chat_tool_length.sse");
    assert_eq!(r.outcome, Outcome::Completed);
    assert!(r.truncated_by_length);
    assert_eq!(r.tool_calls, call("call_1", r#"{"category":"bug","prio"#));
    assert_eq!(r.tool_call_error, Some(ToolCallError::TruncatedToolCall));
    assert_eq!(r.tool_call_e2e_ms, Some(20.0));
}

#[test]
fn a_stream_that_ends_inside_a_call_is_a_truncated_tool_call() {
    let r = replay(Api::AnthropicMessages, "anthropic_tool_unclosed.sse");
    assert_eq!(r.outcome, Outcome::TransportError);
    assert_eq!(r.tool_calls, call("toolu_2", r#"{"category": "bug""#));
    assert_eq!(r.tool_call_error, Some(ToolCallError::TruncatedToolCall));
    assert_eq!(r.ttf_tool_call_ms, Some(20.0));
    // No tool-call E2E for a stream that did not complete.
    assert_eq!(r.tool_call_e2e_ms, None);
}

#[test]
fn arguments_that_are_not_json_are_a_malformed_tool_call() {
    let r = replay(Api::OpenaiChat, "openai_chat_tool_malformed.sse");
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.tool_calls, call("call_m", r#"{"category": bug}"#));
    assert_eq!(r.tool_call_error, Some(ToolCallError::MalformedToolCall));
}

#[test]
fn parallel_chat_calls_are_kept_apart_by_index() {
    let r = replay(Api::OpenaiChat, "openai_chat_two_tools.sse");
    // Call 1's whole arguments come between call 0's two fragments.
    let mut calls = call("call_a", r#"{"category":"bug"}"#);
    calls.extend(call("call_b", r#"{"category":"feature"}"#));
    assert_eq!(r.tool_calls, calls);
    assert_eq!(r.ttf_tool_call_ms, Some(10.0));
    assert_eq!(r.tool_call_e2e_ms, Some(30.0));
    assert_eq!(r.tool_call_error, None);
}

#[test]
fn an_anthropic_call_with_an_unquoted_value_is_malformed() {
    // The shape of anthropic-sdk-python's tests/lib/streaming/fixtures/
    // tool_use_invalid_json_response.txt (a `caller` on the block, a bare word as a value).
    let r = replay(Api::AnthropicMessages, "anthropic_tool_malformed.sse");
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(
        r.tool_calls,
        call("toolu_3", r#"{"category": "bug", "priority": p1}"#)
    );
    assert_eq!(r.tool_call_error, Some(ToolCallError::MalformedToolCall));
    // Opened at 20 ms, fragments at 30 and 40 ms.
    assert_eq!(r.ttf_tool_call_ms, Some(20.0));
    assert_eq!(r.tool_call_e2e_ms, Some(40.0));
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
}
