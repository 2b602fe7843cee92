//! Sessions as the coordinator opens them: a probe config for tests, the session of run `run-1`,
//! opening it, and an `Execute` call that names it.

use super::{SECRET, planned};
use openbench_common::probe_session::SessionOpen;
use openbench_common::request::PlannedRequest;
use openbench_common::spec::{ProviderAdapter, RequestContract};
use openbench_probe::Credentials;
use openbench_probe::client::ProbeChannel;
use openbench_probe::endpoint_policy::EndpointPolicy;
use openbench_probe::server::ProbeConfig;
use openbench_probe::session_open::{CredentialSource, EndpointRules};
use openbench_proto::v1::ExecuteRequest;
use openbench_proto::v1::probe_client::ProbeClient;

/// A probe of `region` holding `TEST_KEY` = [`SECRET`], built from code digest `code`, whose
/// owner lets every credential go to `upstream` (a URL prefix) and nowhere else.
pub fn probe_config(region: &str, upstream: &str) -> ProbeConfig {
    ProbeConfig {
        region: region.into(),
        credentials: CredentialSource::Given(Credentials::from_pairs([("TEST_KEY", SECRET)])),
        endpoints: EndpointRules {
            policy: EndpointPolicy::parse(&[upstream.to_string()]).unwrap(),
            ..EndpointRules::default()
        },
        code_digest: "code".into(),
    }
}

/// The session of run `run-1` in `region` for `adapters` under the reference contract.
pub fn session(region: &str, adapters: Vec<ProviderAdapter>, timeout_ms: u64) -> SessionOpen {
    SessionOpen {
        run_id: "run-1".into(),
        lock_sha256: "ab".repeat(32),
        region: region.into(),
        contract: RequestContract::reference(timeout_ms),
        adapters,
        max_in_flight: 1,
    }
}

/// Opens `session`; the session id, or the probe's refusal.
pub async fn open(
    client: &mut ProbeClient<ProbeChannel>,
    session: &SessionOpen,
) -> Result<String, tonic::Status> {
    let reply = openbench_proto::link::open_session(client, session).await?;
    Ok(reply.into_inner().session_id)
}

/// `Execute` of `planned` in session `session_id`.
pub fn execute_call(planned: &PlannedRequest, session_id: &str) -> ExecuteRequest {
    ExecuteRequest {
        planned_request_json: serde_json::to_string(planned).unwrap(),
        session_id: session_id.into(),
        release_at_unix_us: 0,
    }
}

/// The support's planned request for `provider`, in `region`.
pub fn planned_in(provider: &str, region: &str, deadline_ms: u64) -> PlannedRequest {
    let mut planned = planned(provider, deadline_ms);
    planned.identity.region = region.into();
    planned
}
