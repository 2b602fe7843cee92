//! A load run's raw files read back into what the rules and the report need: the steps that
//! ran (a saturation search's replayed from its records), every request as a
//! [`RequestSample`], and the settings of the rules.

use super::conversation::{ConversationSource, Sent, TURN_MARK, follow_up};
use super::plan::{LaneLayout, first_steps, lane_targets, next_step, source_of, window_of};
use super::workload::Workload;
use crate::arrivals::Window;
use crate::metrics::step::{StepSettings, step_metrics};
use crate::metrics::{RequestSample, Slo};
use crate::report::turns::SampleTurn;
use crate::report::{LaneLoad, LoadResults, ReportSettings, StepResults};
use crate::spec::{LoadSection, Step, StepModel, WorkloadSpec};
use crate::trace::Traces;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::schedule::LoadPosition;
use openbench_tasks::scoring::{GoldRef, score_answer};

pub use openbench_report_kit::request::events::{
    AnswerEvents, AnswerStream, READ_COALESCE_MS, answer_events,
};
pub use openbench_report_kit::request::sample_of;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// What reading a run needs besides its records.
pub struct RunContext {
    /// The checked section.
    pub section: LoadSection,
    /// Lanes and regions.
    pub layout: LaneLayout,
    /// The prompts.
    pub workload: Arc<Workload>,
    /// Gold answers by item id (the `tasks` workload only).
    pub gold: Option<BTreeMap<String, GoldRef>>,
    /// The `trace` steps' files, by step index.
    pub traces: Traces,
}

impl RunContext {
    /// Whether a record's answer was exactly right (`None` without scoring, and for a
    /// conversation's follow-up turn without a gold): a failed request is not right.
    pub fn correct(&self, record: &TerminalRecord) -> Option<bool> {
        let gold = self.gold.as_ref()?;
        if let Some((key, turn)) = record.item_id.split_once(TURN_MARK) {
            let gold = self.follow_up_gold(key, turn.parse().ok()?)?;
            return Some(
                record.outcome == Outcome::Completed
                    && score_answer(&gold, &record.answer_text).correct,
            );
        }
        Some(
            record.outcome == Outcome::Completed
                && gold
                    .get(&record.item_id)
                    .is_some_and(|g| score_answer(g, &record.answer_text).correct),
        )
    }

    /// The gold of a conversation's follow-up at `turn` on task item `key` (a meeting note's
    /// line: [`follow_up`]); `None` for a follow-up without one.
    fn follow_up_gold(&self, key: &str, turn: u64) -> Option<GoldRef> {
        let Workload::Tasks { items, .. } = &*self.workload else {
            return None;
        };
        let item = items.iter().find(|i| i.item_id == key)?;
        let value = follow_up(&item.group, &item.user, turn).gold?;
        Some(GoldRef::MeetingNotes {
            value,
            aliases: Vec::new(),
        })
    }

    /// The load of each lane in `step` (an open loop's target: [`lane_targets`]).
    pub fn lane_loads(&self, step: &Step) -> Vec<LaneLoad> {
        let targets = lane_targets(step, self.section.seed, &self.layout);
        self.layout
            .lanes
            .iter()
            .zip(&self.layout.region_of)
            .zip(targets)
            .map(|((lane, &r), target)| LaneLoad {
                lane: lane.label.clone(),
                provider: lane.provider.clone(),
                region: lane.region.clone(),
                target_rate_per_s: target,
                concurrency: match step.model {
                    StepModel::Closed { concurrency } => Some(self.layout.users_of(concurrency, r)),
                    _ => None,
                },
            })
            .collect()
    }

    /// The measured window of `step` whose requests are `records` (a closed loop's count window
    /// closes on their actual sends: [`window_of`]).
    pub fn window(&self, step: &Step, records: &[&TerminalRecord]) -> Window {
        let sends: Vec<f64> = records.iter().filter_map(|r| r.sent_offset_ms).collect();
        window_of(step, self.section.seed, &sends)
    }

    /// True when some lane sustained `step`, whose requests are `records` (the search goes on
    /// while any provider keeps up, so every lane's saturation point is bracketed), each lane
    /// against its own target. Harness failures are set apart, as the report does.
    pub fn sustained(&self, step: &Step, records: &[&TerminalRecord]) -> bool {
        let window = self.window(step, records);
        let samples: Vec<RequestSample> = records
            .iter()
            .filter(|r| r.outcome != Outcome::HarnessError)
            .map(|r| {
                let mut sample = sample_of(r, None, 0, self.correct(r));
                sample.held_tokens = self.held_tokens(step, r);
                sample
            })
            .collect();
        self.lane_loads(step).iter().any(|lane| {
            let settings = StepSettings {
                window,
                target_rate_per_lane: lane.target_rate_per_s,
                sustain_fraction: self.section.sustain_fraction,
                goodput_threshold: self.section.goodput_threshold,
                slo: Slo::from_spec(&self.section.slo),
            };
            let mine: Vec<&RequestSample> =
                samples.iter().filter(|s| s.lane == lane.lane).collect();
            step_metrics(&mine, &settings, 1).sustained
        })
    }

    /// The output length the record's request held (`max_tokens` sent with `ignore_eos`), rebuilt
    /// from its position as the request was; `None` when the length was a ceiling only (the
    /// provider is not in `load.ignore_eos`, or the `tasks` workload keeps the contract's).
    pub fn held_tokens(&self, step: &Step, record: &TerminalRecord) -> Option<u64> {
        let lane_index = self
            .layout
            .lanes
            .iter()
            .position(|l| l.label == record.lane)?;
        let held = self
            .layout
            .ignore_eos
            .get(lane_index)
            .copied()
            .unwrap_or(false);
        if !held || (matches!(*self.workload, Workload::Tasks { .. }) && step.trace.is_none()) {
            return None;
        }
        let at = self.position(step, record, lane_index);
        let built = source_of(step, &self.section, &self.layout, &self.workload).built(&at);
        Some(u64::from(built.prompt.max_output_tokens))
    }

    fn position(&self, step: &Step, record: &TerminalRecord, lane_index: usize) -> LoadPosition {
        LoadPosition {
            phase: step.index as u32,
            lane: record.lane.clone(),
            lane_index,
            slot: record.slot.unwrap_or(0),
            sequence: record.sequence.unwrap_or(0),
        }
    }

    /// What each of `records` sent when `step` holds conversations (its turn and context
    /// length, by request id, replayed as a resume does); `None` for any other step.
    pub fn conversation_sent(
        &self,
        step: &Step,
        records: &[&TerminalRecord],
    ) -> Option<HashMap<String, Sent>> {
        let conversation = self.section.conversation(step.written())?;
        let base = source_of(step, &self.section, &self.layout, &self.workload);
        let mut source =
            ConversationSource::new(base, conversation.clone(), self.section.seed, step.index);
        if step.model.is_open() {
            source = source.open();
        }
        let lanes = &self.layout.lanes;
        Some(source.replay(
            step.index as u32,
            |label| lanes.iter().position(|l| l.label == label),
            records,
        ))
    }

    /// o200k tokens of the prompt the record's request sent, rebuilt from its position.
    pub fn input_tokens(&self, step: &Step, record: &TerminalRecord) -> u64 {
        let Some(lane_index) = self
            .layout
            .lanes
            .iter()
            .position(|l| l.label == record.lane)
        else {
            return 0;
        };
        let at = self.position(step, record, lane_index);
        source_of(step, &self.section, &self.layout, &self.workload)
            .built(&at)
            .prompt
            .input_tokens
    }
}

/// The full run's records of each phase (step), in phase order, each phase's in schedule order
/// (lane, slot, sequence): the records of a lane split over probe replicas, written as each
/// ended, merge back into the one schedule they were shared out of (docs/load.md, "Probe
/// replicas").
pub fn by_phase(records: &BTreeMap<String, TerminalRecord>) -> BTreeMap<u32, Vec<&TerminalRecord>> {
    let mut out: BTreeMap<u32, Vec<&TerminalRecord>> = BTreeMap::new();
    for r in records.values() {
        if let Some(phase) = r.phase {
            out.entry(phase).or_default().push(r);
        }
    }
    for phase in out.values_mut() {
        phase.sort_by(|a, b| {
            (&a.lane, a.slot, a.sequence, &a.request_id).cmp(&(
                &b.lane,
                b.slot,
                b.sequence,
                &b.request_id,
            ))
        });
    }
    out
}

/// The steps that ran, each with its records: a sweep's steps that have records; a search's
/// replayed one by one, each next rate from the verdicts of the steps before.
pub fn steps_run<'a>(
    ctx: &RunContext,
    records: &'a BTreeMap<String, TerminalRecord>,
) -> Vec<(Step, Vec<&'a TerminalRecord>)> {
    let mut phases = by_phase(records);
    let mut steps: Vec<Step> = first_steps(&ctx.section, &ctx.traces);
    let mut history = Vec::new();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(step) = steps.get(i).cloned() {
        let Some(mine) = phases.remove(&(i as u32)) else {
            break;
        };
        if ctx.section.saturation.is_some() {
            let rate = step.model.target_rate().unwrap_or(0.0);
            history.push((rate, ctx.sustained(&step, &mine)));
            steps.extend(next_step(&ctx.section, &history));
        }
        out.push((step, mine));
        i += 1;
    }
    out
}

/// Everything the report is computed from, read from a run's records and events.
pub fn results_of(
    ctx: &RunContext,
    run_id: &str,
    records: &BTreeMap<String, TerminalRecord>,
    chunks: &BTreeMap<String, AnswerStream>,
    ceiling_notes: Vec<String>,
) -> LoadResults {
    let mut replica_harness_failures: BTreeMap<String, u64> = BTreeMap::new();
    for r in records.values() {
        if let (Outcome::HarnessError, Some(k)) = (r.outcome, r.replica) {
            let key = format!(
                "{}{}{k}",
                r.region,
                openbench_common::spec::REPLICA_SEPARATOR
            );
            *replica_harness_failures.entry(key).or_default() += 1;
        }
    }
    let steps = steps_run(ctx, records)
        .into_iter()
        .map(|(step, mine)| {
            let window = ctx.window(&step, &mine);
            let sittings: BTreeSet<u32> = mine.iter().filter_map(|r| r.sitting).collect();
            let harness_failures = mine
                .iter()
                .filter(|r| r.outcome == Outcome::HarnessError)
                .count() as u64;
            let mut kept: Vec<&TerminalRecord> = mine
                .into_iter()
                .filter(|r| r.outcome != Outcome::HarnessError)
                .collect();
            kept.sort_by(|a, b| (&a.lane, a.slot, a.sequence).cmp(&(&b.lane, b.slot, b.sequence)));
            let sent = ctx.conversation_sent(&step, &kept);
            let turns = match &sent {
                Some(sent) => kept
                    .iter()
                    .map(|r| SampleTurn {
                        turn: sent.get(&r.request_id).map_or(0, |s| s.turn),
                        cached_tokens: r.usage.as_ref().and_then(|u| u.cached_tokens),
                    })
                    .collect(),
                None => Vec::new(),
            };
            let mut samples: Vec<RequestSample> = kept
                .iter()
                .map(|r| {
                    let stream = chunks.get(&r.request_id).cloned().unwrap_or_default();
                    let input_tokens = match &sent {
                        Some(sent) => sent.get(&r.request_id).map_or(0, |s| s.context_tokens),
                        None => ctx.input_tokens(&step, r),
                    };
                    let mut sample =
                        sample_of(r, Some(stream.events_ms), input_tokens, ctx.correct(r));
                    sample.read_groups = stream.groups;
                    sample.held_tokens = ctx.held_tokens(&step, r);
                    sample
                })
                .collect();
            let agent = super::agent_data::agent_results(ctx, &step, &kept, &mut samples);
            // Sample i is `kept[i]`: the waits the 429s asked for, by sample index.
            let retry_after_s = kept
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    crate::report::retry_after_s(&r.rate_limit_headers, &r.started_at)
                        .map(|s| (i, s))
                })
                .collect();
            StepResults {
                index: step.index,
                model: step.model,
                window,
                lanes: ctx.lane_loads(&step),
                samples,
                harness_failures,
                retry_after_s,
                sittings: sittings.into_iter().collect(),
                turns,
                agent,
                repeat: step.repeat,
            }
        })
        .collect();
    LoadResults {
        run_id: run_id.to_string(),
        steps,
        settings: ReportSettings {
            slo: Slo::from_spec(&ctx.section.slo),
            sustain_fraction: ctx.section.sustain_fraction,
            goodput_threshold: ctx.section.goodput_threshold,
            seed: ctx.section.seed,
        },
        scored: matches!(ctx.section.workload, WorkloadSpec::Tasks),
        notes: ceiling_notes,
        health: None,
        replica_harness_failures,
    }
}
