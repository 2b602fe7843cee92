//! The probe server over real gRPC on loopback: Execute round trip against the raw test server,
//! Describe, unknown provider, busy provider, and a cancelled call that never cuts a measurement.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::hash::{canonical_json, sha256_hex};
use openbench_common::record::{Execution, Outcome};
use openbench_probe::Credentials;
use openbench_probe::server::{ProbeConfig, parse_traceparent, serve_on};
use openbench_proto::v1::probe_client::ProbeClient;
use openbench_proto::v1::{DescribeRequest, ExecuteRequest};
use std::time::Duration;
use support::*;

fn stream(gap_ms: u64) -> Vec<Step> {
    vec![
        sse_head(),
        data(r#"{"model":"zai-org/GLM-5.3-Flash","choices":[{"delta":{"role":"assistant"}}]}"#),
        Step::Sleep(gap_ms),
        data(
            r#"{"model":"zai-org/GLM-5.3-Flash","choices":[{"delta":{"content":"{\"ok\": true}"},"finish_reason":"stop"}]}"#,
        ),
        chunk("data: [DONE]\n\n"),
        Step::End,
    ]
}

fn call(provider: &str, deadline_ms: u64) -> ExecuteRequest {
    let planned = planned(provider, deadline_ms);
    ExecuteRequest {
        planned_request_json: serde_json::to_string(&planned).unwrap(),
        trace_context: [(
            "traceparent".to_string(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_string(),
        )]
        .into_iter()
        .collect(),
    }
}

#[tokio::test]
async fn execute_describe_unknown_busy_and_cancelled() {
    let server = start(stream(300)).await;
    let providers = vec![adapter("together", &server.endpoint())];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let handle = serve_on(
        listener,
        ProbeConfig {
            region: "eu-west".into(),
            contract: contract(20_000),
            providers: providers.clone(),
            credentials: Credentials::from_pairs([("TEST_KEY", SECRET)]),
            code_digest: "code-digest-1".into(),
        },
    )
    .await
    .unwrap();
    let mut client = ProbeClient::connect(format!("http://{}", handle.addr()))
        .await
        .unwrap();

    // Describe.
    let d = client
        .describe(DescribeRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(d.version, openbench_common::VERSION);
    assert_eq!(d.region, "eu-west");
    assert_eq!(d.providers, vec!["together".to_string()]);
    let adapters = sha256_hex(canonical_json(&serde_json::to_value(&providers).unwrap()));
    assert_eq!(d.lock_hashes.get("adapters"), Some(&adapters));
    assert_eq!(
        d.lock_hashes.get("code").map(String::as_str),
        Some("code-digest-1")
    );
    assert_eq!(
        d.lock_hashes.get("tokenizer").map(String::as_str),
        Some(openbench_common::tokenizer::O200K_BASE_RANKS_SHA256)
    );

    // Execute round trip.
    let reply = client
        .execute(call("together", 5_000))
        .await
        .unwrap()
        .into_inner();
    let e: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(e.record.outcome, Outcome::Completed);
    assert_eq!(e.record.answer_text, "{\"ok\": true}");
    assert!(
        e.record
            .ttfa_ms
            .is_some_and(|t| (300.0..330.0).contains(&t))
    );
    assert_eq!(e.record.request_id, "req-1");
    assert!(!reply.execution_json.contains(SECRET));

    // Unknown provider: an error naming it.
    let err = client.execute(call("fireworks", 5_000)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound);
    assert!(err.message().contains("\"fireworks\""), "{}", err.message());
    assert!(err.message().contains("together"), "{}", err.message());

    // A deadline above the spec's bound is refused before anything is sent.
    let err = client.execute(call("together", 600_001)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(
        err.message().contains("deadline_ms 600001 is above 600000"),
        "{}",
        err.message()
    );

    // Busy: a second call while the first runs is refused.
    let mut first_client = client.clone();
    let first = tokio::spawn(async move { first_client.execute(call("together", 5_000)).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let err = client.execute(call("together", 5_000)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition);
    assert!(err.message().contains("together"), "{}", err.message());
    let first = first.await.unwrap().unwrap().into_inner();
    let e: Execution = serde_json::from_str(&first.execution_json).unwrap();
    assert_eq!(e.record.outcome, Outcome::Completed);

    // A cancelled call does not cut the measurement: the provider stays busy until the stream
    // would have ended, then is free again.
    let mut cancelled_client = client.clone();
    let cancelled = tokio::time::timeout(
        Duration::from_millis(100),
        cancelled_client.execute(call("together", 5_000)),
    )
    .await;
    assert!(cancelled.is_err(), "the call should have been cancelled");
    let err = client.execute(call("together", 5_000)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let reply = client
        .execute(call("together", 5_000))
        .await
        .unwrap()
        .into_inner();
    let e: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(e.record.outcome, Outcome::Completed);
    // Every measured request reached the server, the cancelled one included.
    assert_eq!(server.received().len(), 4);

    handle.shutdown().await.unwrap();
}

#[test]
fn traceparent_parsing() {
    let sc = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
    assert_eq!(
        sc.trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
    assert!(sc.is_sampled() && sc.is_remote());
    assert!(parse_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none());
    assert!(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7").is_none());
    assert!(parse_traceparent("zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").is_none());
}
