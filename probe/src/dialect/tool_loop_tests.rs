//! A tool loop's messages and several offered tools, rendered per dialect and compared with the
//! recorded formats in probe/tests/fixtures/tool_loop (written by hand from each API's
//! reference: chat `tool_calls` + role `tool`, Responses `function_call` /
//! `function_call_output` items, Anthropic `tool_use` / `tool_result` blocks); legacy
//! completions refuse them.

use crate::dialect::build_body;
use crate::dialect::tests::adapter;
use crate::dialect::tools::{NoTools, check_messages, offer_all};
use openbench_common::request::{ChatMessage, Role};
use openbench_common::spec::{Api, RequestContract};
use openbench_common::tool::{ToolCall, ToolChoice, ToolOffer};
use serde_json::{Value, json};

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

/// A two-step loop: one call and its result, then text with two calls and their results.
fn messages() -> Vec<ChatMessage> {
    vec![
        ChatMessage::text(Role::System, "Use the tools.".into()),
        ChatMessage::text(Role::User, "Who organised meeting mtg-0001?".into()),
        ChatMessage::assistant_calls(
            "",
            vec![call("call_a", "lookup_meeting", r#"{"id":"mtg-0001"}"#)],
        ),
        ChatMessage::tool_result("call_a", r#"{"organizer":"Frances Allen"}"#),
        ChatMessage::assistant_calls(
            "Now the ticket.",
            vec![
                call("call_b", "get_ticket", r#"{"id":"tkt-0007"}"#),
                call("call_c", "get_ticket", r#"{"id":"tkt-0008"}"#),
            ],
        ),
        ChatMessage::tool_result("call_b", r#"{"owner":"Barbara Liskov"}"#),
        ChatMessage::tool_result("call_c", r#"{"owner":"Alan Turing"}"#),
    ]
}

fn tools() -> Vec<ToolOffer> {
    let offer = |name: &str, what: &str| ToolOffer {
        name: name.into(),
        description: format!("Look up a {what}."),
        parameters: json!({"type": "object", "properties": {"id": {"type": "string"}},
            "required": ["id"]}),
        choice: ToolChoice::Auto,
    };
    vec![
        offer("lookup_meeting", "meeting"),
        offer("get_ticket", "ticket"),
    ]
}

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/tool_loop/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn a_tool_loop_renders_as_each_api_takes_it() {
    let mut contract = RequestContract::reference(20_000);
    contract.response_format = String::new();
    let offered = tools();
    let offered: Vec<&ToolOffer> = offered.iter().collect();
    for (api, name) in [
        (Api::OpenaiChat, "chat.json"),
        (Api::OpenaiResponses, "responses.json"),
        (Api::AnthropicMessages, "anthropic.json"),
    ] {
        let mut body = build_body(&adapter(api), &contract, &messages(), None);
        assert_eq!(check_messages(api, &messages()), Ok(()));
        offer_all(&mut body, api, &offered).unwrap_or_else(|e| panic!("{e}"));
        let expected = fixture(name);
        let Some(fields) = expected.as_object() else {
            panic!("{name}: not an object");
        };
        for (field, value) in fields {
            assert_eq!(&body[field], value, "{name}: field {field}");
        }
    }
}

#[test]
fn text_messages_keep_their_bytes_and_completions_refuse_a_loop() {
    let contract = RequestContract::reference(20_000);
    let text = vec![ChatMessage::text(Role::User, "hi".into())];
    let body = build_body(&adapter(Api::OpenaiChat), &contract, &text, None);
    assert_eq!(
        body["messages"].to_string(),
        r#"[{"role":"user","content":"hi"}]"#
    );
    assert_eq!(
        check_messages(Api::OpenaiCompletions, &messages()),
        Err(NoTools {
            api: Api::OpenaiCompletions,
            tool: "tool call".into()
        })
    );
    assert_eq!(check_messages(Api::OpenaiCompletions, &text), Ok(()));
    let offered = tools();
    let mut body = json!({});
    assert!(offer_all(&mut body, Api::OpenaiCompletions, &[&offered[0]]).is_err());
    // No tools: the body is left as it was.
    assert_eq!(offer_all(&mut body, Api::OpenaiChat, &[]), Ok(()));
    assert_eq!(body, json!({}));
}
