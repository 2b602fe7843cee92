//! A load run's raw files read back into what the rules and the report need: the steps that
//! ran (a saturation search's replayed from its records), every request as a
//! [`RequestSample`], and the settings of the rules.

use super::plan::{LaneLayout, first_steps, lane_targets, next_step, source_of, window_of};
use super::workload::Workload;
use crate::arrivals::Window;
use crate::metrics::step::{StepSettings, step_metrics};
use crate::metrics::{ReadGroup, RequestSample, Slo};
use crate::report::{LaneLoad, LoadResults, ReportSettings, StepResults};
use crate::spec::{LoadSection, Step, StepModel, WorkloadSpec};
use crate::trace::Traces;
use openbench_common::record::{Outcome, StreamEvent, TerminalRecord};
use openbench_common::schedule::LoadPosition;
use openbench_common::tokenizer::count_tokens;
use openbench_common::workflow::WorkflowError;
use openbench_micro_single_task::scoring::{GoldRef, score_answer};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
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
    /// Whether a record's answer was exactly right (`None` without scoring): a failed request
    /// is not right.
    pub fn correct(&self, record: &TerminalRecord) -> Option<bool> {
        let gold = self.gold.as_ref()?;
        Some(
            record.outcome == Outcome::Completed
                && gold
                    .get(&record.item_id)
                    .is_some_and(|g| score_answer(g, &record.answer_text).correct),
        )
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

/// One record as the metrics see it. `chunks` are its answer-bearing chunk offsets from the
/// events file; without them (the runner's replay, which reads no events) the first and last
/// stand in, which gives the same TTFA, E2E and TPOT (and so the same goodput and verdicts).
pub fn sample_of(
    record: &TerminalRecord,
    chunks: Option<Vec<f64>>,
    input_tokens: u64,
    correct: Option<bool>,
) -> RequestSample {
    let answer_chunks_ms = chunks.unwrap_or_else(|| {
        let mut ends: Vec<f64> = [record.ttfa_ms, record.e2e_ms]
            .into_iter()
            .flatten()
            .collect();
        ends.dedup();
        ends
    });
    let finished_ms = record
        .stream_end_ms
        .or(record.e2e_ms)
        .or(record.headers_ms)
        .unwrap_or(0.0);
    RequestSample {
        lane: record.lane.clone(),
        scheduled_ms: record.scheduled_offset_ms,
        sent_ms: record.sent_offset_ms.unwrap_or(0.0),
        ttfo_ms: record.ttfo_ms,
        answer_chunks_ms,
        read_groups: Vec::new(),
        finished_ms,
        input_tokens,
        answer_tokens: record.answer_tokens.unwrap_or(0),
        usage_prompt_tokens: record.usage.as_ref().and_then(|u| u.prompt_tokens),
        usage_completion_tokens: record.usage.as_ref().and_then(|u| u.completion_tokens),
        outcome: record.outcome,
        error_type: record.error_type,
        correct,
        held_tokens: None,
        stopped_at_length: record.finish_reason.as_deref() == Some("length"),
    }
}

/// The full run's records of each phase (step), in phase order.
pub fn by_phase(records: &BTreeMap<String, TerminalRecord>) -> BTreeMap<u32, Vec<&TerminalRecord>> {
    let mut out: BTreeMap<u32, Vec<&TerminalRecord>> = BTreeMap::new();
    for r in records.values() {
        if let Some(phase) = r.phase {
            out.entry(phase).or_default().push(r);
        }
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

/// One request's answer-bearing events as the metrics read them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnswerStream {
    /// Each answer-bearing event's offset, ascending by event index.
    pub chunks_ms: Vec<f64>,
    /// The same events as read groups, with their tokens.
    pub groups: Vec<ReadGroup>,
}

/// Answer-bearing events of every request in the events file (ascending by event index; a
/// request executed twice keeps its last execution's events). Unreadable lines (a torn tail)
/// are skipped: the records, not the events, say what ran.
pub fn answer_chunks(path: &Path) -> Result<BTreeMap<String, AnswerStream>, WorkflowError> {
    let fail =
        |e: openbench_common::rundir::RunDirError| WorkflowError(format!("events {e}").into());
    let file = match openbench_common::rundir::open_read(path) {
        Ok(file) => file,
        Err(openbench_common::rundir::RunDirError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Ok(BTreeMap::new());
        }
        Err(e) => return Err(fail(e)),
    };
    // Streamed one bounded line at a time: the events file is the run's largest.
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut chunks = AnswerChunks::default();
    let mut line = Vec::new();
    let mut line_no = 0u64;
    loop {
        line.clear();
        let n =
            openbench_common::rundir::lines::read_line(&mut reader, &mut line, path, line_no + 1)
                .map_err(fail)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        chunks.line(String::from_utf8_lossy(line.trim_ascii_end()).as_ref());
    }
    Ok(chunks.into_map())
}

/// How close to a read group's first event a later answer event must come to be of the same
/// network read: 0.2 ms. The HTTP client hands a body over one HTTP/1.1 chunk (or HTTP/2 DATA
/// frame) per poll, so several events that arrived in one TCP segment are stamped apart by the
/// hand-over alone: 12 to 70 µs measured on a busy 2-core machine (three chunks in one write). A
/// server's own tokens come further apart than this (5,000 tokens/s in one stream is 0.2 ms a
/// token); a group spans at most this long, so even a faster server's steady tokens still give
/// per-token values of their true interval, two at a time.
pub const READ_COALESCE_MS: f64 = 0.2;

/// Answer-bearing events per request, taken one events line at a time: the report reads the
/// whole file through it ([`answer_chunks`]), `watch` the lines as they are appended, so both
/// see the same events (and so the same ITL).
#[derive(Debug, Clone, Default)]
pub struct AnswerChunks {
    /// Request id → event index → the event's offset and answer text when it carried some.
    by: BTreeMap<String, BTreeMap<u32, Option<(f64, String)>>>,
}

impl AnswerChunks {
    /// Takes one line of the events file; an unreadable one (a torn tail) is skipped. Event 0 of
    /// a request starts its events over (a re-execution replaces the earlier one's).
    pub fn line(&mut self, line: &str) {
        let Ok(event) = serde_json::from_str::<StreamEvent>(line) else {
            return;
        };
        let answer = (!event.answer.is_empty()).then_some((event.offset_ms, event.answer));
        let events = self.by.entry(event.request_id).or_default();
        if event.index == 0 {
            events.clear();
        }
        events.insert(event.index, answer);
    }

    /// The answer-bearing chunk offsets of `request_id` so far, ascending by event index.
    pub fn of(&self, request_id: &str) -> Vec<f64> {
        self.by
            .get(request_id)
            .map(|events| events.values().flatten().map(|(at, _)| *at).collect())
            .unwrap_or_default()
    }

    /// The read groups of `request_id` so far: consecutive answer-bearing events of one network
    /// read, each group with the o200k tokens of their joined text. An event belongs to the
    /// group before it when it came at most [`READ_COALESCE_MS`] after that group's first
    /// event (docs/load.md, "Read groups").
    pub fn groups(&self, request_id: &str) -> Vec<ReadGroup> {
        let Some(events) = self.by.get(request_id) else {
            return Vec::new();
        };
        let mut groups: Vec<(f64, String)> = Vec::new();
        for (at, text) in events.values().flatten() {
            match groups.last_mut() {
                Some((first, joined)) if *at - *first <= READ_COALESCE_MS => joined.push_str(text),
                _ => groups.push((*at, text.clone())),
            }
        }
        groups
            .into_iter()
            .map(|(at_ms, text)| ReadGroup {
                at_ms,
                tokens: count_tokens(&text).max(1),
            })
            .collect()
    }

    /// Every request's events.
    pub fn into_map(self) -> BTreeMap<String, AnswerStream> {
        self.by
            .keys()
            .map(|id| {
                let stream = AnswerStream {
                    chunks_ms: self.of(id),
                    groups: self.groups(id),
                };
                (id.clone(), stream)
            })
            .collect()
    }
}

/// Everything the report is computed from, read from a run's records and events.
pub fn results_of(
    ctx: &RunContext,
    run_id: &str,
    records: &BTreeMap<String, TerminalRecord>,
    chunks: &BTreeMap<String, AnswerStream>,
    ceiling_notes: Vec<String>,
) -> LoadResults {
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
            let samples = kept
                .iter()
                .map(|r| {
                    let stream = chunks.get(&r.request_id).cloned().unwrap_or_default();
                    let mut sample = sample_of(
                        r,
                        Some(stream.chunks_ms),
                        ctx.input_tokens(&step, r),
                        ctx.correct(r),
                    );
                    sample.read_groups = stream.groups;
                    sample.held_tokens = ctx.held_tokens(&step, r);
                    sample
                })
                .collect();
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, index: u32, at: f64, reasoning: &str, answer: &str) -> String {
        format!(
            "{{\"request_id\":\"{id}\",\"index\":{index},\"offset_ms\":{at},\
             \"classification\":\"answer\",\"reasoning\":\"{reasoning}\",\"answer\":\"{answer}\"}}"
        )
    }

    #[test]
    fn events_of_one_read_form_one_group_with_the_tokens_of_their_text() {
        let mut chunks = AnswerChunks::default();
        for l in [
            line("r", 0, 10.0, "", "Hello"),
            // One read at 25 ms: two answer events around a reasoning-only one.
            line("r", 1, 25.0, "", " world"),
            line("r", 2, 25.0, "hm", ""),
            line("r", 3, 25.0, "", " again"),
            line("r", 4, 40.0, "", "!"),
        ] {
            chunks.line(&l);
        }
        assert_eq!(chunks.of("r"), [10.0, 25.0, 25.0, 40.0]);
        // Handed over 0.07 and 0.19 ms after the group's first: the same read. 0.21 ms after
        // it: a read of its own.
        let mut near = AnswerChunks::default();
        for l in [
            line("n", 0, 10.0, "", "a"),
            line("n", 1, 30.0, "", " b"),
            line("n", 2, 30.07, "", " c"),
            line("n", 3, 30.19, "", " d"),
            line("n", 4, 30.4, "", " e"),
        ] {
            near.line(&l);
        }
        assert_eq!(
            near.groups("n"),
            [(10.0, 1), (30.0, 3), (30.4, 1)].map(|(at_ms, tokens)| ReadGroup { at_ms, tokens })
        );
        // o200k: "Hello" 1 token, " world again" 2, "!" 1.
        assert_eq!(
            chunks.groups("r"),
            [(10.0, 1), (25.0, 2), (40.0, 1)].map(|(at_ms, tokens)| ReadGroup { at_ms, tokens })
        );
        // Event 0 again: a re-execution replaces the earlier events.
        chunks.line(&line("r", 0, 7.0, "", "Hi"));
        assert_eq!(chunks.of("r"), [7.0]);
        let map = chunks.into_map();
        assert_eq!(
            map["r"].groups,
            [ReadGroup {
                at_ms: 7.0,
                tokens: 1
            }]
        );
    }
}
