//! The probe server over real gRPC on loopback: Describe, a session, Execute round trip against
//! the raw test server, a provider the session did not open, busy provider, and a cancelled call
//! that never cuts a measurement.
//! The provider's answer waits at a gate the test opens, so "busy" and "cancelled while
//! running" are states the test holds, not moments it hopes to hit with a sleep.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::record::{Execution, Outcome};
use openbench_probe::client::{ClientSecurity, connect};
use openbench_probe::server::{ProbeConfig, serve_on};
use openbench_proto::v1::{DescribeRequest, ExecuteRequest};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::session::{execute_call, open, planned_in, probe_config, session};
use support::*;
use tokio::sync::Semaphore;

/// A stream whose answer waits for a permit of `gate`, then `gap_ms` more.
fn stream(gate: &Arc<Semaphore>, gap_ms: u64) -> Vec<Step> {
    vec![
        sse_head(),
        data(r#"{"model":"zai-org/GLM-5.3-Flash","choices":[{"delta":{"role":"assistant"}}]}"#),
        Step::Gate(gate.clone()),
        Step::Sleep(gap_ms),
        data(
            r#"{"model":"zai-org/GLM-5.3-Flash","choices":[{"delta":{"content":"{\"ok\": true}"},"finish_reason":"stop"}]}"#,
        ),
        chunk("data: [DONE]\n\n"),
        Step::End,
    ]
}

/// The session every call of this test names (set once it is open).
static SESSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn call(provider: &str, deadline_ms: u64) -> ExecuteRequest {
    let id = SESSION.get().map(String::as_str).unwrap_or_default();
    execute_call(&planned_in(provider, "eu-west", deadline_ms), id)
}

#[tokio::test]
async fn execute_describe_unknown_busy_and_cancelled() {
    let gate = Arc::new(Semaphore::new(0));
    let server = start(stream(&gate, 300)).await;
    let providers = vec![adapter("together", &server.endpoint())];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let handle = serve_on(
        listener,
        ProbeConfig {
            code_digest: "code-digest-1".into(),
            ..probe_config("eu-west", &server.endpoint())
        },
    )
    .await
    .unwrap();
    let url = format!("http://{}", handle.addr());
    let mut client = connect(&url, &ClientSecurity::default()).await.unwrap();

    // Describe: the build, the machine (hashed) and the clock; no providers before a session.
    let d = client
        .describe(DescribeRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(d.version, openbench_common::VERSION);
    assert_eq!(d.region, "eu-west");
    assert_eq!(d.providers, Vec::<String>::new());
    let identity = d.identity.unwrap();
    assert_eq!(identity.code_digest, "code-digest-1");
    assert_eq!(
        identity.tokenizer_sha256,
        openbench_common::tokenizer::O200K_BASE_RANKS_SHA256
    );
    assert_eq!(identity.version, openbench_common::VERSION);
    assert_eq!(identity.host_fingerprint.len(), 64);
    assert!(
        identity.clock_source.starts_with("monotonic"),
        "{}",
        identity.clock_source
    );
    assert_eq!(
        identity.probe_id,
        format!("eu-west@{}", &identity.host_fingerprint[..12])
    );
    assert_eq!(
        d.lock_hashes.get("code").map(String::as_str),
        Some("code-digest-1")
    );

    // The session opens the provider; Describe then lists it.
    let id = open(&mut client, &session("eu-west", providers, 20_000))
        .await
        .unwrap();
    assert!(id.starts_with("s-"), "{id}");
    SESSION.set(id).unwrap();
    let d = client
        .describe(DescribeRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(d.providers, vec!["together".to_string()]);

    // Execute round trip: the answer comes at least 300 ms after the request, and within the
    // call as the test timed it.
    gate.add_permits(1);
    let before = Instant::now();
    let reply = client
        .execute(call("together", 5_000))
        .await
        .unwrap()
        .into_inner();
    let elapsed_ms = before.elapsed().as_nanos() as f64 / 1e6;
    let e: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(e.record.outcome, Outcome::Completed);
    assert_eq!(e.record.answer_text, "{\"ok\": true}");
    let ttfa = e.record.ttfa_ms.unwrap();
    assert!(
        (300.0..=elapsed_ms).contains(&ttfa),
        "{ttfa} of {elapsed_ms} ms"
    );
    assert_eq!(e.record.request_id, "req-1");
    assert_eq!(
        e.record.probe_id.as_deref(),
        Some(identity.probe_id.as_str())
    );
    assert!(!reply.execution_json.contains(SECRET));

    // A provider the session did not open: refused, naming it and what the session opened.
    let err = client.execute(call("fireworks", 5_000)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::PermissionDenied);
    assert_eq!(
        err.message(),
        format!(
            "request req-1: provider \"fireworks\" was not opened by session {} in region \
             eu-west (it opened: together)",
            SESSION.get().unwrap()
        )
    );

    // A deadline above the spec's bound is refused before anything is sent.
    let err = client.execute(call("together", 600_001)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(
        err.message().contains("deadline_ms 600001 is above 600000"),
        "{}",
        err.message()
    );

    // Busy: a second call while the first runs (held at the gate) is refused.
    let mut first_client = client.clone();
    let first = tokio::spawn(async move { first_client.execute(call("together", 5_000)).await });
    server.wait_for_requests(2).await;
    let err = client.execute(call("together", 5_000)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition);
    assert!(err.message().contains("together"), "{}", err.message());
    gate.add_permits(1);
    let first = first.await.unwrap().unwrap().into_inner();
    let e: Execution = serde_json::from_str(&first.execution_json).unwrap();
    assert_eq!(e.record.outcome, Outcome::Completed);

    // A cancelled call is cancelled on the probe too: its request ends (its upstream connection
    // dropped) and frees the provider, so a next call is admitted and reaches the provider while
    // the gate is still shut (before, the orphan held the lane until its stream ended).
    let mut cancelled_client = client.clone();
    tokio::select! {
        reply = cancelled_client.execute(call("together", 5_000)) => {
            panic!("the call ended while its answer was held at the gate: {reply:?}")
        }
        () = server.wait_for_requests(3) => {}
    }
    admitted_while_gate_shut(&mut client, &server, 4).await;
    gate.add_permits(3);
    assert_eq!(server.received().len(), 4);

    handle.shutdown().await.unwrap();
}

/// Calls until one is admitted: its request is the `n`-th the provider receives (a `busy`
/// refusal is retried for 2 s, well under the calls' 5 s deadline: the cancel of an earlier call travels asynchronously).
async fn admitted_while_gate_shut(
    client: &mut openbench_proto::v1::probe_client::ProbeClient<
        openbench_probe::client::ProbeChannel,
    >,
    server: &RawServer,
    n: usize,
) {
    let waited = Instant::now();
    loop {
        tokio::select! {
            reply = client.execute(call("together", 5_000)) => {
                let err = reply.expect_err("answered while the gate was shut");
                assert_eq!(err.code(), tonic::Code::FailedPrecondition, "{err}");
                assert!(
                    waited.elapsed() < Duration::from_secs(2),
                    "the provider stayed busy: {}",
                    err.message()
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            () = server.wait_for_requests(n) => return,
        }
    }
}
