//! The probe's refusals over the container network, each asserted: no token, a wrong token,
//! plaintext to the TLS port, no client certificate, work outside the open session, a provider
//! the session did not open, an over-long deadline, a health ping without the token (with it,
//! inside the session, it answers), a second caller on a busy lane (the
//! loopback versions, with the same expectations, are in `probe/tests/secure.rs` and
//! `probe/tests/session.rs`). Each call that must fail for one reason is right in every other
//! way: it names the session the test opened, as the coordinator opens it. The test process reaches a probe container through an in-process
//! relay on loopback (`openbench_inference::relay`), so the URL is `https://localhost:PORT`, a
//! name the deployment's certificates carry, and the bytes cross the Docker bridge to the
//! probe's address.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::{TOKEN, Topology, must};
use openbench_common::error_text::error_chain;
use openbench_common::probe_session::SessionOpen;
use openbench_common::record::{Execution, Outcome};
use openbench_common::request::{ChatMessage, PlannedRequest, RequestIdentity, Role};
use openbench_common::spec::LoadedSpec;
use openbench_inference::relay::{Relay, RelayConfig};
use openbench_proto::link::{
    ClientSecurity, ClientTlsFiles, LinkError, ProbeChannel, ProbeToken, channel, connect,
    link_client, open_session, probe_client,
};
use openbench_proto::v1::probe_client::ProbeClient;
use openbench_proto::v1::{DescribeRequest, ExecuteRequest, PingRequest};

/// The spec's `timeout_ms`, the session's contract: the longest deadline a probe accepts.
pub const SPEC_TIMEOUT_MS: u64 = 20_000;
/// The run id of the test's sessions (every call names it).
const RUN_ID: &str = "security";

/// A loopback door to `service`'s port 7070 on network `net`.
async fn door(topology: &Topology, service: &str, net: &str) -> Relay {
    let upstream = format!("{}:7070", topology.ip(service, net));
    Relay::start("127.0.0.1:0", &upstream, RelayConfig::default())
        .await
        .unwrap()
}

/// The coordinator's TLS files (the probes require its client certificate).
fn coordinator_tls(topology: &Topology) -> ClientTlsFiles {
    let pki = topology.path("pki");
    ClientTlsFiles {
        ca: Some(pki.join("probe-ca.crt")),
        identity: Some((pki.join("coordinator.crt"), pki.join("coordinator.key"))),
    }
}

fn security(topology: &Topology, token: Option<&str>) -> ClientSecurity {
    ClientSecurity {
        tls: coordinator_tls(topology),
        token: token.map(|t| ProbeToken::new(t, "test").unwrap()),
    }
}

/// Opens, on the probe behind `client`, the session of run [`RUN_ID`] in `region` for the
/// mounted spec's contract and only provider `alpha` (so `beta` is a provider the session did
/// not open); its id.
async fn open_alpha(
    topology: &Topology,
    client: &mut ProbeClient<ProbeChannel>,
    region: &str,
) -> String {
    let spec = LoadedSpec::load(&topology.path("spec.yaml")).unwrap().spec;
    assert_eq!(spec.request.timeout_ms, SPEC_TIMEOUT_MS);
    let mut session = SessionOpen::of_spec(RUN_ID, &"5e".repeat(32), region, &spec);
    session.adapters.retain(|a| a.key == "alpha");
    open_session(client, &session)
        .await
        .unwrap()
        .into_inner()
        .session_id
}

/// An Execute call in session `session_id` for `provider` in `region` with `deadline_ms`.
fn call(
    session_id: &str,
    provider: &str,
    region: &str,
    id: &str,
    deadline_ms: u64,
) -> ExecuteRequest {
    let planned = PlannedRequest {
        identity: RequestIdentity {
            run_id: RUN_ID.into(),
            round_id: "security-round".into(),
            request_id: id.into(),
            round_index: 0,
            attempt: 0,
            task_family: "ticket-triage".into(),
            item_id: "tt-0001".into(),
            provider: provider.into(),
            region: region.into(),
            lane: format!("{provider}@{region}"),
            ..RequestIdentity::default()
        },
        messages: vec![
            ChatMessage::text(Role::System, "Answer in JSON.".into()),
            ChatMessage::text(Role::User, format!("Security case {id}.")),
        ],
        deadline_ms,
        output: None,
        load: None,
        tool: None,
        tools: Vec::new(),
    };
    ExecuteRequest {
        planned_request_json: serde_json::to_string(&planned).unwrap(),
        session_id: session_id.into(),
        release_at_unix_us: 0,
    }
}

/// Every refusal against `probe-east` (and the busy lane against `probe-west`, whose path to
/// the providers the test can black-hole). The topology must be up with no delay.
pub async fn refusals(topology: &Topology) {
    let door = door(topology, "probe-east", "east-lan").await;
    let url = format!("https://localhost:{}", door.local_addr().port());

    // The good call: TLS, the client certificate and the token.
    let mut good = connect(&url, &security(topology, Some(TOKEN)))
        .await
        .unwrap();
    let described = good
        .describe(DescribeRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(described.region, "east");
    let session = open_alpha(topology, &mut good, "east").await;
    let call = |provider: &str, id: &str, deadline_ms: u64| {
        call(&session, provider, "east", id, deadline_ms)
    };

    // No token: refused before any work, on every RPC (a caller without the token cannot open
    // a session of its own either).
    let mut anonymous = connect(&url, &security(topology, None)).await.unwrap();
    let err = anonymous
        .execute(call("alpha", "no-token", 5_000))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated, "{err:?}");
    assert_eq!(err.message(), "this probe requires a bearer token");
    let err = anonymous.describe(DescribeRequest {}).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated, "{err:?}");
    let spec = LoadedSpec::load(&topology.path("spec.yaml")).unwrap().spec;
    let err = open_session(
        &mut anonymous,
        &SessionOpen::of_spec("intruder", &"00".repeat(32), "east", &spec),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated, "{err:?}");
    assert_eq!(err.message(), "this probe requires a bearer token");

    // A wrong token: one character off the right one.
    let wrong = format!("{}x", &TOKEN[..TOKEN.len() - 1]);
    let mut impostor = connect(&url, &security(topology, Some(&wrong)))
        .await
        .unwrap();
    let err = impostor
        .execute(call("alpha", "wrong-token", 5_000))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated, "{err:?}");
    assert_eq!(err.message(), "the bearer token is not this probe's");

    // Plaintext HTTP/2 to the TLS port never gets an answer: the probe closes the connection
    // (loopback shows that as "transport error") or answers with a TLS alert, which the client
    // reads as a malformed HTTP/2 frame (a protocol error).
    let plain = format!("http://127.0.0.1:{}", door.local_addr().port());
    match connect(&plain, &security(topology, Some(TOKEN))).await {
        Err(error) => assert!(
            matches!(error, LinkError::Connect { url: ref u, .. } if *u == plain),
            "{error}"
        ),
        Ok(mut client) => {
            let err = client.describe(DescribeRequest {}).await.unwrap_err();
            match err.code() {
                tonic::Code::Unknown => assert_eq!(err.message(), "transport error"),
                tonic::Code::Internal => {
                    assert!(err.message().starts_with("h2 protocol error"), "{err:?}")
                }
                _ => panic!("plaintext to a TLS probe: {err:?}"),
            }
        }
    }

    // Mutual TLS: without the coordinator's client certificate the handshake is refused (with
    // TLS 1.3 the refusal arrives as a `certificate_required` alert on the first call).
    let anonymous_tls = ClientSecurity {
        tls: ClientTlsFiles {
            identity: None,
            ..coordinator_tls(topology)
        },
        token: Some(ProbeToken::new(TOKEN, "test").unwrap()),
    };
    match connect(&url, &anonymous_tls).await {
        Err(error) => assert!(error.to_string().contains("CertificateRequired"), "{error}"),
        Ok(mut client) => {
            let err = client
                .execute(call("alpha", "no-client-cert", 5_000))
                .await
                .unwrap_err();
            // With TLS 1.3 the client's side of the handshake is done before the probe checks
            // the certificate; the probe's alert then races its close of the connection (a
            // socket closed with the request unread is reset), so the call ends with the alert
            // or, rarely (once in a CI run), with the connection closed: never with an answer.
            // The `good` client below shows the probe still serving.
            let chain = error_chain(&err);
            assert!(
                chain.contains("received fatal alert: CertificateRequired")
                    || (err.code() == tonic::Code::Cancelled
                        && format!("{err:?}").contains("connection closed")),
                "{err:?}"
            );
        }
    }

    // Work outside the open session: none named, and a session this probe never opened.
    let mut outside = call("alpha", "no-session", 5_000);
    outside.session_id.clear();
    let err = good.execute(outside).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition, "{err:?}");
    assert_eq!(
        err.message(),
        "request no-session: no session: the coordinator opens one (OpenSession) before it \
         executes"
    );
    let mut made_up = call("alpha", "made-up-session", 5_000);
    made_up.session_id = "s-000000000000000000000000".into();
    let err = good.execute(made_up).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition, "{err:?}");
    assert_eq!(
        err.message(),
        "request made-up-session: session s-000000000000000000000000 is not open on the probe \
         in region east"
    );

    // A provider the spec lists but the session did not open.
    let err = good
        .execute(call("beta", "unopened-provider", 5_000))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::PermissionDenied, "{err:?}");
    assert_eq!(
        err.message(),
        format!(
            "request unopened-provider: provider \"beta\" was not opened by session {session} in \
             region east (it opened: alpha)"
        )
    );

    // A deadline one millisecond over the session's timeout.
    let err = good
        .execute(call("alpha", "long-deadline", SPEC_TIMEOUT_MS + 1))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert_eq!(
        err.message(),
        format!(
            "request long-deadline: deadline_ms {} exceeds the session's timeout_ms \
             {SPEC_TIMEOUT_MS}",
            SPEC_TIMEOUT_MS + 1
        )
    );

    // The same session admits a call that is right in every way: the refusals above were for
    // their one reason.
    let reply = good
        .execute(call("alpha", "admitted", 5_000))
        .await
        .unwrap()
        .into_inner();
    let execution: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(
        execution.record.outcome,
        Outcome::Completed,
        "{execution:?}"
    );

    link_ping(topology, &url, &call("alpha", "after-ping", 5_000)).await;
    busy_lane(topology).await;
}

/// `Link.Ping` (the coordinator's health check) needs the token like every other RPC, and
/// answers inside the open session on the connection that carries `Execute` without
/// disturbing it: `admitted` (a call of that session) still runs after the ping.
async fn link_ping(topology: &Topology, url: &str, admitted: &ExecuteRequest) {
    let ping = |token: Option<String>| async move {
        let channel = channel(url, &security(topology, token.as_deref()))
            .await
            .unwrap();
        link_client(channel).ping(PingRequest {}).await
    };
    let err = ping(None).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated, "{err:?}");
    assert_eq!(err.message(), "this probe requires a bearer token");
    let wrong = format!("{}x", &TOKEN[..TOKEN.len() - 1]);
    let err = ping(Some(wrong)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated, "{err:?}");
    assert_eq!(err.message(), "the bearer token is not this probe's");

    let shared = channel(url, &security(topology, Some(TOKEN)))
        .await
        .unwrap();
    let answer = link_client(shared.clone())
        .ping(PingRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(answer.probe_unix_micros > 0, "{answer:?}");
    let reply = probe_client(shared)
        .execute(admitted.clone())
        .await
        .unwrap()
        .into_inner();
    let execution: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(
        execution.record.outcome,
        Outcome::Completed,
        "{execution:?}"
    );
}

/// Two callers on one lane of `probe-west` while its path to the providers is black-holed: one
/// call holds the lane, the other is refused at once; the holder completes once the path heals.
async fn busy_lane(topology: &Topology) {
    let door = door(topology, "probe-west", "west-lan").await;
    let url = format!("https://localhost:{}", door.local_addr().port());
    let relay = topology.container("sim-west");
    must("docker", &["kill", "-s", "USR1", &relay]);
    topology.wait_for_log("sim-west", "relay: black hole on", 1);

    let mut first = connect(&url, &security(topology, Some(TOKEN)))
        .await
        .unwrap();
    let mut second = connect(&url, &security(topology, Some(TOKEN)))
        .await
        .unwrap();
    let session = open_alpha(topology, &mut first, "west").await;
    let (a_call, b_call) = (
        call(&session, "alpha", "west", "busy-a", 15_000),
        call(&session, "alpha", "west", "busy-b", 15_000),
    );
    let mut a = tokio::spawn(async move { first.execute(a_call).await });
    let mut b = tokio::spawn(async move { second.execute(b_call).await });
    // Whichever reaches the probe first holds the lane (its answer waits in the black hole); the
    // refusal needs no provider, so it returns while the black hole is still on.
    let (refused, holder) = tokio::select! {
        r = &mut a => (r, b),
        r = &mut b => (r, a),
    };
    let err = refused.unwrap().unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition, "{err:?}");
    assert_eq!(
        err.message(),
        "provider alpha is busy with another request in region west (one at a time)"
    );
    assert!(
        !holder.is_finished(),
        "the holder answered through a black hole"
    );
    must("docker", &["kill", "-s", "USR2", &relay]);
    topology.wait_for_log("sim-west", "relay: black hole off", 1);
    let reply = holder.await.unwrap().unwrap().into_inner();
    let execution: Execution = serde_json::from_str(&reply.execution_json).unwrap();
    assert_eq!(
        execution.record.outcome,
        Outcome::Completed,
        "{execution:?}"
    );
}
