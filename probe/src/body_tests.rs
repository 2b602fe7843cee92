use super::*;
use crate::dialect::apply_output;
use openbench_common::request::OutputLength;
use openbench_common::request::Role;
use openbench_common::spec::MaxTokensField;

fn contract() -> RequestContract {
    RequestContract::reference(20_000)
}

fn messages() -> Vec<ChatMessage> {
    vec![
        ChatMessage::text(Role::System, "S".into()),
        ChatMessage::text(Role::User, "U".into()),
    ]
}

fn adapter(key: &str, model: &str, auth: Auth, field: MaxTokensField) -> ProviderAdapter {
    ProviderAdapter {
        auth,
        max_tokens_field: field,
        ..ProviderAdapter::open(key, "https://example.invalid/v1/chat/completions", model)
    }
}

const MSGS: &str = r#""messages":[{"role":"system","content":"S"},{"role":"user","content":"U"}]"#;
const SAMPLING: &str =
    r#""stream":true,"temperature":0.0,"top_p":1.0,"presence_penalty":0.0,"frequency_penalty":0.0"#;

#[test]
fn zai_body_has_thinking_and_max_tokens() {
    let mut a = adapter(
        "zai",
        "glm-5.3-flash",
        Auth::Bearer {
            env: "ZAI_API_KEY".into(),
        },
        MaxTokensField::MaxTokens,
    );
    a.extra_body
        .insert("thinking".into(), serde_json::json!({"type": "enabled"}));
    let body = build_body(&a, &contract(), &messages()).to_string();
    assert_eq!(
        body,
        format!(
            r#"{{"model":"glm-5.3-flash",{MSGS},{SAMPLING},"max_tokens":256,"response_format":{{"type":"json_object"}},"reasoning_effort":"low","thinking":{{"type":"enabled"}}}}"#
        )
    );
    assert!(!body.contains("\"stop\"") && !body.contains("\"seed\""));
}

#[test]
fn fireworks_body_uses_max_completion_tokens() {
    let a = adapter(
        "fireworks",
        "accounts/fireworks/models/glm-5p3-flash",
        Auth::None,
        MaxTokensField::MaxCompletionTokens,
    );
    assert_eq!(
        build_body(&a, &contract(), &messages()).to_string(),
        format!(
            r#"{{"model":"accounts/fireworks/models/glm-5p3-flash",{MSGS},{SAMPLING},"max_completion_tokens":256,"response_format":{{"type":"json_object"}},"reasoning_effort":"low"}}"#
        )
    );
}

#[test]
fn baseten_body_has_top_k_and_include_usage_and_empty_effort_is_omitted() {
    let mut a = adapter(
        "baseten",
        "zai-org/GLM-5.3-Flash",
        Auth::None,
        MaxTokensField::MaxTokens,
    );
    a.include_usage = true;
    a.extra_body.insert("top_k".into(), serde_json::json!(-1));
    let mut c = contract();
    c.reasoning_effort = String::new();
    assert_eq!(
        build_body(&a, &c, &messages()).to_string(),
        format!(
            r#"{{"model":"zai-org/GLM-5.3-Flash",{MSGS},{SAMPLING},"max_tokens":256,"response_format":{{"type":"json_object"}},"stream_options":{{"include_usage":true}},"top_k":-1}}"#
        )
    );
}

#[test]
fn bearer_headers() {
    let a = adapter(
        "zai",
        "m",
        Auth::Bearer {
            env: "ZAI_API_KEY".into(),
        },
        MaxTokensField::MaxTokens,
    );
    let creds = Credentials::from_pairs([("ZAI_API_KEY", "sk-zai")]);
    let h = build_headers(&a, &creds).unwrap();
    assert_eq!(h.get("authorization").unwrap(), "Bearer sk-zai");
    assert!(h.get("authorization").unwrap().is_sensitive());
    assert_eq!(h.get("accept").unwrap(), "text/event-stream");
    assert_eq!(h.get("content-type").unwrap(), "application/json");
    assert_eq!(h.len(), 3);
    // A missing credential names the variable, never a value.
    let err = build_headers(&a, &Credentials::empty())
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "provider zai: auth: credential variable ZAI_API_KEY is not set"
    );
}

#[test]
fn modal_custom_headers_and_extra_headers() {
    let mut a = adapter(
        "modal",
        "zai-org/GLM-5.3-Flash",
        Auth::Headers {
            headers: [
                ("Modal-Key".to_string(), "MODAL_PROXY_TOKEN_ID".to_string()),
                (
                    "Modal-Secret".to_string(),
                    "MODAL_PROXY_TOKEN_SECRET".to_string(),
                ),
            ]
            .into_iter()
            .collect(),
        },
        MaxTokensField::MaxCompletionTokens,
    );
    a.extra_headers
        .insert("X-Client".into(), "openbench".into());
    let creds = Credentials::from_pairs([
        ("MODAL_PROXY_TOKEN_ID", "wk-id"),
        ("MODAL_PROXY_TOKEN_SECRET", "ws-secret"),
    ]);
    let h = build_headers(&a, &creds).unwrap();
    assert_eq!(h.get("modal-key").unwrap(), "wk-id");
    assert_eq!(h.get("modal-secret").unwrap(), "ws-secret");
    assert!(h.get("modal-secret").unwrap().is_sensitive());
    assert_eq!(h.get("x-client").unwrap(), "openbench");
    assert!(h.get("authorization").is_none());
    assert_eq!(h.len(), 5);
    let err = build_headers(
        &a,
        &Credentials::from_pairs([("MODAL_PROXY_TOKEN_ID", "x")]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("MODAL_PROXY_TOKEN_SECRET") && !err.contains("wk-id"),
        "{err}"
    );
}

#[test]
fn a_request_output_length_replaces_the_ceiling_and_adds_ignore_eos_only_when_asked() {
    let a = adapter("vllm", "m", Auth::None, MaxTokensField::MaxCompletionTokens);
    let plain = build_body(&a, &contract(), &messages());
    let mut same = plain.clone();
    apply_output(&mut same, &a, None);
    assert_eq!(same, plain, "no output setting: the body keeps its bytes");
    let mut held = plain.clone();
    let output = OutputLength {
        max_tokens: 32,
        ignore_eos: true,
    };
    apply_output(&mut held, &a, Some(&output));
    assert_eq!(held["max_completion_tokens"], serde_json::json!(32));
    assert_eq!(held["ignore_eos"], serde_json::json!(true));
    let mut ceiling = plain;
    let output = OutputLength {
        max_tokens: 7,
        ignore_eos: false,
    };
    apply_output(&mut ceiling, &a, Some(&output));
    assert_eq!(ceiling["max_completion_tokens"], serde_json::json!(7));
    assert!(ceiling.get("ignore_eos").is_none());
}
