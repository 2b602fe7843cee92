//! One summary row (METHODOLOGY §6): a (provider, family) cell or a provider's pooled row.

use super::observe::Observation;
use openbench_common::record::{ErrorType, Outcome};
use openbench_common::stats::rank_index;
use openbench_tasks::scoring::{EvalClass, Family};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Operational failures by kind. `transport` covers connect, reset, invalid SSE and truncated
/// streams; `other_http_status` a refused 1xx/3xx.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureBreakdown {
    /// Client deadline passed.
    pub timeout: u64,
    /// HTTP 429.
    pub http_429: u64,
    /// Other 4xx.
    pub other_http_4xx: u64,
    /// 5xx.
    pub http_5xx: u64,
    /// Non-2xx that is neither 4xx nor 5xx.
    pub other_http_status: u64,
    /// Transport errors.
    pub transport: u64,
    /// Errors inside a 2xx stream.
    pub stream_error: u64,
    /// Streams that passed a stream limit. Left out of the JSON when none did, so runs from
    /// before this class existed (their over-limit streams are `transport`) re-report the same.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stream_limit: u64,
}

/// True for a count of zero.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl FailureBreakdown {
    fn add(&mut self, o: &Observation) {
        let status = o.failure.as_ref().and_then(|f| f.http_status);
        let error = o.failure.as_ref().and_then(|f| f.error_type);
        match o.outcome {
            Outcome::Timeout => self.timeout += 1,
            Outcome::TransportError => self.transport += 1,
            Outcome::StreamError => self.stream_error += 1,
            Outcome::StreamLimitExceeded => self.stream_limit += 1,
            Outcome::HttpError => match (error, status) {
                (Some(ErrorType::Http429), _) | (_, Some(429)) => self.http_429 += 1,
                (Some(ErrorType::Http5xx), _) | (_, Some(500..=599)) => self.http_5xx += 1,
                (Some(ErrorType::OtherHttp4xx), _) | (_, Some(400..=499)) => {
                    self.other_http_4xx += 1
                }
                _ => self.other_http_status += 1,
            },
            Outcome::Completed | Outcome::HarnessError => {}
        }
    }
}

/// Provider-reported usage and the cost it implies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageSummary {
    /// Completed responses that reported usage.
    pub responses_with_usage: u64,
    /// responses_with_usage / completed (null when nothing completed).
    pub usage_coverage: Option<f64>,
    /// Sum of prompt tokens over reporting responses.
    pub prompt_tokens: u64,
    /// Sum of completion tokens.
    pub completion_tokens: u64,
    /// Sum of total tokens.
    pub total_tokens: u64,
    /// Sum of cached prompt tokens.
    pub cached_tokens: u64,
    /// Sum of prompt tokens written to the cache (Anthropic's `cache_creation_input_tokens`);
    /// absent when 0, so reports of providers without it keep their bytes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// Sum of reported reasoning tokens.
    pub reasoning_tokens: u64,
    /// (uncached prompt × input price + cached × cached-input price + cache writes ×
    /// cache-write price + completion × output price) / 1e6, USD; null without prices.
    pub cost_usd: Option<f64>,
    /// cost_usd / responses_with_usage.
    pub cost_per_request_usd: Option<f64>,
}

/// Prices per million tokens from the lock (cached input at its own price when given).
pub use openbench_common::spec::Price as Prices;

/// One summary row. Latency populations exclude failed requests; rates divide by `submitted_count`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Family name, or `pooled`.
    pub task_family: String,
    /// Pooled rows only: every family has the same submitted count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balanced: Option<bool>,
    /// Submitted requests (final non-harness records).
    pub submitted_count: u64,
    /// Completed requests.
    pub completed_count: u64,
    /// `valid_result` count.
    pub valid_result_count: u64,
    /// `incorrect_result` count.
    pub incorrect_result_count: u64,
    /// `invalid_result` count.
    pub invalid_result_count: u64,
    /// `failed_request` count.
    pub failed_request_count: u64,
    /// Schema-valid answers.
    pub schema_valid_count: u64,
    /// Completed with `finish_reason: length`.
    pub truncated_by_length_count: u64,
    /// correct / submitted.
    pub task_success_rate: Option<f64>,
    /// schema-valid / submitted.
    pub schema_valid_rate: Option<f64>,
    /// operational failures / submitted.
    pub failure_rate: Option<f64>,
    /// Failures by kind.
    pub failure_breakdown: FailureBreakdown,
    /// TTFO population.
    pub ttfo_population: u64,
    /// TTFO p50, ms.
    pub ttfo_p50: Option<f64>,
    /// TTFO p95, ms.
    pub ttfo_p95: Option<f64>,
    /// TTFO p99, ms.
    pub ttfo_p99: Option<f64>,
    /// TTFA population.
    pub ttfa_population: u64,
    /// TTFA p50, ms.
    pub ttfa_p50: Option<f64>,
    /// TTFA p95, ms.
    pub ttfa_p95: Option<f64>,
    /// TTFA p99, ms.
    pub ttfa_p99: Option<f64>,
    /// E2E population.
    pub e2e_latency_population: u64,
    /// E2E p50, ms.
    pub e2e_latency_p50: Option<f64>,
    /// E2E p95, ms.
    pub e2e_latency_p95: Option<f64>,
    /// E2E p99, ms.
    pub e2e_latency_p99: Option<f64>,
    /// Eligible tokens/s responses.
    pub output_tokens_per_second_population: u64,
    /// Tokens/s median.
    pub output_tokens_per_second_p50: Option<f64>,
    /// Tokens/s p95 floor (nearest rank at p = .05).
    pub output_tokens_per_second_p95: Option<f64>,
    /// Tokens/s p99 floor (nearest rank at p = .01).
    pub output_tokens_per_second_p99: Option<f64>,
    /// Completed responses reporting pre-answer reasoning tokens.
    pub pre_answer_reasoning_tokens_population: u64,
    /// Median pre-answer reasoning tokens.
    pub pre_answer_reasoning_tokens_p50: Option<f64>,
    /// Mean pre-answer reasoning tokens.
    pub pre_answer_reasoning_tokens_mean: Option<f64>,
    /// Completed responses that emitted reasoning text / completed.
    pub reasoning_emission_rate: Option<f64>,
    /// Usage and cost.
    pub usage: UsageSummary,
    /// Field → correct answers (family rows only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub field_correct_counts: BTreeMap<String, u64>,
    /// Field → correct / submitted (family rows only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub field_accuracy: BTreeMap<String, f64>,
}

/// Nearest-rank percentiles of an already sorted population.
pub fn sorted_percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(p > 0.0 && p <= 1.0) {
        return None;
    }
    Some(sorted[rank_index(sorted.len(), p)])
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

fn sorted(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Summarises `obs` (the submitted records of one cell; harness records must be left out).
/// `family` selects the per-field diagnostics; `None` for a pooled row.
pub fn summarize(
    task_family: &str,
    obs: &[&Observation],
    family: Option<Family>,
    prices: Option<Prices>,
) -> Summary {
    let submitted = obs.len() as u64;
    let count = |class: EvalClass| obs.iter().filter(|o| o.class == class).count() as u64;
    let completed: Vec<&&Observation> = obs.iter().filter(|o| o.completed).collect();
    let mut breakdown = FailureBreakdown::default();
    obs.iter().for_each(|o| breakdown.add(o));
    let failures = obs.iter().filter(|o| o.is_failure()).count() as u64;
    let correct = count(EvalClass::ValidResult);
    // Latency populations: completed responses only (failed requests excluded).
    let ttfo = sorted(completed.iter().filter_map(|o| o.ttfo_ms));
    let ttfa = sorted(completed.iter().filter_map(|o| o.ttfa_ms));
    let e2e = sorted(completed.iter().filter_map(|o| o.e2e_ms));
    let tps = sorted(completed.iter().filter_map(|o| o.tokens_per_second));
    let reasoning: Vec<u64> = completed
        .iter()
        .filter_map(|o| o.reasoning_tokens_before_answer)
        .collect();
    let reasoning_sorted = sorted(reasoning.iter().map(|r| *r as f64));
    let reasoning_sum: u64 = reasoning.iter().sum();
    let mut usage = UsageSummary::default();
    for u in completed.iter().filter_map(|o| o.usage.as_deref()) {
        usage.responses_with_usage += 1;
        usage.prompt_tokens += u.prompt_tokens.unwrap_or(0);
        usage.completion_tokens += u.completion_tokens.unwrap_or(0);
        usage.total_tokens += u.total_tokens.unwrap_or(0);
        usage.cached_tokens += u.cached_tokens.unwrap_or(0);
        usage.cache_write_tokens += u.cache_write_tokens.unwrap_or(0);
        usage.reasoning_tokens += u.reasoning_tokens.unwrap_or(0);
    }
    usage.usage_coverage = ratio(usage.responses_with_usage, completed.len() as u64);
    if let Some(p) = prices.filter(|_| usage.responses_with_usage > 0) {
        let cost = p.cost_usd(
            usage.prompt_tokens,
            usage.cached_tokens,
            usage.cache_write_tokens,
            usage.completion_tokens,
        );
        usage.cost_usd = Some(cost);
        usage.cost_per_request_usd = Some(cost / usage.responses_with_usage as f64);
    }
    let mut field_correct_counts = BTreeMap::new();
    let mut field_accuracy = BTreeMap::new();
    if let Some(family) = family {
        for (i, field) in openbench_tasks::scoring::family_fields(family)
            .iter()
            .enumerate()
        {
            let n = obs.iter().filter(|o| o.field_correct(i)).count() as u64;
            field_correct_counts.insert(field.to_string(), n);
            if let Some(r) = ratio(n, submitted) {
                field_accuracy.insert(field.to_string(), r);
            }
        }
    }
    Summary {
        task_family: task_family.to_string(),
        balanced: None,
        submitted_count: submitted,
        completed_count: completed.len() as u64,
        valid_result_count: correct,
        incorrect_result_count: count(EvalClass::IncorrectResult),
        invalid_result_count: count(EvalClass::InvalidResult),
        failed_request_count: count(EvalClass::FailedRequest),
        schema_valid_count: obs.iter().filter(|o| o.schema_valid).count() as u64,
        truncated_by_length_count: completed.iter().filter(|o| o.truncated_by_length).count()
            as u64,
        task_success_rate: ratio(correct, submitted),
        schema_valid_rate: ratio(
            obs.iter().filter(|o| o.schema_valid).count() as u64,
            submitted,
        ),
        failure_rate: ratio(failures, submitted),
        failure_breakdown: breakdown,
        ttfo_population: ttfo.len() as u64,
        ttfo_p50: sorted_percentile(&ttfo, 0.50),
        ttfo_p95: sorted_percentile(&ttfo, 0.95),
        ttfo_p99: sorted_percentile(&ttfo, 0.99),
        ttfa_population: ttfa.len() as u64,
        ttfa_p50: sorted_percentile(&ttfa, 0.50),
        ttfa_p95: sorted_percentile(&ttfa, 0.95),
        ttfa_p99: sorted_percentile(&ttfa, 0.99),
        e2e_latency_population: e2e.len() as u64,
        e2e_latency_p50: sorted_percentile(&e2e, 0.50),
        e2e_latency_p95: sorted_percentile(&e2e, 0.95),
        e2e_latency_p99: sorted_percentile(&e2e, 0.99),
        output_tokens_per_second_population: tps.len() as u64,
        output_tokens_per_second_p50: sorted_percentile(&tps, 0.50),
        output_tokens_per_second_p95: sorted_percentile(&tps, 0.05),
        output_tokens_per_second_p99: sorted_percentile(&tps, 0.01),
        pre_answer_reasoning_tokens_population: reasoning.len() as u64,
        pre_answer_reasoning_tokens_p50: sorted_percentile(&reasoning_sorted, 0.50),
        pre_answer_reasoning_tokens_mean: ratio(reasoning_sum, reasoning.len() as u64),
        reasoning_emission_rate: ratio(
            completed.iter().filter(|o| o.reasoning_emitted).count() as u64,
            completed.len() as u64,
        ),
        usage,
        field_correct_counts,
        field_accuracy,
    }
}
