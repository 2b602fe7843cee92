//! Timed release over real gRPC on loopback: an `Execute` carrying `release_at_unix_us` is held
//! by the probe until its own wall clock reads that time, then sent; the record says how late.
//! Bounds asserted are causal (never sent before the release), not timings that depend on load.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::clock::{rfc3339_unix_micros, unix_micros};
use openbench_common::record::{Execution, Outcome};
use openbench_probe::client::ProbeChannel;
use openbench_probe::client::{ClientSecurity, connect};
use openbench_probe::server::serve_on;
use openbench_proto::v1::ExecuteRequest;
use openbench_proto::v1::probe_client::ProbeClient;
use std::time::{Duration, SystemTime};
use support::session::{execute_call, open, planned_in, probe_config, session};
use support::*;

fn answer() -> Vec<Step> {
    vec![
        sse_head(),
        data(r#"{"model":"m","choices":[{"delta":{"content":"{}"},"finish_reason":"stop"}]}"#),
        chunk("data: [DONE]\n\n"),
        Step::End,
    ]
}

/// The probe's answer to `call`, as the execution it carries.
async fn executed(client: &mut ProbeClient<ProbeChannel>, call: ExecuteRequest) -> Execution {
    let reply = client.execute(call).await.unwrap().into_inner();
    serde_json::from_str(&reply.execution_json).unwrap()
}

#[tokio::test]
async fn a_release_is_held_until_its_time_on_the_probe_clock_and_its_lag_recorded() {
    let server = start(answer()).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let handle = serve_on(listener, probe_config("eu-west", &server.endpoint()))
        .await
        .unwrap();
    let url = format!("http://{}", handle.addr());
    let mut client = connect(&url, &ClientSecurity::default()).await.unwrap();
    let providers = vec![adapter("together", &server.endpoint())];
    let id = open(&mut client, &session("eu-west", providers, 20_000))
        .await
        .unwrap();

    // Released 400 ms after the call leaves: the upstream sees nothing before that instant.
    let release = SystemTime::now() + Duration::from_millis(400);
    let mut call = execute_call(&planned_in("together", "eu-west", 5_000), &id);
    call.release_at_unix_us = unix_micros(release);
    let e = executed(&mut client, call).await;
    assert_eq!(e.record.outcome, Outcome::Completed);
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert!(
        received[0].arrived_at >= release,
        "the request reached the upstream {:?} before its release",
        release
            .duration_since(received[0].arrived_at)
            .unwrap_or_default()
    );
    let started_us = rfc3339_unix_micros(&e.record.started_at).unwrap();
    assert!(
        started_us >= unix_micros(release),
        "the clock started before the release"
    );
    let lag = e.record.send_lag_ms.unwrap();
    assert!(lag >= 0.0, "{lag}");

    // Without a release time: sent at once, and no lag is claimed.
    let e = executed(
        &mut client,
        execute_call(&planned_in("together", "eu-west", 5_000), &id),
    )
    .await;
    assert_eq!(e.record.outcome, Outcome::Completed);
    assert_eq!(e.record.send_lag_ms, None);

    // A release more than 60 s ahead of the probe's clock is refused, never held.
    let mut call = execute_call(&planned_in("together", "eu-west", 5_000), &id);
    call.release_at_unix_us = unix_micros(SystemTime::now() + Duration::from_secs(3_600));
    let err = client.execute(call).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(
        err.message().contains("release_at_unix_us is 3")
            && err
                .message()
                .ends_with("s ahead of this probe's clock; at most 60 s"),
        "{}",
        err.message()
    );
    assert_eq!(
        server.received().len(),
        2,
        "the refused call reached the upstream"
    );
}
