//! A protected probe over real gRPC on loopback, with certificates generated here: a good TLS and
//! token call works; no token, a wrong token, plaintext to a TLS probe, mutual TLS without a
//! client certificate, a deadline over the session's contract, an oversized request and a second
//! caller on a busy lane are each refused, and none of the refused calls reaches the provider.
//! (Session refusals themselves: `session.rs`.)
//! The link health ping (`Link.Ping`) needs the same token and answers with the probe's clock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::error_text::error_chain;
use openbench_common::record::{Execution, Outcome};
use openbench_probe::auth::ProbeToken;
use openbench_probe::client::{ClientSecurity, ProbeChannel, connect};
use openbench_probe::server::{ProbeSecurity, ProbeServerHandle, serve_secured};
use openbench_probe::tls::{ClientTlsFiles, ServerTlsFiles};
use openbench_proto::link::LinkError;
use openbench_proto::v1::probe_client::ProbeClient;
use openbench_proto::v1::{DescribeRequest, ExecuteRequest};
use std::sync::Arc;
use support::pki::Pki;
use support::session::{execute_call, open, planned_in, probe_config, session};
use support::*;
use tokio::sync::Semaphore;

const TOKEN: &str = "probe-token-3f9a1c";
const TIMEOUT_MS: u64 = 20_000;

fn token(text: &str) -> Option<ProbeToken> {
    Some(ProbeToken::new(text, "test").unwrap())
}

/// A streaming answer whose last chunk waits for a permit of `gate` when one is given.
fn stream(gate: Option<&Arc<Semaphore>>) -> Vec<Step> {
    let mut steps = vec![
        sse_head(),
        data(r#"{"model":"m","choices":[{"delta":{"role":"assistant"}}]}"#),
    ];
    steps.extend(gate.map(|gate| Step::Gate(gate.clone())));
    steps.extend([
        data(r#"{"model":"m","choices":[{"delta":{"content":"{}"},"finish_reason":"stop"}]}"#),
        chunk("data: [DONE]\n\n"),
        Step::End,
    ]);
    steps
}

/// A probe of region `eu-west` holding `TEST_KEY` for `upstream`, protected as given.
async fn probe(tls: Option<ServerTlsFiles>, upstream: &RawServer) -> ProbeServerHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let security = ProbeSecurity {
        tls: tls.map(|files| files.load().unwrap()),
        token: token(TOKEN),
        ..ProbeSecurity::default()
    };
    serve_secured(
        listener,
        probe_config("eu-west", &upstream.endpoint()),
        security,
    )
    .await
    .unwrap()
}

/// Opens the session of provider `together` in front of `upstream` (timeout [`TIMEOUT_MS`]).
async fn opened(client: &mut ProbeClient<ProbeChannel>, upstream: &RawServer) -> String {
    let adapters = vec![adapter("together", &upstream.endpoint())];
    open(client, &session("eu-west", adapters, TIMEOUT_MS))
        .await
        .unwrap()
}

fn https(handle: &ProbeServerHandle) -> String {
    format!("https://localhost:{}", handle.addr().port())
}

async fn client(
    url: &str,
    tls: ClientTlsFiles,
    token: Option<ProbeToken>,
) -> ProbeClient<ProbeChannel> {
    connect(url, &ClientSecurity { tls, token }).await.unwrap()
}

fn call(session_id: &str, deadline_ms: u64) -> ExecuteRequest {
    execute_call(&planned_in("together", "eu-west", deadline_ms), session_id)
}

#[tokio::test]
async fn good_tls_and_token_call_succeeds_over_https() {
    let pki = Pki::generate();
    let upstream = start(stream(None)).await;
    let handle = probe(Some(pki.server(false)), &upstream).await;
    let mut client = client(&https(&handle), pki.client(false), token(TOKEN)).await;
    let described = client
        .describe(DescribeRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(described.region, "eu-west");
    let id = opened(&mut client, &upstream).await;
    let reply = client.execute(call(&id, 5_000)).await.unwrap().into_inner();
    let execution: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(execution.record.outcome, Outcome::Completed);
    assert_eq!(upstream.received().len(), 1);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn missing_or_wrong_token_is_unauthenticated() {
    let pki = Pki::generate();
    let upstream = start(stream(None)).await;
    let handle = probe(Some(pki.server(false)), &upstream).await;
    let mut good = client(&https(&handle), pki.client(false), token(TOKEN)).await;
    let id = opened(&mut good, &upstream).await;

    let mut anonymous = client(&https(&handle), pki.client(false), None).await;
    let err = anonymous.execute(call(&id, 5_000)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
    assert_eq!(err.message(), "this probe requires a bearer token");
    let err = anonymous.describe(DescribeRequest {}).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated);

    // A token that differs only in its last character.
    let mut impostor = client(
        &https(&handle),
        pki.client(false),
        token("probe-token-3f9a1d"),
    )
    .await;
    let err = impostor.execute(call(&id, 5_000)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
    assert_eq!(err.message(), "the bearer token is not this probe's");
    // A prefix of the right token.
    let mut prefix = client(&https(&handle), pki.client(false), token("probe-token")).await;
    let err = prefix.describe(DescribeRequest {}).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
    // Nor may a caller without the token open a session.
    let adapters = vec![adapter("together", &upstream.endpoint())];
    let err = open(&mut anonymous, &session("eu-west", adapters, TIMEOUT_MS))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated);

    assert_eq!(
        upstream.received().len(),
        0,
        "a refused call reached the provider"
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn plaintext_to_a_tls_probe_fails() {
    let pki = Pki::generate();
    let upstream = start(stream(None)).await;
    let handle = probe(Some(pki.server(false)), &upstream).await;
    let url = format!("http://{}", handle.addr());
    let security = ClientSecurity {
        tls: pki.client(false),
        token: token(TOKEN),
    };
    // tonic connects lazily enough that the refusal shows on the first call: the TLS server
    // reads the HTTP/2 preface as a bad handshake and closes the connection.
    match connect(&url, &security).await {
        Err(error) => assert!(
            matches!(error, LinkError::Connect { url: ref u, .. } if *u == url),
            "{error}"
        ),
        Ok(mut client) => {
            let err = client.describe(DescribeRequest {}).await.unwrap_err();
            // The TLS server's answer read as HTTP/2 frames is a protocol error, if the client
            // reads it before the connection closes.
            assert_refused_at_transport(&err, &["h2 protocol error"]);
        }
    }
    assert_eq!(upstream.received().len(), 0);
    handle.shutdown().await.unwrap();
}

/// A call the probe's TLS layer refused: it failed in the transport (never a status of the
/// probe's service), seen as the TLS alert (`also`), or as the connection the probe closed after
/// it: the client's write then meets a broken pipe, or its read a closed connection, depending
/// on which happens first.
fn assert_refused_at_transport(err: &tonic::Status, also: &[&str]) {
    assert!(
        matches!(
            err.code(),
            tonic::Code::Unknown | tonic::Code::Cancelled | tonic::Code::Internal
        ),
        "{err:?}"
    );
    let chain = error_chain(err);
    let closed = ["broken pipe", "connection closed", "connection reset"];
    assert!(
        chain.contains("transport error")
            && closed.iter().chain(also).any(|what| chain.contains(what))
            || also.iter().any(|what| chain.contains(what)),
        "{err:?}"
    );
}

#[tokio::test]
async fn mutual_tls_requires_a_client_certificate() {
    let pki = Pki::generate();
    let upstream = start(stream(None)).await;
    let handle = probe(Some(pki.server(true)), &upstream).await;
    let security = ClientSecurity {
        tls: pki.client(false),
        token: token(TOKEN),
    };
    // With TLS 1.3 the client finishes its handshake first; the probe's refusal arrives as a
    // `certificate_required` alert on the first call.
    match connect(&https(&handle), &security).await {
        Err(error) => assert!(error.to_string().contains("CertificateRequired"), "{error}"),
        Ok(mut client) => {
            let err = client.execute(call("s-any", 5_000)).await.unwrap_err();
            assert_refused_at_transport(&err, &["received fatal alert: CertificateRequired"]);
        }
    }
    assert_eq!(upstream.received().len(), 0);

    // The same call with the client certificate goes through.
    let mut client = client(&https(&handle), pki.client(true), token(TOKEN)).await;
    let id = opened(&mut client, &upstream).await;
    let reply = client.execute(call(&id, 5_000)).await.unwrap().into_inner();
    let execution: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(execution.record.outcome, Outcome::Completed);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn deadline_beyond_the_session_timeout_is_invalid_argument() {
    let pki = Pki::generate();
    let upstream = start(stream(None)).await;
    let handle = probe(Some(pki.server(false)), &upstream).await;
    let mut client = client(&https(&handle), pki.client(false), token(TOKEN)).await;
    let id = opened(&mut client, &upstream).await;

    // Above what any spec allows.
    let err = client.execute(call(&id, u64::MAX)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        err.message(),
        format!("request req-1: deadline_ms {} is above 600000", u64::MAX)
    );
    // Within that, but one millisecond over the session's contract.
    let err = client.execute(call(&id, TIMEOUT_MS + 1)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        err.message(),
        "request req-1: deadline_ms 20001 exceeds the session's timeout_ms 20000"
    );
    assert_eq!(upstream.received().len(), 0);
    // Exactly the timeout is allowed.
    let reply = client
        .execute(call(&id, TIMEOUT_MS))
        .await
        .unwrap()
        .into_inner();
    let execution: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(execution.record.outcome, Outcome::Completed);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn oversized_request_is_refused_before_the_provider() {
    let upstream = start(stream(None)).await;
    let handle = probe(None, &upstream).await;
    let mut client = client(
        &format!("http://{}", handle.addr()),
        ClientTlsFiles::default(),
        token(TOKEN),
    )
    .await;
    let id = opened(&mut client, &upstream).await;
    let mut planned = planned_in("together", "eu-west", 5_000);
    planned.messages[1].content = "x".repeat(2 * 1024 * 1024);
    let big = execute_call(&planned, &id);
    let err = client.execute(big).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::OutOfRange, "{}", err.message());
    assert_eq!(upstream.received().len(), 0);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn second_caller_on_a_busy_lane_is_refused() {
    let pki = Pki::generate();
    // The first answer is held at the gate until the second caller has been refused.
    let gate = Arc::new(Semaphore::new(0));
    let upstream = start(stream(Some(&gate))).await;
    let handle = probe(Some(pki.server(false)), &upstream).await;
    let mut first = client(&https(&handle), pki.client(false), token(TOKEN)).await;
    let mut second = client(&https(&handle), pki.client(false), token(TOKEN)).await;
    let id = opened(&mut first, &upstream).await;
    let first_call = call(&id, 5_000);
    let running = tokio::spawn(async move { first.execute(first_call).await });
    upstream.wait_for_requests(1).await;
    let err = second.execute(call(&id, 5_000)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition);
    assert_eq!(
        err.message(),
        "provider together is busy with another request in region eu-west (one at a time)"
    );
    gate.add_permits(1);
    let reply = running.await.unwrap().unwrap().into_inner();
    let execution: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(execution.record.outcome, Outcome::Completed);
    assert_eq!(
        upstream.received().len(),
        1,
        "the refused call reached the provider"
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn health_service_answers_serving_without_a_token() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let health = openbench_probe::server::serve_health(listener, Default::default()).unwrap();
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", health.addr()))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = HealthClient::new(channel);
    let reply = client
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.status, ServingStatus::Serving as i32);
    health.shutdown().await.unwrap();
}

#[tokio::test]
async fn link_ping_needs_the_token_and_reads_the_probes_clock() {
    use openbench_common::clock::unix_micros;
    use openbench_proto::link::{channel, link_client};
    use openbench_proto::v1::PingRequest;
    let pki = Pki::generate();
    let upstream = start(stream(None)).await;
    let handle = probe(Some(pki.server(false)), &upstream).await;
    let security = |token| ClientSecurity {
        tls: pki.client(false),
        token,
    };
    let mut anonymous = link_client(channel(&https(&handle), &security(None)).await.unwrap());
    let err = anonymous.ping(PingRequest {}).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
    let mut link = link_client(
        channel(&https(&handle), &security(token(TOKEN)))
            .await
            .unwrap(),
    );
    // One machine, one clock: the probe's reading falls inside the call.
    let before = unix_micros(std::time::SystemTime::now());
    let answer = link.ping(PingRequest {}).await.unwrap().into_inner();
    let after = unix_micros(std::time::SystemTime::now());
    assert!(
        (before..=after).contains(&answer.probe_unix_micros),
        "{before} ≤ {} ≤ {after}",
        answer.probe_unix_micros
    );
    assert_eq!(upstream.received().len(), 0, "a ping reached the provider");
    handle.shutdown().await.unwrap();
}
