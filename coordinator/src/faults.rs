//! What the coordinator actor keeps about faults during a session: each region's link samples
//! and outages (from its [`crate::health`] monitor), the down policy's verdict, and the lanes
//! lost to an unreachable region, to be re-run at the end of the session (out of their round)
//! when their region is back.
//!
//! Owned by the actor's state; every method is plain bookkeeping (no I/O, no waiting).

use crate::health::{
    FaultPolicy, LinkEvent, PingSample, RegionDownPolicy, RegionState, summarize_link,
};
use crate::round_jobs::RoundJob;
use openbench_common::rundir::{RegionLink, RegionOutage};
use std::collections::{BTreeMap, BTreeSet};
use tokio::sync::watch;

/// A region the down policy gave up on.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionGone {
    /// Region label.
    pub region: String,
    /// How long it had been down, ms.
    pub down_for_ms: u64,
    /// What its last failed ping said.
    pub reason: String,
}

#[derive(Default)]
struct RegionBook {
    samples: Vec<PingSample>,
    latest_rtt_ms: Option<f64>,
    down_reason: Option<String>,
}

/// The fault bookkeeping of one session.
pub struct FaultBook {
    policy: FaultPolicy,
    regions: BTreeMap<String, RegionBook>,
    outages: Vec<RegionOutage>,
    /// Harness-failed lanes of this session, by round index (the round's job and the failed
    /// request ids), for the end-of-session re-run.
    failed: BTreeMap<u64, (RoundJob, BTreeSet<String>)>,
    /// True once the end-of-session re-run has been queued (it runs once).
    rerun_queued: bool,
}

impl FaultBook {
    /// Empty bookkeeping under `policy`.
    pub fn new(policy: FaultPolicy) -> FaultBook {
        FaultBook {
            policy,
            regions: BTreeMap::new(),
            outages: Vec::new(),
            failed: BTreeMap::new(),
            rerun_queued: false,
        }
    }

    /// Takes one monitor event; returns the region to give up on when the policy says stop.
    pub fn on_event(&mut self, region: &str, event: LinkEvent) -> Option<RegionGone> {
        let book = self.regions.entry(region.to_string()).or_default();
        match event {
            LinkEvent::Sample(sample) => {
                book.latest_rtt_ms = Some(sample.rtt_ms);
                book.samples.push(sample);
            }
            LinkEvent::Down {
                reason,
                detected_at,
                last_ok_at,
            } => {
                book.down_reason = Some(reason.clone());
                tracing::warn!(region, %reason, "region unreachable");
                self.outages.push(RegionOutage {
                    region: region.to_string(),
                    detected_at,
                    last_ok_at,
                    reason,
                    restored_at: None,
                });
            }
            LinkEvent::Up { at } => {
                book.down_reason = None;
                tracing::info!(region, "region reachable again");
                if let Some(outage) = self
                    .outages
                    .iter_mut()
                    .rev()
                    .find(|o| o.region == region && o.restored_at.is_none())
                {
                    outage.restored_at = Some(at);
                }
            }
            LinkEvent::StillDown { since } => {
                let down_for = since.elapsed();
                if self.policy.on_region_down == RegionDownPolicy::Stop
                    && down_for >= self.policy.stay_down
                {
                    return Some(RegionGone {
                        region: region.to_string(),
                        down_for_ms: down_for.as_millis() as u64,
                        reason: book.down_reason.clone().unwrap_or_default(),
                    });
                }
            }
        }
        None
    }

    /// A probe's wall-clock instant (µs) moved onto the coordinator's clock: minus the region's
    /// estimated offset (probe − coordinator).
    pub fn on_coordinator_clock(&self, region: &str, probe_us: i64) -> f64 {
        probe_us as f64 - self.offset_us(region)
    }

    /// Probe clock − coordinator clock of `region`, µs (0 before any sample).
    pub fn offset_us(&self, region: &str) -> f64 {
        self.regions
            .get(region)
            .and_then(|b| summarize_link(&b.samples))
            .map_or(0.0, |l| l.clock_offset_ms * 1000.0)
    }

    /// Region → its latest RTT, ms.
    pub fn latest_rtts(&self) -> BTreeMap<String, f64> {
        self.regions
            .iter()
            .filter_map(|(r, b)| Some((r.clone(), b.latest_rtt_ms?)))
            .collect()
    }

    /// Notes the lane `request_id` of `job`'s round lost to an unreachable region, for the
    /// end-of-session re-run.
    pub fn note_failed(&mut self, job: &RoundJob, request_id: &str) {
        if self.rerun_queued {
            return;
        }
        self.failed
            .entry(job.round.round_index)
            .or_insert_with(|| (job.clone(), BTreeSet::new()))
            .1
            .insert(request_id.to_string());
    }

    /// The end-of-session re-run (once): the failed lanes whose region is up now, one job per
    /// round, marked out of round. Lanes of a region still down wait for a resume.
    pub fn take_rerun(
        &mut self,
        states: &BTreeMap<String, watch::Receiver<RegionState>>,
    ) -> Vec<RoundJob> {
        if self.rerun_queued {
            return Vec::new();
        }
        self.rerun_queued = true;
        let up = |region: &str| {
            states
                .get(region)
                .is_some_and(|s| *s.borrow() == RegionState::Up)
        };
        std::mem::take(&mut self.failed)
            .into_values()
            .filter_map(|(job, ids)| {
                job.rerun(|lane| ids.contains(&lane.request_id) && up(&lane.region))
            })
            .collect()
    }

    /// Region → link figures, and every outage, for the session report.
    pub fn report(&self) -> (BTreeMap<String, RegionLink>, Vec<RegionOutage>) {
        let links = self
            .regions
            .iter()
            .filter_map(|(r, b)| Some((r.clone(), summarize_link(&b.samples)?)))
            .collect();
        (links, self.outages.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::{LinkSettings, PingSample};
    use openbench_common::request::ChatMessage;
    use openbench_common::rundir::{Plan, PlanKind, PlannedLane, PlannedRound};
    use openbench_common::schedule::RoundPrompts;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// Rounds whose messages are empty: these tests look only at lanes and ids.
    struct NoPrompts;

    impl RoundPrompts for NoPrompts {
        fn check(&self, _round: &PlannedRound) -> Result<(), String> {
            Ok(())
        }
        fn messages(&self, _round: &PlannedRound) -> Vec<ChatMessage> {
            Vec::new()
        }
    }

    fn lane(region: &str, id: &str) -> PlannedLane {
        PlannedLane {
            provider: "p".into(),
            region: region.into(),
            lane: format!("p@{region}"),
            request_id: id.into(),
        }
    }

    fn round(index: u64, lanes: Vec<PlannedLane>) -> PlannedRound {
        PlannedRound {
            round_index: index,
            round_id: format!("round-{index}"),
            task_family: "ticket-triage".into(),
            item_id: "i".into(),
            item_hash: String::new(),
            requests: lanes.into(),
        }
    }

    /// One job per round of a small plan: round 2 (east req-2), round 4 (west req-1, east
    /// req-x, west req-3) and round 5 (west req-4).
    fn jobs() -> BTreeMap<u64, RoundJob> {
        let plan = Plan {
            plan_version: 1,
            kind: PlanKind::Full,
            attempt: 0,
            benchmark_slug: String::new(),
            schedule_version: String::new(),
            dataset_release_hash: String::new(),
            families: vec!["ticket-triage".into()],
            lanes: Vec::new(),
            items_per_family: 1,
            repeats: None,
            rounds: vec![
                round(2, vec![lane("east", "req-2")]),
                round(
                    4,
                    vec![
                        lane("west", "req-1"),
                        lane("east", "req-x"),
                        lane("west", "req-3"),
                    ],
                ),
                round(5, vec![lane("west", "req-4")]),
            ],
        };
        crate::round_jobs::jobs(
            Arc::new(plan),
            Arc::new(NoPrompts),
            "run",
            0,
            &BTreeSet::new(),
        )
        .unwrap()
        .into_iter()
        .map(|job| (job.round.round_index, job))
        .collect()
    }

    fn policy(on_region_down: RegionDownPolicy) -> FaultPolicy {
        FaultPolicy {
            on_region_down,
            stay_down: Duration::from_secs(60),
            link: LinkSettings::default(),
        }
    }

    #[test]
    fn stop_gives_up_only_after_the_region_stayed_down_long_enough() {
        let mut stop = FaultBook::new(policy(RegionDownPolicy::Stop));
        let down = LinkEvent::Down {
            reason: "health ping unanswered after 2000 ms".into(),
            detected_at: "t1".into(),
            last_ok_at: Some("t0".into()),
        };
        assert_eq!(stop.on_event("west", down.clone()), None);
        let recent = Instant::now();
        assert_eq!(
            stop.on_event("west", LinkEvent::StillDown { since: recent }),
            None
        );
        let long_ago = Instant::now() - Duration::from_secs(61);
        let gone = stop
            .on_event("west", LinkEvent::StillDown { since: long_ago })
            .unwrap();
        assert_eq!(gone.region, "west");
        assert!(gone.down_for_ms >= 61_000, "{gone:?}");
        assert_eq!(gone.reason, "health ping unanswered after 2000 ms");
        let mut go_on = FaultBook::new(policy(RegionDownPolicy::Continue));
        go_on.on_event("west", down);
        assert_eq!(
            go_on.on_event("west", LinkEvent::StillDown { since: long_ago }),
            None
        );
        // The outage is closed when the region answers again.
        stop.on_event("west", LinkEvent::Up { at: "t2".into() });
        let (_, outages) = stop.report();
        assert_eq!(outages.len(), 1);
        assert_eq!(outages[0].restored_at.as_deref(), Some("t2"));
        assert_eq!(outages[0].last_ok_at.as_deref(), Some("t0"));
    }

    #[test]
    fn probe_instants_move_onto_the_coordinators_clock_by_the_fastest_samples_offset() {
        let mut book = FaultBook::new(policy(RegionDownPolicy::Stop));
        let sample = |sent_us, probe_us, received_us: i64| {
            LinkEvent::Sample(PingSample {
                sent_us,
                probe_us,
                received_us,
                rtt_ms: (received_us - sent_us) as f64 / 1000.0,
            })
        };
        // West runs 250 ms ahead (fastest sample: midpoint 1 002 000, probe 1 252 000); a slow,
        // asymmetric sample (offset 265 ms) must not be the one used. East has no samples.
        book.on_event("west", sample(2_000_000, 2_285_000, 2_040_000));
        book.on_event("west", sample(1_000_000, 1_252_000, 1_004_000));
        assert_eq!(book.on_coordinator_clock("west", 5_250_000), 5_000_000.0);
        assert_eq!(book.on_coordinator_clock("east", 5_000_000), 5_000_000.0);
        assert_eq!(book.latest_rtts()["west"], 4.0);
    }

    #[test]
    fn the_rerun_takes_failed_lanes_of_regions_that_are_up_once_and_out_of_round() {
        let mut book = FaultBook::new(policy(RegionDownPolicy::Continue));
        let jobs_by_round = jobs();
        book.note_failed(&jobs_by_round[&4], "req-1");
        book.note_failed(&jobs_by_round[&2], "req-2");
        book.note_failed(&jobs_by_round[&4], "req-3");
        let (_up_tx, up) = watch::channel(RegionState::Up);
        let (_down_tx, down) = watch::channel(RegionState::Down {
            reason: "refused".into(),
        });
        let states = BTreeMap::from([("west".to_string(), up), ("east".to_string(), down)]);
        let jobs = book.take_rerun(&states);
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].round.round_index, 4);
        assert!(jobs[0].out_of_round);
        let ids: Vec<String> = jobs[0].lanes().map(|l| l.request_id.clone()).collect();
        assert_eq!(ids, ["req-1", "req-3"]);
        // Once only: a failure during the re-run waits for a resume.
        book.note_failed(&jobs_by_round[&5], "req-4");
        assert!(book.take_rerun(&states).is_empty());
    }
}
