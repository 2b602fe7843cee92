//! The probe served in this process (`serve_in_process`) and called through the coordinator's
//! in-process channel hands each execution back in memory, not as JSON; the same request to the
//! same probe served on loopback gRPC comes back as JSON that decodes to the same record.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::record::{Execution, Outcome};
use openbench_probe::client::{ClientSecurity, connect};
use openbench_probe::server::{serve_in_process, serve_on};
use openbench_proto::link::{InMemoryExecution, in_process_channel, probe_client};
use openbench_proto::v1::ExecuteResponse;
use support::session::{execute_call, open, planned_in, probe_config, session};
use support::*;

/// A two-event answer and its end.
fn stream() -> Vec<Step> {
    vec![
        sse_head(),
        data(r#"{"model":"zai-org/GLM-5.3-Flash","choices":[{"delta":{"content":"{\"ok\""}}]}"#),
        data(
            r#"{"model":"zai-org/GLM-5.3-Flash","choices":[{"delta":{"content":": true}"},"finish_reason":"stop"}]}"#,
        ),
        chunk("data: [DONE]\n\n"),
        Step::End,
    ]
}

/// The record with its measured times and the probe's host-derived id left out.
fn unmeasured(execution: &Execution) -> serde_json::Value {
    let mut value = serde_json::to_value(execution).unwrap();
    let record = value["record"].as_object_mut().unwrap();
    record.retain(|k, _| {
        !k.ends_with("_ms") && !matches!(k.as_str(), "started_at" | "output_tokens_per_second")
    });
    for event in value["events"].as_array_mut().unwrap() {
        event.as_object_mut().unwrap().remove("offset_ms");
    }
    value
}

/// One `Execute` of a fresh session on `client`: the response as tonic returns it.
async fn execute(
    client: &mut openbench_proto::v1::probe_client::ProbeClient<
        openbench_proto::link::ProbeChannel,
    >,
    endpoint: &str,
) -> tonic::Response<ExecuteResponse> {
    let providers = vec![adapter("together", endpoint)];
    let id = open(client, &session("eu-west", providers, 20_000))
        .await
        .unwrap();
    let call = execute_call(&planned_in("together", "eu-west", 5_000), &id);
    client.execute(call).await.unwrap()
}

#[tokio::test]
async fn an_in_process_call_gets_the_execution_in_memory_equal_to_the_json() {
    let server = start(stream()).await;
    let endpoint = server.endpoint();

    let local = serve_in_process(probe_config("eu-west", &endpoint))
        .await
        .unwrap();
    let mut client = probe_client(in_process_channel(local.probe()));
    let response = execute(&mut client, &endpoint).await;
    let (_, answer, extensions) = response.into_parts();
    assert_eq!(answer.execution_json, "", "no JSON in memory");
    let handed = extensions.get::<InMemoryExecution>().expect("in memory");
    let in_memory = handed.take().unwrap();
    assert!(handed.take().is_none(), "taken once");
    assert_eq!(in_memory.record.outcome, Outcome::Completed);
    assert_eq!(in_memory.record.answer_text, "{\"ok\": true}");
    assert_eq!(in_memory.events.len(), 3);
    local.shutdown();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let handle = serve_on(listener, probe_config("eu-west", &endpoint))
        .await
        .unwrap();
    let url = format!("http://{}", handle.addr());
    let mut client = connect(&url, &ClientSecurity::default()).await.unwrap();
    let response = execute(&mut client, &endpoint).await;
    assert!(response.extensions().get::<InMemoryExecution>().is_none());
    let over_grpc: Execution = serde_json::from_str(&response.get_ref().execution_json).unwrap();
    assert_eq!(unmeasured(&in_memory), unmeasured(&over_grpc));
}
