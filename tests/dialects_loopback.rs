#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Every API dialect through the real probe executor against the embedded simulator over
//! loopback: the same request draws the same answer in every dialect, and each dialect's
//! failures (Anthropic's `overloaded_error` event, Responses' `response.failed`) end as their
//! class; Anthropic's `ping` events are kept as keep-alives.

mod sim_support;

use openbench_common::limits::StreamLimits;
use openbench_common::record::{Classification, ErrorType, Execution, Outcome};
use openbench_common::request::{ChatMessage, Role};
use openbench_common::spec::Api;
use sim_support::SimCall;

async fn run(api: Api, quirks: &str) -> Execution {
    sim_support::execute(SimCall {
        api,
        run_id: "run-dialects",
        profile: "plain",
        time_scale: 0.05,
        model: "m",
        quirks,
        deadline_ms: 5_000,
        bearer: Some("sk-dialect-0123456789"),
        limits: StreamLimits::default(),
        messages: vec![
            ChatMessage::text(Role::System, "Answer in JSON.".into()),
            ChatMessage::text(Role::User, "What is the answer?".into()),
        ],
    })
    .await
}

#[tokio::test]
async fn every_dialect_completes_with_the_same_seeded_answer() {
    let chat = run(Api::OpenaiChat, "").await.record;
    assert_eq!(chat.outcome, Outcome::Completed, "{:?}", chat.error_message);
    assert!(!chat.answer_text.is_empty());
    for api in [
        Api::AnthropicMessages,
        Api::OpenaiResponses,
        Api::OpenaiCompletions,
    ] {
        let r = run(api, "").await.record;
        assert_eq!(
            r.outcome,
            Outcome::Completed,
            "{api}: {:?}",
            r.error_message
        );
        assert_eq!(r.answer_text, chat.answer_text, "{api}");
        assert_eq!(r.finish_reason.as_deref(), Some("stop"), "{api}");
        assert_eq!(r.response_model.as_deref(), Some("m"), "{api}");
        assert!(
            r.ttfo_ms.is_some() && r.ttfa_ms.is_some() && r.e2e_ms.is_some(),
            "{api}"
        );
    }
}

#[tokio::test]
async fn an_overload_mid_stream_ends_as_each_dialects_class() {
    let expected = [
        (Api::OpenaiChat, ErrorType::StreamError),
        (Api::AnthropicMessages, ErrorType::Http5xx),
        (Api::OpenaiResponses, ErrorType::Http5xx),
        (Api::OpenaiCompletions, ErrorType::StreamError),
    ];
    for (api, error_type) in expected {
        let r = run(api, "overloaded-error").await.record;
        assert_eq!(r.outcome, Outcome::StreamError, "{api}");
        assert_eq!(
            r.error_type,
            Some(error_type),
            "{api}: {:?}",
            r.error_message
        );
        assert!(r.ttfa_ms.is_some() && r.e2e_ms.is_none(), "{api}");
        let message = r.error_message.unwrap();
        assert!(
            message.to_lowercase().contains("overloaded"),
            "{api}: {message}"
        );
    }
}

#[tokio::test]
async fn response_failed_is_a_server_class_stream_error() {
    let r = run(Api::OpenaiResponses, "response-failed").await.record;
    assert_eq!(
        (r.outcome, r.error_type),
        (Outcome::StreamError, Some(ErrorType::Http5xx))
    );
    assert_eq!(
        r.error_message.as_deref(),
        Some("upstream model failure (simulated)")
    );
}

#[tokio::test]
async fn anthropic_pings_are_keep_alives_and_message_stop_ends_the_stream() {
    let e = run(Api::AnthropicMessages, "keep-alive").await;
    assert_eq!(e.record.outcome, Outcome::Completed);
    let pings: Vec<_> = e
        .events
        .iter()
        .filter(|ev| ev.event.as_deref() == Some("ping"))
        .collect();
    // One after message_start, then one before each drafted event.
    assert!(pings.len() >= 2, "{:?}", e.events);
    assert!(
        pings
            .iter()
            .all(|p| p.classification == Classification::Comment)
    );
    let last = e.events.last().unwrap();
    assert_eq!(
        (last.event.as_deref(), last.classification),
        (Some("message_stop"), Classification::Done)
    );
}

#[tokio::test]
async fn ping_events_in_a_chat_stream_count_for_nothing() {
    let plain = run(Api::OpenaiChat, "").await.record;
    let e = run(Api::OpenaiChat, "ping").await;
    assert_eq!(e.record.outcome, Outcome::Completed);
    assert_eq!(e.record.answer_text, plain.answer_text);
    let pings = e
        .events
        .iter()
        .filter(|ev| ev.event.as_deref() == Some("ping"));
    assert!(pings.clone().count() >= 2);
    assert!(
        pings
            .into_iter()
            .all(|p| p.classification == Classification::Metadata)
    );
}

#[tokio::test]
async fn http_errors_keep_their_status_class_in_every_dialect() {
    for api in Api::ALL {
        let r = run(api, "http-429").await.record;
        assert_eq!(
            (r.outcome, r.error_type, r.http_status),
            (Outcome::HttpError, Some(ErrorType::Http429), Some(429)),
            "{api}"
        );
    }
}

#[tokio::test]
async fn probe_once_speaks_every_dialect() {
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
    let mut answers = Vec::new();
    for api in Api::ALL {
        let base = sim.base_url();
        let args = [
            "probe",
            "once",
            "--api",
            api.as_str(),
            "--base-url",
            &base,
            "--model",
            "m",
            "--user",
            "hello",
            "--json",
        ];
        let bin = env!("CARGO_BIN_EXE_openbench-inference");
        let o = tokio::process::Command::new(bin)
            .args(args)
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{api}: {stdout}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let out: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(out["outcome"], "completed", "{api}: {out}");
        answers.push(out["answer_text"].as_str().unwrap().to_string());
    }
    assert!(
        answers.iter().all(|a| *a == answers[0] && !a.is_empty()),
        "{answers:?}"
    );
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_openbench-inference"))
        .args([
            "probe",
            "once",
            "--api",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ])
        .args(["--model", "m", "--user", "u"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("unknown API dialect \"openai\""),
        "{stderr}"
    );
}
