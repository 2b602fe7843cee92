//! Sessions over real gRPC on loopback: a probe admits `Execute` only for the session a
//! coordinator opened, for the providers and run it opened and within its contract's deadline;
//! it refuses at session open, naming the provider and the variable (never a value), a
//! credential it lacks or was not allowed to hand out, an endpoint its owner did not allow for
//! that credential (nothing is allowed by default), a simulator endpoint, another region and an invalid adapter. No refused call reaches the
//! provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::record::{Execution, Outcome};
use openbench_common::spec::Auth;
use openbench_probe::client::{ClientSecurity, ProbeChannel, connect};
use openbench_probe::endpoint_policy::EndpointPolicy;
use openbench_probe::server::{ProbeConfig, ProbeServerHandle, serve_on};
use openbench_probe::session_open::{CredentialSource, EndpointRules};
use openbench_proto::v1::probe_client::ProbeClient;
use std::collections::BTreeSet;
use support::session::{execute_call, open, planned_in, probe_config, session};
use support::*;

/// The value of the key only a `.env` file holds.
const DOTENV_SECRET: &str = "sk-dotenv-7c1e55aa";

fn answer() -> Vec<Step> {
    vec![
        sse_head(),
        data(r#"{"model":"m","choices":[{"delta":{"content":"{}"},"finish_reason":"stop"}]}"#),
        chunk("data: [DONE]\n\n"),
        Step::End,
    ]
}

/// Asserts that `call` is refused with `code` and exactly `message`.
async fn refused(
    client: &mut ProbeClient<ProbeChannel>,
    call: openbench_proto::v1::ExecuteRequest,
    code: tonic::Code,
    message: &str,
) {
    let err = client.execute(call).await.unwrap_err();
    assert_eq!((err.code(), err.message()), (code, message));
}

async fn serve(config: ProbeConfig) -> (ProbeServerHandle, ProbeClient<ProbeChannel>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let handle = serve_on(listener, config).await.unwrap();
    let url = format!("http://{}", handle.addr());
    let client = connect(&url, &ClientSecurity::default()).await.unwrap();
    (handle, client)
}

/// A probe of `eu` that may hand out `OBT_DOTENV_KEY` (set in `dotenv_dir/.env` when `with_key`)
/// and `OBT_ABSENT_KEY` (set nowhere).
fn environment_config(dotenv_dir: &std::path::Path, with_key: bool, upstream: &str) -> ProbeConfig {
    let dotenv = dotenv_dir.join(".env");
    if with_key {
        std::fs::write(&dotenv, format!("OBT_DOTENV_KEY={DOTENV_SECRET}\n")).unwrap();
    }
    ProbeConfig {
        credentials: CredentialSource::Environment {
            declared: BTreeSet::from(["OBT_DOTENV_KEY".to_string(), "OBT_ABSENT_KEY".into()]),
            dotenv,
        },
        ..probe_config("eu", upstream)
    }
}

fn keyed(key: &str, endpoint: &str, env: &str) -> openbench_common::spec::ProviderAdapter {
    openbench_common::spec::ProviderAdapter {
        auth: Auth::Bearer { env: env.into() },
        ..adapter(key, endpoint)
    }
}

#[tokio::test]
async fn a_missing_credential_is_refused_at_open_naming_provider_and_variable() {
    let upstream = start(answer()).await;
    let dir = tempfile::tempdir().unwrap();
    let (handle, mut client) =
        serve(environment_config(dir.path(), false, &upstream.endpoint())).await;
    let adapters = vec![
        keyed("together", &upstream.endpoint(), "OBT_DOTENV_KEY"),
        keyed("fireworks", &upstream.endpoint(), "OBT_ABSENT_KEY"),
    ];
    let err = open(&mut client, &session("eu", adapters.clone(), 20_000))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition);
    assert_eq!(
        err.message(),
        "probe in region eu lacks credentials: provider together: credential variable \
         OBT_DOTENV_KEY is not set on this probe (its environment or .env); provider fireworks: \
         credential variable OBT_ABSENT_KEY is not set on this probe (its environment or .env)"
    );
    handle.shutdown().await.unwrap();

    // With the key in `.env`, the provider that needs only it opens and runs; its value goes to
    // the provider and nowhere else.
    let (handle, mut client) =
        serve(environment_config(dir.path(), true, &upstream.endpoint())).await;
    let err = open(&mut client, &session("eu", adapters.clone(), 20_000))
        .await
        .unwrap_err();
    assert!(!err.message().contains(DOTENV_SECRET), "{}", err.message());
    assert!(
        !err.message().contains("OBT_DOTENV_KEY"),
        "{}",
        err.message()
    );
    let id = open(&mut client, &session("eu", adapters[..1].to_vec(), 20_000))
        .await
        .unwrap();
    let reply = client
        .execute(execute_call(&planned_in("together", "eu", 5_000), &id))
        .await
        .unwrap()
        .into_inner();
    let execution: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(execution.record.outcome, Outcome::Completed);
    assert!(!reply.execution_json.contains(DOTENV_SECRET));
    let sent = upstream.received()[0].head.to_lowercase();
    assert!(
        sent.contains(&format!(
            "authorization: bearer {}",
            DOTENV_SECRET.to_lowercase()
        )),
        "{sent}"
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_variable_the_owner_did_not_declare_is_never_read() {
    let upstream = start(answer()).await;
    let dir = tempfile::tempdir().unwrap();
    let (handle, mut client) =
        serve(environment_config(dir.path(), true, &upstream.endpoint())).await;
    // PATH is set in every environment: a token holder must not be able to make the probe send it.
    let adapters = vec![keyed("together", &upstream.endpoint(), "PATH")];
    let err = open(&mut client, &session("eu", adapters, 20_000))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::PermissionDenied);
    assert_eq!(
        err.message(),
        "probe in region eu does not hand out these credentials: provider together: credential \
         variable PATH is not one of its credential variables (the probe owner declares them \
         with --credential)"
    );
    assert_eq!(upstream.received().len(), 0);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_key_goes_only_where_its_owner_allows_and_simulator_endpoints_are_refused() {
    // The owner's provider, and a server of whoever holds the token on another loopback address.
    let upstream = start(answer()).await;
    let attacker = start_at("127.0.0.2", answer()).await;
    let owner_allows = |entries: &[String]| ProbeConfig {
        endpoints: EndpointRules {
            policy: EndpointPolicy::parse(entries).unwrap(),
            ..EndpointRules::default()
        },
        ..probe_config("eu", "https://unused.invalid/")
    };
    // By default (no entry) the key goes nowhere: refused at open, naming provider and endpoint.
    for config in [
        ProbeConfig {
            endpoints: EndpointRules::default(),
            ..probe_config("eu", "https://unused.invalid/")
        },
        owner_allows(&[format!("TEST_KEY={}", upstream.endpoint())]),
        owner_allows(&[format!("OTHER_KEY={}", attacker.endpoint())]),
    ] {
        let (handle, mut client) = serve(config).await;
        let err = open(
            &mut client,
            &session(
                "eu",
                vec![adapter("together", &attacker.endpoint())],
                20_000,
            ),
        )
        .await
        .unwrap_err();
        assert_eq!(err.code(), tonic::Code::PermissionDenied);
        assert_eq!(
            err.message(),
            format!(
                "provider together: endpoint {}: credential TEST_KEY may not be sent there: the \
                 probe owner allows it with --allow-endpoint VAR=URL (plaintext http beyond \
                 loopback only that way)",
                attacker.endpoint()
            )
        );
        handle.shutdown().await.unwrap();
    }
    assert_eq!(attacker.received().len(), 0);

    // Allowed by its owner (for this variable), the same endpoint opens and gets the key.
    let (handle, mut client) = serve(owner_allows(&[format!(
        "TEST_KEY=http://{}/v1/",
        attacker.addr
    )]))
    .await;
    let id = open(
        &mut client,
        &session(
            "eu",
            vec![adapter("together", &attacker.endpoint())],
            20_000,
        ),
    )
    .await
    .unwrap();
    client
        .execute(execute_call(&planned_in("together", "eu", 5_000), &id))
        .await
        .unwrap();
    let sent = attacker.received()[0].head.to_lowercase();
    assert!(sent.contains("authorization: bearer"), "{sent}");
    let err = open(
        &mut client,
        &session("eu", vec![adapter("zai", "sim://zai")], 20_000),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), tonic::Code::PermissionDenied);
    assert_eq!(
        err.message(),
        "provider zai: endpoint sim://zai: the embedded simulator runs beside the coordinator; a \
         remote probe cannot serve it"
    );
    assert_eq!(upstream.received().len(), 0);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn another_region_and_an_invalid_adapter_are_refused() {
    let upstream = start(answer()).await;
    let (handle, mut client) = serve(probe_config("eu", &upstream.endpoint())).await;
    let adapters = vec![adapter("together", &upstream.endpoint())];
    let err = open(&mut client, &session("us", adapters.clone(), 20_000))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition);
    assert_eq!(
        err.message(),
        "this probe serves region eu, the session is for region us"
    );
    let mut hot = adapters[0].clone();
    hot.extra_body
        .insert("temperature".into(), serde_json::json!(1.7));
    let err = open(&mut client, &session("eu", vec![hot], 20_000))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        err.message(),
        "the session is not valid: adapters[0] (together).extra_body.temperature: the contract \
         owns this field"
    );
    let err = open(&mut client, &session("eu", adapters, 600_001))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        err.message(),
        "the session is not valid: request.timeout_ms: 600001 is outside 1..=600000"
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn execute_needs_the_open_session_its_run_and_its_providers() {
    let upstream = start(answer()).await;
    let (handle, mut client) = serve(probe_config("eu", &upstream.endpoint())).await;
    let planned = planned_in("together", "eu", 1_000);

    // No session yet.
    refused(
        &mut client,
        execute_call(&planned, ""),
        tonic::Code::FailedPrecondition,
        "request req-1: no session: the coordinator opens one (OpenSession) before it executes",
    )
    .await;
    refused(
        &mut client,
        execute_call(&planned, "s-made-up"),
        tonic::Code::FailedPrecondition,
        "request req-1: session s-made-up is not open on the probe in region eu",
    )
    .await;

    let both = vec![
        adapter("together", &upstream.endpoint()),
        adapter("fireworks", &upstream.endpoint()),
    ];
    let first = open(&mut client, &session("eu", both, 1_000))
        .await
        .unwrap();
    // Another run's request, in the right session.
    let mut other_run = planned.clone();
    other_run.identity.run_id = "run-2".into();
    refused(
        &mut client,
        execute_call(&other_run, &first),
        tonic::Code::PermissionDenied,
        &format!("request req-1: run \"run-2\" is not the run of session {first}"),
    )
    .await;
    // Over the session's contract (1000 ms).
    refused(
        &mut client,
        execute_call(&planned_in("together", "eu", 1_001), &first),
        tonic::Code::InvalidArgument,
        "request req-1: deadline_ms 1001 exceeds the session's timeout_ms 1000",
    )
    .await;

    // A newer session replaces the first and opens fireworks only.
    let second = open(
        &mut client,
        &session(
            "eu",
            vec![adapter("fireworks", &upstream.endpoint())],
            1_000,
        ),
    )
    .await
    .unwrap();
    assert_ne!(first, second);
    refused(
        &mut client,
        execute_call(&planned, &first),
        tonic::Code::FailedPrecondition,
        &format!("request req-1: session {first} is not open on the probe in region eu"),
    )
    .await;
    refused(
        &mut client,
        execute_call(&planned, &second),
        tonic::Code::PermissionDenied,
        &format!(
            "request req-1: provider \"together\" was not opened by session {second} in region \
             eu (it opened: fireworks)"
        ),
    )
    .await;
    assert_eq!(
        upstream.received().len(),
        0,
        "a refused call reached the provider"
    );
    let reply = client
        .execute(execute_call(&planned_in("fireworks", "eu", 1_000), &second))
        .await
        .unwrap()
        .into_inner();
    let execution: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(execution.record.outcome, Outcome::Completed);
    assert_eq!(upstream.received().len(), 1);
    handle.shutdown().await.unwrap();
}

/// The per-probe bound (`MAX_PROBE_IN_FLIGHT`, docs/faults.md): a session whose lanes ×
/// per-lane bound could hold more than 20,000 requests in flight at once is refused at open,
/// naming the figures; one at exactly the bound is admitted.
#[tokio::test]
async fn a_session_whose_lanes_could_pass_the_probe_bound_is_refused_naming_the_figures() {
    let server = start(answer()).await;
    let (_handle, mut client) = serve(probe_config("eu", &server.endpoint())).await;
    let lanes = |n: usize| -> Vec<_> {
        (0..n)
            .map(|i| adapter(&format!("p{i}"), &server.endpoint()))
            .collect()
    };
    let mut asked = session("eu", lanes(3), 20_000);
    asked.max_in_flight = 10_000;
    let err = open(&mut client, &asked).await.unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (
            tonic::Code::ResourceExhausted,
            "the session asks for 3 lanes × 10000 requests in flight = 30000 on the probe in \
             region eu; a probe holds at most 20000 at once (fewer users or a lower \
             load.max_in_flight, or more regions)"
        )
    );
    assert_eq!(
        openbench_probe::MAX_PROBE_IN_FLIGHT,
        20_000,
        "the documented figure"
    );
    // 2 × 10,000 is the bound itself: admitted.
    asked.adapters = lanes(2);
    let id = open(&mut client, &asked).await.unwrap();
    assert!(id.starts_with("s-"), "{id}");
    assert!(
        server.received().is_empty(),
        "no refused session reached the provider"
    );
}
