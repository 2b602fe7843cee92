//! One final terminal record reduced to what metrics, paired comparisons and the artifacts need.
//!
//! Texts are scored and dropped as each record is read, so a million-record run stays small in
//! memory: lanes are interned, field correctness is a bit set, error labels are static. The
//! workflow-agnostic parts (lanes, failure details, labels, the model-echo check) are the report
//! kit's; this adds what micro-single-task scores.

use openbench_common::record::{Outcome, TerminalRecord, Usage};
pub use openbench_report_kit::observe::{
    FailureInfo, LaneKey, LaneRecord, LaneTable, error_type_label, outcome_label,
};
use openbench_tasks::scoring::{self, EvalClass, EvalErrorType, Family, GoldRef, Scored};

/// The compact form of one final record.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Request id.
    pub request_id: String,
    /// Round index.
    pub round_index: u64,
    /// Item id.
    pub item_id: String,
    /// Lane index into the [`LaneTable`].
    pub lane: u32,
    /// Task family.
    pub family: Family,
    /// Outcome.
    pub outcome: Outcome,
    /// Scoring class.
    pub class: EvalClass,
    /// Scoring or failure error.
    pub error_type: Option<EvalErrorType>,
    /// Schema-valid answer.
    pub schema_valid: bool,
    /// Bit i set when field i of `openbench_tasks::scoring::family_fields(family)` is correct.
    pub field_bits: u16,
    /// TTFO, ms.
    pub ttfo_ms: Option<f64>,
    /// TTFA, ms.
    pub ttfa_ms: Option<f64>,
    /// E2E, ms.
    pub e2e_ms: Option<f64>,
    /// Visible-answer tokens/s.
    pub tokens_per_second: Option<f64>,
    /// Reasoning tokens before the first answer token.
    pub reasoning_tokens_before_answer: Option<u64>,
    /// Non-empty reasoning text was emitted.
    pub reasoning_emitted: bool,
    /// `finish_reason: length`.
    pub truncated_by_length: bool,
    /// Provider-reported usage; boxed, so an observation holds 8 bytes for it rather than 88
    /// (a record with usage pays a 40-byte allocation instead): a million observations in
    /// memory is the report's largest cost.
    pub usage: Option<Box<Usage>>,
    /// For a completed response: `None` when the echoed model equals the requested one, else
    /// what was echoed (`""` when nothing was).
    pub model_mismatch: Option<String>,
    /// For a completed response, whether a model echo was checked.
    pub completed: bool,
    /// Failure details (failed and harness records only); boxed like `usage`, since most
    /// records succeed and an observation is what a million-record report holds.
    pub failure: Option<Box<FailureInfo>>,
    /// Measured after its round's other lanes (a re-run): kept out of paired comparisons.
    pub out_of_round: bool,
}

impl LaneRecord for Observation {
    fn request_id(&self) -> &str {
        &self.request_id
    }
    fn round_index(&self) -> u64 {
        self.round_index
    }
    fn lane(&self) -> u32 {
        self.lane
    }
}

impl Observation {
    /// True when field `i` is correct.
    pub fn field_correct(&self, i: usize) -> bool {
        self.field_bits & (1 << i) != 0
    }
    /// True when the answer is exactly right.
    pub fn correct(&self) -> bool {
        self.class == EvalClass::ValidResult
    }
    /// True for an operational failure (never a harness failure).
    pub fn is_failure(&self) -> bool {
        self.outcome.is_operational_failure()
    }
    /// True for a harness record (not submitted).
    pub fn is_harness(&self) -> bool {
        !self.outcome.is_committed()
    }
}

/// Scores and reduces one record. `gold` looks an item id up; `requested` gives the lock's model
/// id of a provider (used when the record does not name the requested model).
pub fn observe(
    record: TerminalRecord,
    lanes: &mut LaneTable,
    gold: &dyn Fn(&str) -> Option<GoldRef>,
    requested: &dyn Fn(&str) -> Option<String>,
) -> Result<Observation, String> {
    let family = Family::parse(&record.task_family).ok_or_else(|| {
        format!(
            "request {}: unknown task family {:?}",
            record.request_id, record.task_family
        )
    })?;
    let lane = lanes.intern(LaneKey::of_record(&record));
    let completed = record.outcome == Outcome::Completed;
    let scored: Scored = if completed {
        let g = gold(&record.item_id).ok_or_else(|| {
            format!(
                "request {}: item {:?} is not in the dataset",
                record.request_id, record.item_id
            )
        })?;
        if g.family() != family {
            return Err(format!(
                "request {}: item {:?} is a {} item, the record says {}",
                record.request_id,
                record.item_id,
                g.family().as_str(),
                family.as_str()
            ));
        }
        scoring::tool_call::score_record(&g, &record)
    } else {
        scoring::failed(
            family,
            EvalErrorType::of_failure(record.error_type, record.outcome),
        )
    };
    let field_bits = scored
        .field_correct
        .iter()
        .enumerate()
        .fold(0u16, |bits, (i, c)| if *c { bits | (1 << i) } else { bits });
    let answer_timing = AnswerTiming::of(&record);
    let model_mismatch = openbench_report_kit::observe::model_mismatch(&record, requested);
    let failure = FailureInfo::of_record(&record);
    Ok(Observation {
        request_id: record.request_id,
        round_index: record.round_index,
        item_id: record.item_id,
        lane,
        family,
        outcome: record.outcome,
        class: scored.classification,
        error_type: scored.error_type,
        schema_valid: scored.schema_valid,
        field_bits,
        ttfo_ms: record.ttfo_ms,
        ttfa_ms: answer_timing.ttfa_ms,
        e2e_ms: answer_timing.e2e_ms,
        tokens_per_second: answer_timing.tokens_per_second,
        reasoning_tokens_before_answer: record.reasoning_tokens_before_answer,
        reasoning_emitted: !record.reasoning_text.is_empty(),
        truncated_by_length: record.truncated_by_length,
        usage: record.usage.map(Box::new),
        model_mismatch,
        completed,
        failure,
        out_of_round: record.out_of_round,
    })
}

/// The answer's timings as the report reads them: the record's TTFA, E2E and tokens/s, or, when
/// the request offered a tool (the tool-call variant, docs/methodology.md §5), the call's: time
/// to first tool-call token, tool-call E2E, and (N − 1) / (E2E − first) s with N the o200k
/// count of the arguments. So the same columns compare providers in both variants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnswerTiming {
    /// TTFA, or the first tool-call token.
    pub ttfa_ms: Option<f64>,
    /// E2E, or the tool-call E2E.
    pub e2e_ms: Option<f64>,
    /// Visible-answer (or tool-call) tokens/s.
    pub tokens_per_second: Option<f64>,
}

impl AnswerTiming {
    /// The timings of `record`'s answer.
    pub fn of(record: &TerminalRecord) -> AnswerTiming {
        if record.offered_tool.is_none() {
            return AnswerTiming {
                ttfa_ms: record.ttfa_ms,
                e2e_ms: record.e2e_ms,
                tokens_per_second: record.output_tokens_per_second,
            };
        }
        let (first, last) = (record.ttf_tool_call_ms, record.tool_call_e2e_ms);
        let tokens_per_second = first.zip(last).and_then(|(first, last)| {
            let arguments: String = record
                .tool_calls
                .iter()
                .map(|c| c.arguments.as_str())
                .collect();
            let n = openbench_common::tokenizer::count_tokens(&arguments);
            openbench_common::record::tokens_per_second(n, first, last)
        });
        AnswerTiming {
            ttfa_ms: first,
            e2e_ms: last,
            tokens_per_second,
        }
    }
}
