//! What a sitting measures of its own runtimes (docs/validity.md): stall canaries on the
//! coordinator's runtime and on its link thread (which stamps the pings the clock offsets come
//! from) for the sitting's life, and each probe's canaries, asked for with `Health` as the
//! sitting ends. The result is one [`SittingHealth`] in the manifest.

use crate::probe_links::Infra;
use openbench_common::validity::canary::Canary;
use openbench_common::validity::{RuntimeHealth, SittingHealth};
use openbench_proto::v1::HealthRequest;
use std::time::Duration;

/// How long a probe may take to answer `Health` before the sitting ends without its canaries.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);

/// The coordinator's canaries of one sitting.
pub(crate) struct SittingCanaries(Vec<Canary>);

impl SittingCanaries {
    /// Starts the coordinator's canaries: on the runtime this runs on and on `infra`'s link
    /// runtime.
    pub(crate) fn start(infra: &Infra) -> SittingCanaries {
        SittingCanaries(vec![
            Canary::start("coordinator", &tokio::runtime::Handle::current()),
            Canary::start("coordinator-link", infra.link_runtime.handle()),
        ])
    }

    /// The sitting's health: these canaries' summaries and every probe's answer. A probe that
    /// cannot answer (an older build, gone, slow) is listed with no canaries and a warning.
    pub(crate) async fn finish(self, infra: &Infra, session: u32, attempt: u32) -> SittingHealth {
        let coordinator = self.0.iter().map(Canary::summary).collect();
        let mut probes = std::collections::BTreeMap::new();
        for (region, client) in &infra.clients {
            let Some(open) = infra.sessions.get(region) else {
                continue;
            };
            let health = probe_health(region, client.clone(), &open.session_id).await;
            probes.insert(region.clone(), health);
        }
        SittingHealth {
            session,
            attempt,
            coordinator,
            probes,
        }
    }
}

/// `region`'s probe canaries for `session_id`; empty (with a warning) when it cannot say.
async fn probe_health(
    region: &str,
    mut client: openbench_proto::v1::probe_client::ProbeClient<openbench_proto::link::ProbeChannel>,
    session_id: &str,
) -> Vec<RuntimeHealth> {
    let request = HealthRequest {
        session_id: session_id.to_string(),
    };
    let answer = tokio::time::timeout(HEALTH_TIMEOUT, client.health(request)).await;
    let json = match answer {
        Ok(Ok(response)) => response.into_inner().health_json,
        Ok(Err(status)) => {
            tracing::warn!(region, code = ?status.code(), "probe health not available");
            return Vec::new();
        }
        Err(_) => {
            tracing::warn!(region, "probe health not answered in time");
            return Vec::new();
        }
    };
    serde_json::from_str(&json).unwrap_or_else(|e| {
        tracing::warn!(region, error = %e, "probe health is not a RuntimeHealth list");
        Vec::new()
    })
}
