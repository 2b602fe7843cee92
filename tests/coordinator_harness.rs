//! A probe that does not answer within deadline + grace yields harness records (never provider
//! failures), the run carries on, and a resume re-executes exactly those lane-rounds.
//!
//! The probe here is a real tonic `Probe` server on loopback (a remote region as far as the
//! coordinator knows) that first stalls, then answers with a completed execution.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use openbench_common::credentials::Credentials;
use openbench_common::record::{Execution, Outcome, TerminalRecord};
use openbench_common::request::PlannedRequest;
use openbench_common::spec::LoadedSpec;
use openbench_common::workflow::{
    DatasetRelease, ReportOptions, ReportOutcome, WorkItem, Workflow, WorkflowError,
};
use openbench_coordinator::{RunDir, RunInputs, RunOptions, RunStatus, run_full};
use openbench_proto::v1::link_server::{Link, LinkServer};
use openbench_proto::v1::probe_server::{Probe, ProbeServer};
use openbench_proto::v1::{
    DescribeRequest, DescribeResponse, ExecuteRequest, ExecuteResponse, OpenSessionRequest,
    OpenSessionResponse, ProbeIdentity,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

struct FakeProbe {
    stall: Arc<AtomicBool>,
}

#[tonic::async_trait]
impl Probe for FakeProbe {
    async fn execute(
        &self,
        request: tonic::Request<ExecuteRequest>,
    ) -> Result<tonic::Response<ExecuteResponse>, tonic::Status> {
        if self.stall.load(Ordering::SeqCst) {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        }
        let planned: PlannedRequest =
            serde_json::from_str(&request.into_inner().planned_request_json).unwrap();
        let mut record =
            TerminalRecord::new("2026-01-01T00:00:00.000000Z".into(), Outcome::Completed);
        record.request_id = planned.identity.request_id;
        record.http_status = Some(200);
        record.answer_text = "{\"answer\":\"x\"}".into();
        let execution = Execution {
            record,
            events: Vec::new(),
        };
        Ok(tonic::Response::new(ExecuteResponse {
            execution_json: serde_json::to_string(&execution).unwrap(),
        }))
    }

    async fn describe(
        &self,
        _request: tonic::Request<DescribeRequest>,
    ) -> Result<tonic::Response<DescribeResponse>, tonic::Status> {
        // The build the coordinator checks: this run's code digest and tokenizer.
        Ok(tonic::Response::new(DescribeResponse {
            identity: Some(ProbeIdentity {
                code_digest: "c".into(),
                tokenizer_sha256: openbench_common::tokenizer::O200K_BASE_RANKS_SHA256.into(),
                probe_id: "far@fake".into(),
                ..ProbeIdentity::default()
            }),
            ..DescribeResponse::default()
        }))
    }

    async fn open_session(
        &self,
        _request: tonic::Request<OpenSessionRequest>,
    ) -> Result<tonic::Response<OpenSessionResponse>, tonic::Status> {
        Ok(tonic::Response::new(OpenSessionResponse {
            session_id: "s-fake".into(),
            probe_id: "far@fake".into(),
        }))
    }

    /// A probe of an older build: no canaries to report (the run's section then has none).
    async fn health(
        &self,
        _request: tonic::Request<openbench_proto::v1::HealthRequest>,
    ) -> Result<tonic::Response<openbench_proto::v1::HealthResponse>, tonic::Status> {
        Err(tonic::Status::unimplemented("no health"))
    }
}

/// The coordinator's health pings: this probe stalls its requests but its link is healthy.
struct FakeLink;

#[tonic::async_trait]
impl Link for FakeLink {
    async fn ping(
        &self,
        _request: tonic::Request<openbench_proto::v1::PingRequest>,
    ) -> Result<tonic::Response<openbench_proto::v1::PingResponse>, tonic::Status> {
        Ok(tonic::Response::new(openbench_proto::v1::PingResponse {
            probe_unix_micros: 0,
        }))
    }
}

/// A stand-in workflow: the coordinator only needs the dataset it is handed.
struct Stub;

impl Workflow for Stub {
    fn name(&self) -> &'static str {
        "micro-single-task"
    }
    fn description(&self) -> &'static str {
        "stub"
    }
    fn load_dataset(&self, _dir: &Path, _manifest: &str) -> Result<DatasetRelease, WorkflowError> {
        Err(WorkflowError("unused".into()))
    }
    fn check_spec(&self, spec: &mut openbench_common::spec::Spec) -> Vec<String> {
        openbench_micro_single_task::plan::MicroSpec::check(spec)
    }
    fn plan(
        &self,
        inputs: &openbench_common::workflow::PlanInputs<'_>,
        attempt: u32,
    ) -> Result<openbench_common::schedule::Schedule, WorkflowError> {
        openbench_micro_single_task::plan::schedule(inputs, attempt)
    }
    fn smoke_failures(
        &self,
        _schedule: &openbench_common::schedule::Schedule,
        _records: &BTreeMap<String, TerminalRecord>,
    ) -> Vec<String> {
        Vec::new()
    }
    fn report(
        &self,
        _run_dir: &Path,
        _options: &ReportOptions,
    ) -> Result<ReportOutcome, WorkflowError> {
        Err(WorkflowError("unused".into()))
    }
}

fn dataset() -> DatasetRelease {
    let mut items = BTreeMap::new();
    for family in ["a", "b"] {
        let rows = (0..3)
            .map(|i| WorkItem {
                group: family.into(),
                item_id: format!("{family}-{i}"),
                system: "sys".into(),
                user: format!("question {family} {i}"),
                item_hash: format!("hash-{family}-{i}"),
            })
            .collect();
        items.insert(family.to_string(), rows);
    }
    DatasetRelease {
        dir: PathBuf::from("synthetic"),
        release_hash: "r".repeat(64),
        file_hashes: BTreeMap::new(),
        items,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_probe_gives_harness_records_and_resume_reexecutes_them() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stall = Arc::new(AtomicBool::new(true));
    let service = ProbeServer::new(FakeProbe {
        stall: stall.clone(),
    });
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .add_service(LinkServer::new(FakeLink))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );

    let tmp = tempfile::tempdir().unwrap();
    let spec_text = format!(
        "benchmark:
  slug: s
  workflow: micro-single-task
  schedule_version: v
  families: [a, b]
request: {{temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 16, response_format: json_object, timeout_ms: 100, harness_grace_ms: 100}}
providers:
  - {{key: p1, endpoint: 'http://127.0.0.1:9/v1', model: m, auth: {{scheme: none}}, max_tokens_field: max_tokens}}
  - {{key: p2, endpoint: 'http://127.0.0.1:9/v1', model: m, auth: {{scheme: none}}, max_tokens_field: max_tokens}}
regions:
  - {{name: far, probe: 'http://{addr}'}}
dataset: {{source: synthetic}}
plans: {{full_items_per_family: 2}}
run_root: runs
"
    );
    let spec_path = tmp.path().join("spec.yaml");
    std::fs::write(&spec_path, spec_text).unwrap();
    let inputs = RunInputs {
        spec: LoadedSpec::load_checked(&spec_path, |spec| Stub.check_spec(spec)).unwrap(),
        workflow: Arc::new(Stub),
        dataset: dataset(),
        credentials: Credentials::empty(),
        code_sha256: "c".into(),
    };
    let run = RunDir::create(&inputs, None, "test").unwrap();
    let started = std::time::Instant::now();
    let first = run_full(&inputs, &run, "H", &RunOptions::default())
        .await
        .unwrap();
    // 4 rounds × 2 lanes, each lane given up after deadline + grace = 200 ms.
    assert_eq!(first.status, RunStatus::Incomplete);
    assert_eq!(first.sitting.harness_errors, 8);
    assert_eq!(first.sitting.rounds_executed, 4);
    assert!(started.elapsed().as_millis() >= 4 * 200);
    let results = run.dir.join(openbench_common::rundir::FULL_RESULTS);
    let text = std::fs::read_to_string(&results).unwrap();
    let recs: Vec<TerminalRecord> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(recs.iter().all(|r| r.outcome == Outcome::HarnessError));
    assert!(
        recs[0]
            .error_message
            .as_deref()
            .unwrap()
            .contains("did not answer within 200 ms")
    );
    // One region: the lane is the provider; the record still names the region.
    assert_eq!(recs[0].lane, recs[0].provider);
    assert_eq!(recs[0].region, "far");
    // A harness record names the probe the coordinator was calling.
    assert_eq!(recs[0].probe_id.as_deref(), Some("far@fake"));

    stall.store(false, Ordering::SeqCst);
    let dir = run.dir.clone();
    drop(run);
    let run = RunDir::open(&inputs, &dir, "test").unwrap();
    let second = run_full(&inputs, &run, "H", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(second.status, RunStatus::Complete);
    assert_eq!(second.sitting.records_written, 8);
    let text = std::fs::read_to_string(&results).unwrap();
    let recs: Vec<TerminalRecord> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 16);
    assert!(
        recs[8..]
            .iter()
            .all(|r| r.outcome == Outcome::Completed && r.region == "far")
    );
    // A third session finds nothing left to do.
    let third = run_full(&inputs, &run, "H", &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(third.sitting.records_written, 0);
}
