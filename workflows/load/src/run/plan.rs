//! From the `load:` section to the runner's schedule: one load phase per step (its warm-up,
//! measured window and cool-down run as one stretch of load, so nothing drains between them),
//! lanes = providers × regions, each step's load split across a provider's regions.
//!
//! - **Open loop**: the provider's releases ([`OpenSchedule::releases`]) dealt round-robin to its
//!   regions, release k to region k mod K, so the regions together send exactly the step's
//!   arrival process and each sends its share on its own clock.
//! - **Closed loop**: N users per provider, region r getting ⌊N/K⌋ (+1 for r < N mod K), until the
//!   end of the cool-down: a time for a duration window; for a count window, `cooldown_s` after
//!   the send that closes the count (the step's sends over all its lanes).
//! - **Saturation search**: one step at a time ([`next_step`]), each rate from the records of the
//!   steps before (`metrics::saturation::next_rate`).

use super::agent::AgentSource;
use super::conversation::ConversationSource;
use super::workload::{StepSource, Workload};
use crate::arrivals::{OpenSchedule, Window, closed_window, ms_to_ns};
use crate::metrics::saturation::next_rate;
use crate::spec::{LoadSection, Measure, Step, StepModel};
use crate::trace::Traces;
use openbench_common::rundir::Lane;
use openbench_common::schedule::{LoadPhase, Pacing, Phase, RequestSource};
use std::sync::Arc;

/// Where a run's lanes sit: their labels and each one's region index.
#[derive(Debug, Clone)]
pub struct LaneLayout {
    /// Lanes in base order (providers in spec order, each in every region).
    pub lanes: Vec<Lane>,
    /// Region of each lane, as its index in the spec's region list.
    pub region_of: Vec<usize>,
    /// Regions (K): each provider's load is split across them.
    pub regions: usize,
    /// Whether each lane's provider is sent `ignore_eos` (`load.ignore_eos`).
    pub ignore_eos: Vec<bool>,
}

impl LaneLayout {
    /// The layout of `lanes` over `regions`, `ignore_eos` naming providers.
    pub fn new(lanes: Vec<Lane>, regions: &[String], ignore_eos: &[String]) -> LaneLayout {
        let region_of = lanes
            .iter()
            .map(|l| regions.iter().position(|r| *r == l.region).unwrap_or(0))
            .collect();
        let ignore_eos = lanes
            .iter()
            .map(|l| ignore_eos.contains(&l.provider))
            .collect();
        LaneLayout {
            lanes,
            region_of,
            regions: regions.len().max(1),
            ignore_eos,
        }
    }

    /// Users of region `r` when a provider has `n` split over the regions.
    pub fn users_of(&self, n: u32, r: usize) -> u32 {
        let k = self.regions as u32;
        n / k + u32::from((r as u32) < n % k)
    }
}

/// The measured window of a step. An open loop's comes from its schedule; a closed loop's count
/// window from `sends_ms`, the actual sends of every request of the step (all lanes, any
/// outcome; ms from the step's start). A count that never closed (a run stopped inside the
/// window) measures every send from the warm-up's end on.
pub fn window_of(step: &Step, seed: u64, sends_ms: &[f64]) -> Window {
    if let Some(schedule) = OpenSchedule::new(step, seed) {
        return schedule.window();
    }
    let mut sends_ns: Vec<u64> = sends_ms.iter().map(|&ms| ms_to_ns(ms)).collect();
    sends_ns.sort_unstable();
    closed_window(&step.phases, &sends_ns).unwrap_or_else(|| {
        // Only a count window waits for its sends; without its closing one, it ends after the last.
        let start_ns = closed_window(&step.phases, &[]).map_or(0, |w| w.start_ns);
        let end_ns = sends_ns
            .last()
            .map_or(start_ns, |&last| (last + 1).max(start_ns));
        Window {
            start_ns,
            end_ns,
            load_end_ns: end_ns,
        }
    })
}

/// Each lane's target rate in `step` (base order; `None` in a closed loop): the requests its
/// share of the schedule releases inside the measured window ÷ the window's length. For a
/// constant process that is the lane's share of the nominal rate; for Poisson it is the rate the
/// seeded draw actually asked for in the window, so arrival noise (±1/√n) is never read as the
/// client or the server falling behind.
pub fn lane_targets(step: &Step, seed: u64, layout: &LaneLayout) -> Vec<Option<f64>> {
    let Some(schedule) = OpenSchedule::new(step, seed) else {
        return vec![None; layout.lanes.len()];
    };
    let window = schedule.window();
    let mut in_window = vec![0u64; layout.regions];
    for release in schedule.releases() {
        if release.phase == crate::arrivals::Phase::Measured {
            in_window[(release.index % layout.regions as u64) as usize] += 1;
        }
    }
    let length_s = window.length_s();
    layout
        .region_of
        .iter()
        .map(|&r| {
            let n = in_window.get(r).copied().unwrap_or(0) as f64;
            Some(if length_s > 0.0 { n / length_s } else { 0.0 })
        })
        .collect()
}

/// The load phase of `step`.
pub fn step_phase(
    step: &Step,
    section: &LoadSection,
    layout: &LaneLayout,
    workload: &Arc<Workload>,
) -> Phase {
    // A ramped closed step says so in its name and load (unramped ones keep their bytes).
    let ramp = match section.ramp_up_s(step.written()) {
        Some(ramp_s) if !step.model.is_open() => format!(" ramp {ramp_s}s"),
        _ => String::new(),
    };
    let conversation = match (
        section.conversation(step.written()),
        section.agent(step.written()),
    ) {
        (Some(_), _) => " conversations",
        (None, Some(_)) => " agents",
        (None, None) => "",
    };
    let label = format!("{}{ramp}{conversation}", step.model.label());
    let name = match step.repeat {
        // Repeat r of written step s: the phase says both, so its records (which name the
        // phase) say which repeat they belong to.
        Some(r) => format!("step-{} repeat {}/{} {label}", r.step, r.repeat + 1, r.of),
        None => format!("step-{} {label}", step.index),
    };
    match step.model {
        StepModel::Open { .. }
        | StepModel::Gamma { .. }
        | StepModel::Ramp { .. }
        | StepModel::Trace { .. } => {
            let mut per_region = vec![Vec::new(); layout.regions];
            if let Some(schedule) = OpenSchedule::new(step, section.seed) {
                for release in schedule.releases() {
                    let r = (release.index % layout.regions as u64) as usize;
                    per_region[r].push(release.offset_ns as f64 / 1e6);
                }
            }
            let offsets_ms = layout
                .region_of
                .iter()
                .map(|&r| per_region.get(r).cloned().unwrap_or_default())
                .collect();
            let source = source_of(step, section, layout, workload);
            let source: Arc<dyn RequestSource> = match (
                section.conversation(step.written()),
                section.agent(step.written()),
            ) {
                (Some(c), _) => Arc::new(
                    ConversationSource::new(source, c.clone(), section.seed, step.index).open(),
                ),
                (None, Some(a)) => {
                    Arc::new(AgentSource::new(source, a.clone(), section.seed, step.index).open())
                }
                (None, None) => Arc::new(source),
            };
            Phase::OpenLoop(LoadPhase {
                name,
                load: step.model.label(),
                lanes: layout.lanes.clone(),
                pacing: Pacing::Releases {
                    offsets_ms,
                    max_in_flight: section.open_loop_in_flight(),
                },
                source,
            })
        }
        StepModel::Closed { concurrency } => {
            let users: Vec<u32> = layout
                .region_of
                .iter()
                .map(|&r| layout.users_of(concurrency, r))
                .collect();
            let pacing = match step.phases.measure {
                Measure::DurationS(_) => Pacing::Users {
                    users,
                    until_ms: window_of(step, section.seed, &[]).load_end_ns as f64 / 1e6,
                },
                Measure::Requests(requests) => Pacing::UsersToCount {
                    users,
                    from_ms: step.phases.warmup_s * 1000.0,
                    requests: u64::from(requests),
                    cooldown_ms: step.phases.cooldown_s * 1000.0,
                },
            };
            let source = source_of(step, section, layout, workload);
            let source: Arc<dyn RequestSource> = match (
                section.conversation(step.written()),
                section.agent(step.written()),
            ) {
                (Some(c), _) => Arc::new(ConversationSource::new(
                    source,
                    c.clone(),
                    section.seed,
                    step.index,
                )),
                (None, Some(a)) => Arc::new(AgentSource::new(
                    source,
                    a.clone(),
                    section.seed,
                    step.index,
                )),
                (None, None) => Arc::new(source),
            };
            Phase::ClosedLoop(LoadPhase {
                name,
                load: label,
                lanes: layout.lanes.clone(),
                pacing,
                source,
            })
        }
    }
}

/// The request source of `step`: how it numbers its requests and builds their prompts (a
/// `trace` step's from its file's lengths, seeded by the section's seed) and, for a closed step
/// with `ramp_up_s`, when each user starts.
pub fn source_of(
    step: &Step,
    section: &LoadSection,
    layout: &LaneLayout,
    workload: &Arc<Workload>,
) -> StepSource {
    let seed = section.seed;
    let source = match step.model {
        StepModel::Trace { .. } => StepSource::open(step.index, layout.regions, workload.clone())
            .with_trace(step.trace.clone(), seed),
        StepModel::Open { .. } | StepModel::Gamma { .. } | StepModel::Ramp { .. } => {
            StepSource::open(step.index, layout.regions, workload.clone())
        }
        StepModel::Closed { concurrency } => {
            let before: Vec<u32> = (0..layout.regions)
                .map(|r| (0..r).map(|q| layout.users_of(concurrency, q)).sum())
                .collect();
            StepSource::closed(step.index, concurrency, before, workload.clone())
                .with_ramp(section.ramp_up_s(step.written()))
        }
    };
    source.with_lanes(layout.region_of.clone(), layout.ignore_eos.clone())
}

/// The smoke: one request per lane (step 0's first prompt), one at a time.
pub fn smoke_phase(layout: &LaneLayout, workload: &Arc<Workload>) -> Phase {
    Phase::ClosedLoop(LoadPhase {
        name: "smoke".into(),
        load: StepModel::Closed { concurrency: 1 }.label(),
        lanes: layout.lanes.clone(),
        pacing: Pacing::Slots {
            concurrency: 1,
            per_slot: 1,
        },
        source: Arc::new(
            StepSource::open(0, layout.regions, workload.clone())
                .with_lanes(layout.region_of.clone(), layout.ignore_eos.clone()),
        ),
    })
}

/// The first steps of the run: a sweep's every step (its `trace` steps with their files from
/// `traces`); a search's first.
pub fn first_steps(section: &LoadSection, traces: &Traces) -> Vec<Step> {
    match &section.saturation {
        None => section.sweep_steps(traces),
        Some(search) => section
            .saturation_step(0, search.start_rate_per_s)
            .into_iter()
            .collect(),
    }
}

/// The next step of a saturation search after `history` (each step's rate and whether it was
/// sustained, in run order); `None` for a sweep or when the search is over.
pub fn next_step(section: &LoadSection, history: &[(f64, bool)]) -> Option<Step> {
    let search = section.saturation.as_ref()?;
    let rate = next_rate(search, history)?;
    section.saturation_step(history.len(), rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(regions: &[&str]) -> LaneLayout {
        let regions: Vec<String> = regions.iter().map(|r| r.to_string()).collect();
        let lanes = regions
            .iter()
            .map(|r| Lane {
                label: format!("p@{r}"),
                provider: "p".into(),
                region: r.clone(),
            })
            .collect();
        LaneLayout::new(lanes, &regions, &[])
    }

    #[test]
    fn users_split_across_regions_with_the_remainder_first() {
        let three = layout(&["a", "b", "c"]);
        let split = |n| (0..3).map(|r| three.users_of(n, r)).collect::<Vec<_>>();
        assert_eq!(split(7), [3, 2, 2]);
        assert_eq!(split(2), [1, 1, 0]);
        assert_eq!(split(9), [3, 3, 3]);
        assert_eq!(layout(&["only"]).users_of(5, 0), 5);
    }

    #[test]
    fn lane_targets_count_each_region_share_of_the_window() {
        let section: LoadSection = serde_json::from_value(serde_json::json!({
            "seed": 1,
            "phases": {"warmup_s": 1.0, "measure": {"duration_s": 2.0}, "cooldown_s": 0.0},
            "steps": [{"model": "constant", "rate_per_s": 5.0}],
            "workload": {"kind": "tasks"}
        }))
        .unwrap();
        let step = &section.sweep_steps(&Traces::new())[0];
        // Releases at k/5 s; the window [1, 3) s holds k = 5..=14: 10 of them, k odd at region
        // 1 (5, 7, 9, 11, 13) and k even at region 0 (6, 8, 10, 12, 14): 2.5/s each.
        assert_eq!(
            lane_targets(step, 1, &layout(&["a", "b"])),
            [Some(2.5), Some(2.5)]
        );
        assert_eq!(lane_targets(step, 1, &layout(&["a"])), [Some(5.0)]);
    }

    #[test]
    fn a_ramps_target_is_what_it_plans_in_the_window() {
        let section: LoadSection = serde_json::from_value(serde_json::json!({
            "seed": 1,
            "phases": {"warmup_s": 1.0, "measure": {"duration_s": 3.0}, "cooldown_s": 0.0},
            "steps": [{"model": "ramp", "arrivals": "constant", "from_rate_per_s": 2.0,
                       "to_rate_per_s": 6.0, "ramp_s": 4.0}],
            "workload": {"kind": "tasks"}
        }))
        .unwrap();
        let step = &section.sweep_steps(&Traces::new())[0];
        // Λ(t) = 2t + t²/2: Λ(1) = 2.5, Λ(4) = 16, so k = 3..=15 are due in [1, 4): 13 in 3 s,
        // 4.33/s: whole requests, not the 13.5 the ramp expects over the window (4.5/s).
        assert_eq!(lane_targets(step, 1, &layout(&["a"])), [Some(13.0 / 3.0)]);
        // Over two regions: k odd (3, 5, …, 15: 7) and k even (4, …, 14: 6).
        assert_eq!(
            lane_targets(step, 1, &layout(&["a", "b"])),
            [Some(6.0 / 3.0), Some(7.0 / 3.0)]
        );
    }

    #[test]
    fn a_ramped_closed_steps_users_start_at_their_planned_offsets() {
        use openbench_common::schedule::{LoadPosition, Next};
        let section: LoadSection = serde_json::from_value(serde_json::json!({
            "seed": 1,
            "phases": {"warmup_s": 3.0, "measure": {"duration_s": 2.0}, "cooldown_s": 0.0},
            "steps": [{"model": "closed", "concurrency": 4, "ramp_up_s": 2.0},
                      {"model": "closed", "concurrency": 4}],
            "workload": {"kind": "tasks"}
        }))
        .unwrap();
        let steps = section.sweep_steps(&Traces::new());
        let two = layout(&["a", "b"]);
        let workload = Arc::new(Workload::Tasks {
            items: Vec::new(),
            ceiling: 8,
        });
        let wait = |step: &Step, lane_index: usize, slot: u32, sequence: u64| {
            let Phase::ClosedLoop(load) = step_phase(step, &section, &two, &workload) else {
                panic!("a closed step plans a closed loop");
            };
            let at = LoadPosition {
                phase: 0,
                lane: two.lanes[lane_index].label.clone(),
                lane_index,
                slot,
                sequence,
            };
            match load.source.next(&at, &[]) {
                Next::Send { think_ms, .. } => (load.name, think_ms),
                Next::Stop => panic!("a load step never stops a slot"),
            }
        };
        // N = 4 users over 2 s, two per region: user g = (users before the region) + slot
        // starts g × 2000 / 4 ms in: region a's users 0 and 1 at 0 and 500 ms, region b's
        // users 2 and 3 at 1000 and 1500 ms; later requests go at once.
        let starts: Vec<f64> = [(0, 0), (0, 1), (1, 0), (1, 1)]
            .iter()
            .map(|&(lane, slot)| wait(&steps[0], lane, slot, 0).1)
            .collect();
        assert_eq!(starts, [0.0, 500.0, 1000.0, 1500.0]);
        assert_eq!(wait(&steps[0], 1, 1, 1).1, 0.0);
        assert_eq!(wait(&steps[0], 0, 0, 0).0, "step-0 closed c=4 ramp 2s");
        // Without a ramp every user starts at once, and the name is what it was.
        assert_eq!(wait(&steps[1], 1, 1, 0), ("step-1 closed c=4".into(), 0.0));
    }
}
