//! A lane with several requests in flight: a real probe server and a real simulator on loopback.
//! The session's `max_in_flight` requests of one provider run at once, each on its own clock
//! inside its own call's wall window, and the next caller is refused as busy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use openbench_common::probe_session::SessionOpen;
use openbench_common::record::{Execution, Outcome};
use openbench_common::request::{ChatMessage, PlannedRequest, RequestIdentity, Role};
use openbench_common::spec::{ProviderAdapter, RequestContract};
use openbench_probe::Credentials;
use openbench_probe::client::{ClientSecurity, ProbeChannel, connect};
use openbench_probe::server::{ProbeConfig, ProbeServerHandle, serve_on};
use openbench_probe::session_open::{CredentialSource, EndpointRules};
use openbench_proto::v1::ExecuteRequest;
use openbench_proto::v1::probe_client::ProbeClient;
use openbench_simulator::{SimConfig, SimServer};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const REGION: &str = "local";
/// The simulator's exact schedule (real ms): the role chunk 1500 ms after the request arrives,
/// then two answer pieces 20 ms apart. Long enough that every request of the test is still in
/// flight when the caller one too many is refused.
const SCHEDULE: &str = "1500,20,20";
/// When the first answer piece leaves the simulator, ms after it received the request.
const FIRST_ANSWER_MS: f64 = 1520.0;
/// When the last one leaves.
const LAST_ANSWER_MS: f64 = 1540.0;

async fn simulator() -> SimServer {
    let config = SimConfig {
        time_scale: 1.0,
        seed: 5,
        default_profile: "plain".into(),
        answers: Vec::new(),
    };
    openbench_simulator::start(config, ([127, 0, 0, 1], 0).into())
        .await
        .unwrap()
}

async fn probe() -> ProbeServerHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ProbeConfig {
        region: REGION.into(),
        credentials: CredentialSource::Given(Credentials::empty()),
        endpoints: EndpointRules::default(),
        code_digest: "code".into(),
    };
    serve_on(listener, config).await.unwrap()
}

async fn client(handle: &ProbeServerHandle) -> ProbeClient<ProbeChannel> {
    let url = format!("http://{}", handle.addr());
    connect(&url, &ClientSecurity::default()).await.unwrap()
}

/// Opens a session of the simulator's `plain` profile, on the exact schedule, with
/// `max_in_flight`; returns its id.
async fn open(
    client: &mut ProbeClient<ProbeChannel>,
    sim: &SimServer,
    max_in_flight: u32,
) -> String {
    let adapter = ProviderAdapter {
        extra_headers: BTreeMap::from([("x-sim-schedule".to_string(), SCHEDULE.to_string())]),
        ..ProviderAdapter::open("sim", &sim.profile_endpoint("plain"), "sim-model")
    };
    let session = SessionOpen {
        run_id: "run-c".into(),
        lock_sha256: "cd".repeat(32),
        region: REGION.into(),
        contract: RequestContract::reference(20_000),
        adapters: vec![adapter],
        max_in_flight,
    };
    openbench_proto::link::open_session(client, &session)
        .await
        .unwrap()
        .into_inner()
        .session_id
}

fn call(session_id: &str, n: usize) -> ExecuteRequest {
    let planned = PlannedRequest {
        identity: RequestIdentity {
            run_id: "run-c".into(),
            round_id: format!("round-{n}"),
            request_id: format!("req-{n}"),
            round_index: n as u64,
            attempt: 0,
            task_family: "meeting-notes-lookup".into(),
            item_id: format!("item-{n}"),
            provider: "sim".into(),
            region: REGION.into(),
            lane: "sim".into(),
            ..RequestIdentity::default()
        },
        messages: vec![ChatMessage::text(Role::User, format!("question {n}"))],
        deadline_ms: 20_000,
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

/// Milliseconds of a wall window measured around a call.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lane_runs_its_session_bound_at_once_each_on_its_own_clock_and_refuses_one_more() {
    const N: usize = 3;
    let sim = simulator().await;
    let handle = probe().await;
    let mut opener = client(&handle).await;
    let session_id = open(&mut opener, &sim, N as u32).await;

    let mut calls = Vec::new();
    for n in 0..N {
        let mut c = client(&handle).await;
        let request = call(&session_id, n);
        calls.push(tokio::spawn(async move {
            let sent = Instant::now();
            let reply = c.execute(request).await;
            (reply, sent.elapsed())
        }));
    }
    // All N reach the simulator before any has answered: one at a time, the third could only
    // arrive after the first two had ended.
    loop {
        let received = sim.requests_received();
        assert!(
            calls.iter().all(|c| !c.is_finished()),
            "a call ended (or was refused) with {received} of {N} requests sent"
        );
        if received == N as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let err = opener.execute(call(&session_id, N)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition, "{err:?}");
    assert_eq!(
        err.message(),
        "provider sim is busy with 3 other requests in region local (3 at a time)"
    );
    for joined in calls {
        let (reply, window) = joined.await.unwrap();
        let execution: Execution =
            serde_json::from_str(&reply.unwrap().into_inner().execution_json).unwrap();
        let r = &execution.record;
        assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error_message);
        // The simulator's clock starts when it has the request, after the probe's did; the
        // probe's clock stops before its reply leaves, before the window closes.
        let (ttfa, e2e) = (r.ttfa_ms.unwrap(), r.e2e_ms.unwrap());
        assert!(ttfa >= FIRST_ANSWER_MS, "{} ttfa {ttfa}", r.request_id);
        assert!(e2e >= LAST_ANSWER_MS, "{} e2e {e2e}", r.request_id);
        assert!(e2e <= r.stream_end_ms.unwrap(), "{r:?}");
        assert!(r.stream_end_ms.unwrap() <= ms(window), "{r:?} {window:?}");
    }
    assert_eq!(
        sim.requests_received(),
        N as u64,
        "the refused call was sent"
    );
    // With every request ended, the lane takes the next one.
    let reply = opener.execute(call(&session_id, N + 1)).await.unwrap();
    let execution: Execution = serde_json::from_str(&reply.into_inner().execution_json).unwrap();
    assert_eq!(execution.record.outcome, Outcome::Completed);
    handle.shutdown().await.unwrap();
}
