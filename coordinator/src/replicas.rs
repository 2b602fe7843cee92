//! Probe replicas: one load lane split over several probes of its region (docs/load.md, "Probe
//! replicas"). Each replica is a probe of its own to the sitting (its own session, health
//! monitor, clock offset and canaries, under the probe key `REGION#k`); a lane's requests are
//! shared out by one deterministic rule over the one seeded schedule:
//!
//! - open loop: release `k` of the lane goes to replica `k mod R`;
//! - closed loop: slot `s` of the lane is held by replica `s mod R`.
//!
//! Request ids are a pure function of the schedule position, never of the replica, so every id
//! is planned once whatever `R` is, and the records (each naming its replica) are pooled for
//! the metrics exactly as a single probe's are. Paired rounds keep one probe per region.

use crate::error::CoordinatorError;
use crate::faults::FaultBook;
use crate::health::{Monitors, RegionState};
use crate::probe_links::Infra;
use crate::session_open::ProbeSession;
use openbench_common::schedule::{Phase, Schedule};
use openbench_common::spec::Spec;
use openbench_proto::link::ProbeChannel;
use openbench_proto::v1::probe_client::ProbeClient;
use tokio::sync::{mpsc, watch};

/// One probe a lane sends through: its region's only probe, or one replica.
#[derive(Clone, Default)]
pub struct ReplicaLink {
    /// The replica's number (`k` of the region's `replicas`), `None` for a region's one probe.
    pub replica: Option<u32>,
    /// Its gRPC client.
    pub client: Option<ProbeClient<ProbeChannel>>,
    /// The session open on it now.
    pub session: Option<watch::Receiver<ProbeSession>>,
    /// Where a lane reports the session lost.
    pub lost: Option<mpsc::UnboundedSender<String>>,
    /// Its health state.
    pub state: Option<watch::Receiver<RegionState>>,
    /// Its clock offset, probe − coordinator, µs (0 when not measured): each replica's release
    /// times are translated by its own.
    pub clock_offset_us: i64,
}

/// The probe keys of `region`'s probes with their replica numbers: `[(eu, None)]` for a region
/// with one probe, `[(eu#0, Some(0)), (eu#1, Some(1)), …]` for a replicated one.
pub fn probe_keys(spec: &Spec, region: &str) -> Vec<(String, Option<u32>)> {
    let Some(found) = spec.regions.iter().find(|r| r.name == region) else {
        return vec![(region.to_string(), None)];
    };
    let replicated = !found.replicas.is_empty();
    (0u32..)
        .zip(found.probes())
        .map(|(k, (key, _))| (key, replicated.then_some(k)))
        .collect()
}

/// The links of every probe of `region`, in replica order (never empty: a region the sitting
/// has no probe for gets one link without a client, whose requests become harness records).
pub fn links(
    spec: &Spec,
    region: &str,
    infra: &Infra,
    monitors: &Monitors,
    faults: &FaultBook,
) -> Vec<ReplicaLink> {
    probe_keys(spec, region)
        .into_iter()
        .map(|(key, replica)| ReplicaLink {
            replica,
            client: infra.clients.get(&key).cloned(),
            session: monitors.sessions.get(&key).cloned(),
            lost: monitors.sessions_lost.get(&key).cloned(),
            state: monitors.states.get(&key).cloned(),
            clock_offset_us: faults.offset_us(&key).round() as i64,
        })
        .collect()
}

/// Which of `replicas` probes sends share `index` (an open loop's release number, a closed
/// loop's slot): `index mod replicas`.
pub fn share_of(index: u64, replicas: usize) -> usize {
    let replicas = replicas.max(1) as u64;
    usize::try_from(index % replicas).unwrap_or(0)
}

/// Refuses a plan with paired rounds when a region has replicas: a round launches one request
/// per lane together from one probe per region, and its launch skew is measured on that probe's
/// clock; split over replicas it would be measured across clocks. Names the field.
pub fn refuse_paired(spec: &Spec, plan: &Schedule) -> Result<(), CoordinatorError> {
    if !plan
        .phases
        .iter()
        .any(|p| matches!(p, Phase::PairedRounds(_)))
    {
        return Ok(());
    }
    match spec.regions.iter().position(|r| !r.replicas.is_empty()) {
        None => Ok(()),
        Some(i) => Err(CoordinatorError::Workflow(format!(
            "regions[{i}].replicas: region {} has probe replicas, which only load phases (open \
             and closed loops) use; paired rounds keep one probe per region so a round's lanes \
             launch together on one clock — give this workflow `probe` instead",
            spec.regions[i].name
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_go_round_the_replicas() {
        let owners: Vec<usize> = (0..7).map(|k| share_of(k, 3)).collect();
        assert_eq!(owners, [0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(share_of(5, 1), 0);
        assert_eq!(share_of(5, 0), 0);
    }
}
