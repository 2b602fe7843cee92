//! What a coordinator sends a probe when it opens a session (`OpenSession`): the run, its lock,
//! the region, the request contract and the adapters. The adapters name credential variables,
//! never values: the probe keeps the credentials and refuses a session it cannot serve.

use crate::spec::{ProviderAdapter, RequestContract, Spec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// The words of a probe's refusal of an `Execute` that names a session it does not have open
/// (`session S is not open on the probe in region R`): what a restarted probe answers. The
/// coordinator, reading them, records the lane as unreachable and opens the session again.
pub const SESSION_NOT_OPEN: &str = "is not open on the probe in region";

/// The most requests a session may ask a probe to hold in flight on one provider lane: the load
/// workflow's largest concurrency (and open-loop bound) per lane. Each request in flight holds
/// one connection to the provider (one file descriptor), so one session can never make a probe
/// open more than this many per lane.
pub const MAX_IN_FLIGHT: u32 = 10_000;

/// The most requests one probe holds in flight at once, over every lane of its session: twice
/// the per-lane maximum a spec may ask for ([`MAX_IN_FLIGHT`]), each holding one upstream
/// connection and one gRPC stream. A session whose lanes could together ask for more is refused
/// at open by the probe, and a load spec that would ask for more is refused at `init`.
pub const MAX_PROBE_IN_FLIGHT: u64 = 20_000;

/// The session a coordinator opens on a probe before round 1: one source of truth for what the
/// probe executes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionOpen {
    /// Run id: every `Execute` of the session must be for this run.
    pub run_id: String,
    /// sha256 of the run's lock (`run-lock.json`), naming the locked inputs.
    pub lock_sha256: String,
    /// Region the coordinator expects this probe to serve.
    pub region: String,
    /// The request contract: timeout (the bound on every deadline), sampling, limits.
    pub contract: RequestContract,
    /// The providers this session opens, as in the spec (endpoints may be `env://` or `sim://`;
    /// the probe resolves them).
    pub adapters: Vec<ProviderAdapter>,
    /// How many requests each provider lane of the session may have in flight at once on this
    /// probe: the probe refuses the next one as busy. Absent or 0 means 1 (one request at a
    /// time, what a coordinator that does not send the field expects); it is left out of the
    /// JSON when it is 1 or less, so such a session is the bytes an older probe accepts.
    #[serde(default, skip_serializing_if = "at_most_one")]
    pub max_in_flight: u32,
}

/// True for the in-flight bounds that mean one request at a time (absent, 0 or 1).
fn at_most_one(n: &u32) -> bool {
    *n <= 1
}

impl SessionOpen {
    /// The session of run `run_id` (locked as `lock_sha256`) in `region`: `spec`'s request
    /// contract and every one of its providers, as the spec writes them.
    pub fn of_spec(run_id: &str, lock_sha256: &str, region: &str, spec: &Spec) -> SessionOpen {
        SessionOpen {
            run_id: run_id.to_string(),
            lock_sha256: lock_sha256.to_string(),
            region: region.to_string(),
            contract: spec.request.clone(),
            adapters: spec.providers.clone(),
            max_in_flight: 1,
        }
    }

    /// How many requests each provider lane may have in flight at once: `max_in_flight`, with
    /// absent or 0 read as 1.
    pub fn lane_in_flight(&self) -> u32 {
        self.max_in_flight.max(1)
    }

    /// Every rule the session breaks, each naming its field: the same rules a spec's contract
    /// and adapters follow, plus a run id, a region and unique provider keys.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.run_id.trim().is_empty() {
            problems.push("run_id: must not be empty".to_string());
        }
        if self.region.trim().is_empty() {
            problems.push("region: must not be empty".to_string());
        }
        problems.extend(self.contract.problems());
        if self.adapters.is_empty() {
            problems.push("adapters: must list at least one provider".to_string());
        }
        if self.max_in_flight > MAX_IN_FLIGHT {
            problems.push(format!(
                "max_in_flight: {} is above {MAX_IN_FLIGHT}",
                self.max_in_flight
            ));
        }
        let mut keys = BTreeSet::new();
        for (i, adapter) in self.adapters.iter().enumerate() {
            let at = format!("adapters[{i}] ({})", adapter.key);
            problems.extend(adapter.problems(&at));
            if !keys.insert(adapter.key.as_str()) {
                problems.push(format!("{at}.key: {:?} is listed twice", adapter.key));
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_checked_by_the_spec_rules_naming_each_field() {
        let mut adapter = ProviderAdapter::open("together", "https://x.test/v1", "m");
        adapter
            .extra_body
            .insert("temperature".into(), serde_json::json!(1.7));
        let session = SessionOpen {
            run_id: String::new(),
            lock_sha256: "aa".into(),
            region: "eu".into(),
            contract: RequestContract::reference(0),
            adapters: vec![adapter.clone(), adapter],
            max_in_flight: 10_001,
        };
        assert_eq!(
            session.problems(),
            [
                "run_id: must not be empty",
                "request.timeout_ms: 0 is outside 1..=600000",
                "max_in_flight: 10001 is above 10000",
                "adapters[0] (together).extra_body.temperature: the contract owns this field",
                "adapters[1] (together).extra_body.temperature: the contract owns this field",
                "adapters[1] (together).key: \"together\" is listed twice",
            ]
        );
    }

    #[test]
    fn one_in_flight_is_left_out_so_older_probes_read_the_same_session() {
        let adapter = ProviderAdapter::open("together", "https://x.test/v1", "m");
        let mut session = SessionOpen {
            run_id: "run-1".into(),
            lock_sha256: "aa".into(),
            region: "eu".into(),
            contract: RequestContract::reference(1000),
            adapters: vec![adapter],
            max_in_flight: 1,
        };
        let one = serde_json::to_string(&session).unwrap();
        assert!(!one.contains("max_in_flight"), "{one}");
        let read: SessionOpen = serde_json::from_str(&one).unwrap();
        assert_eq!((read.max_in_flight, read.lane_in_flight()), (0, 1));
        session.max_in_flight = 4;
        let four = serde_json::to_string(&session).unwrap();
        assert!(four.ends_with(",\"max_in_flight\":4}"), "{four}");
        let read: SessionOpen = serde_json::from_str(&four).unwrap();
        assert_eq!(read.lane_in_flight(), 4);
    }
}
