//! A protected probe over real gRPC on loopback, with certificates generated here: a good TLS and
//! token call works; no token, a wrong token, plaintext to a TLS probe, mutual TLS without a
//! client certificate, an over-long deadline, an oversized request and a second caller on a busy
//! lane are each refused, and none of the refused calls reaches the provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use openbench_common::record::{Execution, Outcome};
use openbench_probe::Credentials;
use openbench_probe::auth::ProbeToken;
use openbench_probe::client::{ClientSecurity, ProbeChannel, connect};
use openbench_probe::error::ProbeError;
use openbench_probe::executor::error_chain;
use openbench_probe::server::{ProbeConfig, ProbeSecurity, ProbeServerHandle, serve_secured};
use openbench_probe::tls::{ClientTlsFiles, ServerTlsFiles};
use openbench_proto::v1::probe_client::ProbeClient;
use openbench_proto::v1::{DescribeRequest, ExecuteRequest};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::*;

const TOKEN: &str = "probe-token-3f9a1c";
const TIMEOUT_MS: u64 = 20_000;

/// A CA and the PEM files it signed, on disk.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    /// A server CA with a certificate for `localhost`/`127.0.0.1`, and a separate client CA with
    /// one client certificate.
    fn generate() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
        let server_ca = ca("test server CA");
        write("ca.pem", server_ca.pem());
        let (cert, key) = leaf(&server_ca, &["localhost", "127.0.0.1"]);
        write("server.pem", cert);
        write("server.key", key);
        let client_ca = ca("test client CA");
        write("client-ca.pem", client_ca.pem());
        let (cert, key) = leaf(&client_ca, &["coordinator"]);
        write("client.pem", cert);
        write("client.key", key);
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn server(&self, mutual: bool) -> ServerTlsFiles {
        ServerTlsFiles {
            cert: self.path("server.pem"),
            key: self.path("server.key"),
            client_ca: mutual.then(|| self.path("client-ca.pem")),
        }
    }

    fn client(&self, identity: bool) -> ClientTlsFiles {
        ClientTlsFiles {
            ca: Some(self.path("ca.pem")),
            identity: identity.then(|| (self.path("client.pem"), self.path("client.key"))),
        }
    }
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

fn leaf(issuer: &CertifiedIssuer<'static, KeyPair>, names: &[&str]) -> (String, String) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, issuer)
        .unwrap();
    (cert.pem(), key.serialize_pem())
}

fn token(text: &str) -> Option<ProbeToken> {
    Some(ProbeToken::new(text, "test").unwrap())
}

/// A streaming answer that takes `gap_ms` between its first and last chunk.
fn stream(gap_ms: u64) -> Vec<Step> {
    vec![
        sse_head(),
        data(r#"{"model":"m","choices":[{"delta":{"role":"assistant"}}]}"#),
        Step::Sleep(gap_ms),
        data(r#"{"model":"m","choices":[{"delta":{"content":"{}"},"finish_reason":"stop"}]}"#),
        chunk("data: [DONE]\n\n"),
        Step::End,
    ]
}

/// A probe for provider `together` in front of `upstream`, protected as given.
async fn probe(upstream: &RawServer, tls: Option<ServerTlsFiles>) -> ProbeServerHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let security = ProbeSecurity {
        tls: tls.map(|files| files.load().unwrap()),
        token: token(TOKEN),
    };
    let config = ProbeConfig {
        region: "eu-west".into(),
        contract: contract(TIMEOUT_MS),
        providers: vec![adapter("together", &upstream.endpoint())],
        credentials: Credentials::from_pairs([("TEST_KEY", SECRET)]),
        code_digest: "code".into(),
    };
    serve_secured(listener, config, security).await.unwrap()
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

fn call(deadline_ms: u64) -> ExecuteRequest {
    let planned = planned("together", deadline_ms);
    ExecuteRequest {
        run_id: planned.run_id.clone(),
        round_id: planned.round_id.clone(),
        request_id: planned.request_id.clone(),
        provider: "together".into(),
        lane: "together".into(),
        planned_request_json: serde_json::to_string(&planned).unwrap(),
        deadline_ms,
        trace_context: Default::default(),
    }
}

/// Waits until `upstream` has received `count` requests (bounded, so a failure cannot hang).
async fn wait_for_requests(upstream: &RawServer, count: usize) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while upstream.received().len() < count {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the provider never received the request");
}

#[tokio::test]
async fn good_tls_and_token_call_succeeds_over_https() {
    let pki = Pki::generate();
    let upstream = start(stream(0)).await;
    let handle = probe(&upstream, Some(pki.server(false))).await;
    let mut client = client(&https(&handle), pki.client(false), token(TOKEN)).await;
    let described = client
        .describe(DescribeRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(described.region, "eu-west");
    let reply = client.execute(call(5_000)).await.unwrap().into_inner();
    let execution: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(execution.record.outcome, Outcome::Completed);
    assert_eq!(upstream.received().len(), 1);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn missing_or_wrong_token_is_unauthenticated() {
    let pki = Pki::generate();
    let upstream = start(stream(0)).await;
    let handle = probe(&upstream, Some(pki.server(false))).await;

    let mut anonymous = client(&https(&handle), pki.client(false), None).await;
    let err = anonymous.execute(call(5_000)).await.unwrap_err();
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
    let err = impostor.execute(call(5_000)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
    assert_eq!(err.message(), "the bearer token is not this probe's");
    // A prefix of the right token.
    let mut prefix = client(&https(&handle), pki.client(false), token("probe-token")).await;
    let err = prefix.describe(DescribeRequest {}).await.unwrap_err();
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
    let upstream = start(stream(0)).await;
    let handle = probe(&upstream, Some(pki.server(false))).await;
    let url = format!("http://{}", handle.addr());
    let security = ClientSecurity {
        tls: pki.client(false),
        token: token(TOKEN),
    };
    // tonic connects lazily enough that the refusal shows on the first call: the TLS server
    // reads the HTTP/2 preface as a bad handshake and closes the connection.
    match connect(&url, &security).await {
        Err(error) => assert!(
            matches!(error, ProbeError::Connect { url: ref u, .. } if *u == url),
            "{error}"
        ),
        Ok(mut client) => {
            let err = client.describe(DescribeRequest {}).await.unwrap_err();
            assert_eq!(err.code(), tonic::Code::Unknown, "{err:?}");
            assert_eq!(err.message(), "transport error");
        }
    }
    assert_eq!(upstream.received().len(), 0);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn mutual_tls_requires_a_client_certificate() {
    let pki = Pki::generate();
    let upstream = start(stream(0)).await;
    let handle = probe(&upstream, Some(pki.server(true))).await;
    let security = ClientSecurity {
        tls: pki.client(false),
        token: token(TOKEN),
    };
    // With TLS 1.3 the client finishes its handshake first; the probe's refusal arrives as a
    // `certificate_required` alert on the first call.
    match connect(&https(&handle), &security).await {
        Err(error) => assert!(error.to_string().contains("CertificateRequired"), "{error}"),
        Ok(mut client) => {
            let err = client.execute(call(5_000)).await.unwrap_err();
            assert_eq!(err.code(), tonic::Code::Unknown, "{err:?}");
            assert!(
                error_chain(&err).contains("received fatal alert: CertificateRequired"),
                "{err:?}"
            );
        }
    }
    assert_eq!(upstream.received().len(), 0);

    // The same call with the client certificate goes through.
    let mut client = client(&https(&handle), pki.client(true), token(TOKEN)).await;
    let reply = client.execute(call(5_000)).await.unwrap().into_inner();
    let execution: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(execution.record.outcome, Outcome::Completed);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn deadline_beyond_the_spec_timeout_is_invalid_argument() {
    let pki = Pki::generate();
    let upstream = start(stream(0)).await;
    let handle = probe(&upstream, Some(pki.server(false))).await;
    let mut client = client(&https(&handle), pki.client(false), token(TOKEN)).await;

    let mut long = call(5_000);
    long.deadline_ms = u64::MAX;
    let err = client.execute(long).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        err.message(),
        format!(
            "request req-1: deadline_ms {} exceeds the spec's timeout_ms 20000",
            u64::MAX
        )
    );
    // Inside the planned request too, one millisecond over.
    let err = client.execute(call(TIMEOUT_MS + 1)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(
        err.message()
            .contains("deadline_ms 20001 exceeds the spec's timeout_ms 20000")
    );
    assert_eq!(upstream.received().len(), 0);
    // Exactly the timeout is allowed.
    let reply = client.execute(call(TIMEOUT_MS)).await.unwrap().into_inner();
    let execution: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(execution.record.outcome, Outcome::Completed);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn oversized_request_is_refused_before_the_provider() {
    let upstream = start(stream(0)).await;
    let handle = probe(&upstream, None).await;
    let mut client = client(
        &format!("http://{}", handle.addr()),
        ClientTlsFiles::default(),
        token(TOKEN),
    )
    .await;
    let mut planned = planned("together", 5_000);
    planned.messages[1].content = "x".repeat(2 * 1024 * 1024);
    let mut big = call(5_000);
    big.planned_request_json = serde_json::to_string(&planned).unwrap();
    let err = client.execute(big).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::OutOfRange, "{}", err.message());
    assert_eq!(upstream.received().len(), 0);
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn second_caller_on_a_busy_lane_is_refused() {
    let pki = Pki::generate();
    let upstream = start(stream(1_000)).await;
    let handle = probe(&upstream, Some(pki.server(false))).await;
    let mut first = client(&https(&handle), pki.client(false), token(TOKEN)).await;
    let mut second = client(&https(&handle), pki.client(false), token(TOKEN)).await;
    let running = tokio::spawn(async move { first.execute(call(5_000)).await });
    wait_for_requests(&upstream, 1).await;
    let err = second.execute(call(5_000)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition);
    assert_eq!(
        err.message(),
        "provider together is busy with another request in region eu-west (one at a time)"
    );
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

#[test]
fn token_file_is_trimmed_and_unreadable_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, format!("{TOKEN}\n")).unwrap();
    let loaded = ProbeToken::load(Some(&path), "OPENBENCH_TEST_UNSET_VARIABLE").unwrap();
    assert_eq!(loaded, token(TOKEN));
    assert!(!format!("{loaded:?}").contains(TOKEN));
    let missing = dir.path().join("absent");
    let err = ProbeToken::load(Some(Path::new(&missing)), "X").unwrap_err();
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );
    assert_eq!(
        ProbeToken::load(None, "OPENBENCH_TEST_UNSET_VARIABLE").unwrap(),
        None
    );
}

#[tokio::test]
async fn health_service_answers_serving_without_a_token() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let health = openbench_probe::server::serve_health(listener).unwrap();
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
