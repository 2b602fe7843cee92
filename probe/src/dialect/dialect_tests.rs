//! Each dialect's recorded-format stream (probe/tests/fixtures/dialects) read through the one
//! fold the executor uses, each event stamped 10 ms after the one before: TTFO, TTFA, E2E, texts,
//! usage and the ending, computed by hand from the fixture.

use super::*;
use crate::credentials::Credentials;
use crate::executor::process;
use crate::record::{Ending, Exchange, StreamState, finalize};
use crate::redact::Redactor;
use crate::sse::SseDecoder;
use openbench_common::limits::StreamLimits;
use openbench_common::record::{Classification, ErrorType, Outcome, TerminalRecord, Usage};
use openbench_common::request::Role;
use openbench_common::spec::{Auth, MaxTokensField};
use std::time::Duration;

/// Reads a fixture's events, the k-th (0-based) completed at (k + 1) × 10 ms, and folds them as
/// the executor does; a stream that ends without an ending is completed when finished.
pub(super) fn replay(api: Api, name: &str) -> TerminalRecord {
    replay_capped(api, name, None)
}

/// [`replay`] of a request whose completion ceiling was `ceiling`, settled as the executor
/// settles a finished stream.
pub(super) fn replay_capped(api: Api, name: &str, ceiling: Option<u64>) -> TerminalRecord {
    let path = format!(
        "{}/tests/fixtures/dialects/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut decoder = SseDecoder::new();
    let mut frames = Vec::new();
    let blocks: Vec<&str> = text
        .split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .collect();
    for (k, block) in blocks.iter().enumerate() {
        let at = Duration::from_millis(10 * (k as u64 + 1));
        decoder
            .feed(format!("{block}\n\n").as_bytes(), at, &mut frames)
            .unwrap();
    }
    let mut state = StreamState::default();
    let redactor = Redactor::new(&Credentials::default()).unwrap();
    let limits = StreamLimits::default();
    let ending = process(&mut frames, &mut state, &limits, &redactor, api).unwrap_or({
        if state.finished() {
            Ending::Completed
        } else {
            Ending::Transport {
                error_type: ErrorType::TruncatedStream,
                message: "truncated".into(),
            }
        }
    });
    let exchange = Exchange {
        status: Some(200),
        headers_at: Some(Duration::from_millis(5)),
        end_at: Some(Duration::from_millis(10 * blocks.len() as u64)),
        ..Exchange::default()
    };
    settle_finish(api, &mut state, ceiling);
    let base = TerminalRecord::new("t".into(), Outcome::Completed);
    finalize(base, state, exchange, &ending).record
}

#[test]
fn anthropic_stream_times_thinking_answer_and_usage() {
    let r = replay(Api::AnthropicMessages, "anthropic_messages.sse");
    assert_eq!(r.outcome, Outcome::Completed);
    // Event 4 (40 ms) is the first thinking_delta; event 8 (80 ms) the first text_delta, event 9
    // (90 ms) the last; the ping (30 ms) and the signature (50 ms) count for nothing.
    assert_eq!(r.ttfo_ms, Some(40.0));
    assert_eq!(r.ttfa_ms, Some(80.0));
    assert_eq!(r.e2e_ms, Some(90.0));
    assert_eq!(r.answer_text, "{\"answer\": 42}");
    assert_eq!(r.reasoning_text, "The user wants JSON.");
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert_eq!(r.response_model.as_deref(), Some("claude-sonnet-4-5"));
    // Prompt = input 472 + cache read 128 + cache creation 0; output from message_delta.
    let usage = Usage {
        prompt_tokens: Some(600),
        completion_tokens: Some(31),
        total_tokens: None,
        cached_tokens: Some(128),
        reasoning_tokens: None,
    };
    assert_eq!(r.usage, Some(usage));
    assert_eq!(r.event_count, 12);
}

#[test]
fn anthropic_overloaded_error_event_is_the_class_of_a_529() {
    let r = replay(Api::AnthropicMessages, "anthropic_overloaded.sse");
    assert_eq!(r.outcome, Outcome::StreamError);
    assert_eq!(r.error_type, Some(ErrorType::Http5xx));
    assert_eq!(r.error_message.as_deref(), Some("event: error: Overloaded"));
    assert_eq!(
        (r.ttfo_ms, r.ttfa_ms, r.e2e_ms),
        (Some(30.0), Some(30.0), None)
    );
    assert_eq!(r.answer_text, "{\"answer\"");
}

#[test]
fn responses_stream_times_reasoning_answer_and_usage() {
    let r = replay(Api::OpenaiResponses, "openai_responses.sse");
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.ttfo_ms, Some(40.0));
    assert_eq!(r.ttfa_ms, Some(80.0));
    assert_eq!(r.e2e_ms, Some(90.0));
    assert_eq!(r.answer_text, "{\"answer\": 42}");
    assert_eq!(r.reasoning_text, "Need JSON.");
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert_eq!(r.response_model.as_deref(), Some("gpt-oss-120b"));
    let usage = Usage {
        prompt_tokens: Some(85),
        completion_tokens: Some(40),
        total_tokens: Some(125),
        cached_tokens: Some(64),
        reasoning_tokens: Some(12),
    };
    assert_eq!(r.usage, Some(usage));
    assert_eq!(r.event_count, 11);
}

/// llama.cpp's `/v1/responses` (its `server-task.cpp`: no `output_index`, the whole output again
/// in `response.completed`, its `timings` there) says `completed` when generation stopped at
/// `max_output_tokens`: 4 output tokens at a ceiling of 4 is a `length` stop; the same stream
/// under a ceiling of 24 stopped on its own.
#[test]
fn a_completed_response_at_the_ceiling_is_a_length_stop() {
    let name = "openai_responses_llama_ceiling.sse";
    let r = replay_capped(Api::OpenaiResponses, name, Some(4));
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
    assert!(r.truncated_by_length);
    // Events 5 to 8 (50 to 80 ms) carry the four pieces.
    assert_eq!(r.answer_text, "Blue, green and");
    assert_eq!((r.ttfa_ms, r.e2e_ms), (Some(50.0), Some(80.0)));
    assert_eq!(r.usage.and_then(|u| u.completion_tokens), Some(4));
    let timings = r.server_timings.unwrap();
    assert_eq!(timings["predicted_n"], json!(4));
    assert_eq!(timings["predicted_ms"], json!(160.5));
    let r = replay_capped(Api::OpenaiResponses, name, Some(24));
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert!(!r.truncated_by_length);
    let r = replay(Api::OpenaiResponses, name);
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
}

/// The Responses API names no stop reason: a stream whose last output is a function call
/// records `tool_calls`, as chat's and Anthropic's say; answer text after the call is a `stop`.
#[test]
fn a_response_that_ends_in_a_function_call_finishes_with_tool_calls() {
    let r = replay(Api::OpenaiResponses, "openai_responses_tool.sse");
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    let event = |data: &str| classify(Api::OpenaiResponses, None, data).unwrap();
    let mut state = StreamState::default();
    let at = Duration::from_millis(1);
    state.push_chunk(at, None, event(r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c","name":"f","arguments":""}}"#));
    state.push_chunk(at, None, event(r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}}"#));
    state.push_chunk(
        at,
        None,
        event(r#"{"type":"response.output_text.delta","output_index":1,"delta":"Done."}"#),
    );
    state.push_chunk(
        at,
        None,
        event(r#"{"type":"response.completed","response":{"status":"completed","output":[]}}"#),
    );
    settle_finish(Api::OpenaiResponses, &mut state, Some(256));
    assert_eq!(state.finish_reason.as_deref(), Some("stop"));
    // Chat says its own stop reason: a chat `stop` after a call is kept.
    let mut state = StreamState::default();
    state.finish_reason = Some("stop".into());
    state.push_chunk(at, None, classify(Api::OpenaiChat, None, r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}}]}"#).unwrap());
    settle_finish(Api::OpenaiChat, &mut state, None);
    assert_eq!(state.finish_reason.as_deref(), Some("stop"));
}

#[test]
fn responses_failed_is_a_stream_error_of_the_server_class() {
    let r = replay(Api::OpenaiResponses, "openai_responses_failed.sse");
    assert_eq!(r.outcome, Outcome::StreamError);
    assert_eq!(r.error_type, Some(ErrorType::Http5xx));
    assert_eq!(
        r.error_message.as_deref(),
        Some("The model failed to generate a response.")
    );
    assert_eq!(
        (r.ttfo_ms, r.ttfa_ms, r.e2e_ms),
        (Some(30.0), Some(30.0), None)
    );
}

#[test]
fn completions_stream_reads_text_length_stop_and_usage() {
    let r = replay(Api::OpenaiCompletions, "openai_completions.sse");
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(
        (r.ttfo_ms, r.ttfa_ms, r.e2e_ms),
        (Some(10.0), Some(10.0), Some(20.0))
    );
    assert_eq!(r.answer_text, "{\"answer\": 42}");
    assert!(r.truncated_by_length);
    let usage = Usage {
        prompt_tokens: Some(31),
        completion_tokens: Some(6),
        total_tokens: Some(37),
        ..Usage::default()
    };
    assert_eq!(r.usage, Some(usage));
}

#[test]
fn completions_error_object_is_a_stream_error() {
    let r = replay(Api::OpenaiCompletions, "openai_completions_error.sse");
    assert_eq!(r.outcome, Outcome::StreamError);
    assert_eq!(r.error_type, Some(ErrorType::StreamError));
    assert_eq!(r.error_message.as_deref(), Some("upstream model failure"));
    assert_eq!(r.answer_text, "{\"ans");
}

#[test]
fn a_tool_call_delta_is_the_first_output_but_never_answer() {
    let data = r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}"#;
    let chunk = classify(Api::AnthropicMessages, Some("content_block_delta"), data).unwrap();
    assert_eq!(chunk.classification, Classification::ToolCall);
    assert_eq!(chunk.tool_call, "{\"city\":");
    assert!(chunk.answer.is_empty());
    let mut state = StreamState::default();
    state.push_chunk(Duration::from_millis(7), None, chunk);
    let base = TerminalRecord::new("t".into(), Outcome::Completed);
    let r = finalize(base, state, Exchange::default(), &Ending::Completed).record;
    assert_eq!((r.ttfo_ms, r.ttfa_ms), (Some(7.0), None));
    let data = r#"{"type":"response.function_call_arguments.delta","delta":"{\"x\""}"#;
    let chunk = classify(Api::OpenaiResponses, None, data).unwrap();
    assert_eq!(chunk.classification, Classification::ToolCall);
}

#[test]
fn stop_reasons_map_onto_the_record_vocabulary() {
    let delta = |reason: &str| {
        let data = format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"{reason}"}},"usage":{{"output_tokens":3}}}}"#
        );
        classify(Api::AnthropicMessages, None, &data)
            .unwrap()
            .finish_reason
    };
    assert_eq!(delta("max_tokens").as_deref(), Some("length"));
    assert_eq!(delta("end_turn").as_deref(), Some("stop"));
    assert_eq!(delta("tool_use").as_deref(), Some("tool_calls"));
    let incomplete = r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#;
    let chunk = classify(Api::OpenaiResponses, None, incomplete).unwrap();
    assert_eq!(chunk.classification, Classification::Done);
    assert_eq!(chunk.finish_reason.as_deref(), Some("length"));
    let rate = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
    let chunk = classify(Api::AnthropicMessages, Some("error"), rate).unwrap();
    assert_eq!(chunk.error_type, Some(ErrorType::Http429));
    let bad = classify(Api::AnthropicMessages, None, "{not json").unwrap_err();
    assert_eq!(bad.data, "{not json");
}

pub(super) fn messages() -> Vec<ChatMessage> {
    let m = |role, content: &str| ChatMessage::text(role, content.into());
    vec![m(Role::System, "Be brief."), m(Role::User, "What is 6*7?")]
}

pub(super) fn adapter(api: Api) -> ProviderAdapter {
    ProviderAdapter {
        api,
        auth: Auth::Headers {
            headers: [("x-api-key".to_string(), "K".to_string())].into(),
        },
        max_tokens_field: MaxTokensField::MaxCompletionTokens,
        ..ProviderAdapter::open("p", "http://127.0.0.1:9/v1", "m")
    }
}

#[test]
fn bodies_are_exact_per_dialect() {
    let contract = RequestContract::reference(20_000);
    let body = |api| build_body(&adapter(api), &contract, &messages(), None).to_string();
    assert_eq!(
        body(Api::AnthropicMessages),
        format!(
            r#"{{"model":"m","max_tokens":{},"messages":[{{"role":"user","content":"What is 6*7?"}}],"system":"Be brief.\n\n{JSON_OBJECT_INSTRUCTION}","temperature":{:?},"top_p":{:?},"stream":true}}"#,
            contract.max_output_tokens, contract.temperature, contract.top_p
        )
    );
    let responses: Value = serde_json::from_str(&body(Api::OpenaiResponses)).unwrap();
    assert_eq!(responses["instructions"], json!("Be brief."));
    assert_eq!(
        responses["input"],
        json!([{"role": "user", "content": "What is 6*7?"}])
    );
    assert_eq!(
        responses["text"],
        json!({"format": {"type": "json_object"}})
    );
    assert_eq!(
        responses["max_output_tokens"],
        json!(contract.max_output_tokens)
    );
    assert!(responses.get("messages").is_none());
    let completions: Value = serde_json::from_str(&body(Api::OpenaiCompletions)).unwrap();
    assert_eq!(
        completions["prompt"],
        json!(format!(
            "Be brief.\n\n{JSON_OBJECT_INSTRUCTION}\n\nUser: What is 6*7?\n\nAssistant:"
        ))
    );
    assert_eq!(
        completions["max_completion_tokens"],
        json!(contract.max_output_tokens)
    );
    // A request's own length goes into each dialect's ceiling field; ignore_eos only where
    // the servers that honour it listen.
    let output = OutputLength {
        max_tokens: 9,
        ignore_eos: true,
    };
    let held = build_body(
        &adapter(Api::OpenaiResponses),
        &contract,
        &messages(),
        Some(&output),
    );
    assert_eq!(held["max_output_tokens"], json!(9));
    assert!(held.get("ignore_eos").is_none());
    let held = build_body(
        &adapter(Api::OpenaiCompletions),
        &contract,
        &messages(),
        Some(&output),
    );
    assert_eq!(held["max_completion_tokens"], json!(9));
    assert_eq!(held["ignore_eos"], json!(true));
}

#[test]
fn anthropic_headers_carry_the_version_and_the_key_as_sensitive() {
    let credentials = Credentials::from_pairs([("K", "sk-ant-secret")]);
    let headers =
        crate::body::build_headers(&adapter(Api::AnthropicMessages), &credentials).unwrap();
    assert_eq!(headers["anthropic-version"], anthropic::VERSION);
    assert!(headers["x-api-key"].is_sensitive());
    assert!(headers.get("authorization").is_none());
    let chat = crate::body::build_headers(&adapter(Api::OpenaiChat), &credentials).unwrap();
    assert!(chat.get("anthropic-version").is_none());
}
