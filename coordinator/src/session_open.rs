//! Before round 1, on every region's probe: `Describe` (refused when the probe runs other code or
//! another tokenizer, naming the region and the field), then `OpenSession` with the run, the
//! lock hash, the region, the request contract, the adapters as the spec writes them and how
//! many requests a lane may have in flight ([`LANE_MAX_IN_FLIGHT`]). The probe answers with the session id every `Execute` carries and the probe id records name.
//!
//! A probe that cannot be asked (no token, wrong token, unreachable) or refuses the session (a
//! missing credential, naming the provider and variable) stops the session here, before any
//! record is written.

use crate::error::CoordinatorError;
use crate::lock::{lock_sha256, short};
use crate::run_dir::{RunDir, RunInputs};
use openbench_common::probe_session::SessionOpen;
use openbench_common::rundir::SessionProbe;
use openbench_proto::link::{ProbeChannel, open_session};
use openbench_proto::v1::probe_client::ProbeClient;
use openbench_proto::v1::{DescribeRequest, ProbeIdentity};
use std::time::Duration;

/// How long a probe may take to answer `Describe` or `OpenSession` (opening builds one HTTP
/// client per provider and, the first time, the tokenizer: well under a second).
const SETUP_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How many requests each lane has in flight at once: one, since paired rounds send a lane its
/// next request only after its last one ended. The probe refuses a second caller as busy.
pub const LANE_MAX_IN_FLIGHT: u32 = 1;

/// One region's open session: what its `Execute` calls carry and its records name.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSession {
    /// The id the probe gave the session.
    pub session_id: String,
    /// The probe, as it described itself (its id is what records name).
    pub probe: SessionProbe,
}

/// Checks `region`'s probe and opens this run's session on it.
pub async fn open(
    region: &str,
    client: &mut ProbeClient<ProbeChannel>,
    inputs: &RunInputs,
    run: &RunDir,
) -> Result<ProbeSession, CoordinatorError> {
    SessionOpener::new(region, client.clone(), inputs, run)
        .open()
        .await
}

/// What it takes to (re-)open this run's session on one region's probe: the health monitor
/// keeps one per region and opens the session again when the region comes back, because a
/// restarted probe knows no session and refuses every `Execute` until one is opened.
#[derive(Debug, Clone)]
pub struct SessionOpener {
    region: String,
    client: ProbeClient<ProbeChannel>,
    session: SessionOpen,
    code_sha256: String,
    tokenizer_sha256: String,
}

impl SessionOpener {
    /// The opener of `run`'s session on `region`'s probe behind `client`.
    pub fn new(
        region: &str,
        client: ProbeClient<ProbeChannel>,
        inputs: &RunInputs,
        run: &RunDir,
    ) -> SessionOpener {
        let mut session = SessionOpen::of_spec(
            run.run_id(),
            &lock_sha256(&run.lock),
            region,
            &inputs.spec.spec,
        );
        session.max_in_flight = LANE_MAX_IN_FLIGHT;
        SessionOpener {
            region: region.to_string(),
            client,
            session,
            code_sha256: inputs.code_sha256.clone(),
            tokenizer_sha256: run.lock.tokenizer_ranks_sha256.clone(),
        }
    }

    /// The same opener asking the probe to let each lane hold `lane_in_flight` requests at once
    /// (a schedule with load phases; paired rounds keep [`LANE_MAX_IN_FLIGHT`]).
    pub fn in_flight(mut self, lane_in_flight: u32) -> SessionOpener {
        self.session.max_in_flight = lane_in_flight.max(LANE_MAX_IN_FLIGHT);
        self
    }

    /// `Describe` (refused when the probe runs other code or another tokenizer), then
    /// `OpenSession`: the session every `Execute` names from now on.
    pub async fn open(&mut self) -> Result<ProbeSession, CoordinatorError> {
        let region = self.region.as_str();
        let client = &mut self.client;
        let described = call(region, "Describe", client.describe(DescribeRequest {})).await?;
        let identity = described
            .identity
            .ok_or_else(|| CoordinatorError::ProbeMismatch {
                region: region.to_string(),
                field: "identity".into(),
                message: "the probe does not describe its build (an older version?)".into(),
            })?;
        check_identity(region, &identity, &self.code_sha256, &self.tokenizer_sha256)?;
        let opened = call(region, "OpenSession", open_session(client, &self.session)).await?;
        Ok(ProbeSession {
            session_id: opened.session_id,
            probe: SessionProbe {
                probe_id: opened.probe_id,
                version: identity.version,
                host_fingerprint: identity.host_fingerprint,
                clock_source: identity.clock_source,
            },
        })
    }
}

/// Refuses a probe whose code digest or tokenizer differs from this run's, naming the field.
pub fn check_identity(
    region: &str,
    identity: &ProbeIdentity,
    code_sha256: &str,
    tokenizer_sha256: &str,
) -> Result<(), CoordinatorError> {
    let fields = [
        (
            "code_digest",
            &identity.code_digest,
            code_sha256,
            "the probe was built from other sources",
        ),
        (
            "tokenizer_sha256",
            &identity.tokenizer_sha256,
            tokenizer_sha256,
            "the probe counts tokens with other ranks",
        ),
    ];
    for (field, probe, expected, why) in fields {
        if probe != expected {
            return Err(CoordinatorError::ProbeMismatch {
                region: region.to_string(),
                field: field.to_string(),
                message: format!(
                    "the probe has {}…, this run has {}…: {why}",
                    short(probe),
                    short(expected)
                ),
            });
        }
    }
    Ok(())
}

/// One setup call, bounded by [`SETUP_CALL_TIMEOUT`]; a refusal names the region and the RPC.
async fn call<T>(
    region: &str,
    rpc: &str,
    future: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T, CoordinatorError> {
    let refused = |message: String| CoordinatorError::ProbeRefused {
        region: region.to_string(),
        rpc: rpc.to_string(),
        message,
    };
    match tokio::time::timeout(SETUP_CALL_TIMEOUT, future).await {
        Err(_) => Err(refused(format!(
            "no answer within {} s",
            SETUP_CALL_TIMEOUT.as_secs()
        ))),
        Ok(Err(status)) => Err(refused(format!(
            "{:?}: {}",
            status.code(),
            status.message()
        ))),
        Ok(Ok(response)) => Ok(response.into_inner()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_with_other_code_or_tokenizer_is_refused_by_field() {
        let identity = ProbeIdentity {
            code_digest: "c0de".repeat(16),
            tokenizer_sha256: "70ce".repeat(16),
            ..ProbeIdentity::default()
        };
        let code = "c0de".repeat(16);
        let tok = "70ce".repeat(16);
        assert!(check_identity("eu", &identity, &code, &tok).is_ok());
        let err = check_identity("eu", &identity, &"beef".repeat(16), &tok).unwrap_err();
        assert_eq!(
            err.to_string(),
            "region eu: the probe's code_digest differs: the probe has c0dec0dec0de…, this run \
             has beefbeefbeef…: the probe was built from other sources"
        );
        let err = check_identity("eu", &identity, &code, &"feed".repeat(16)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("region eu: the probe's tokenizer_sha256 differs"),
            "{err}"
        );
    }
}
