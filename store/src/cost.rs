//! Cost and token reconciliation of one stored run, per lane: what a million output tokens and
//! a correct answer cost at the spec's list prices and the provider-reported usage, and how far
//! the provider's own token counts are from our o200k count of the same answers. The
//! discrepancy is reported, never used in place of either count.

use crate::load::StoredRun;

/// One lane's cost and token figures.
#[derive(Debug, Clone, PartialEq)]
pub struct CostRow {
    /// Lane display name.
    pub lane: String,
    /// Completed responses that reported usage.
    pub responses_with_usage: u64,
    /// Completed responses.
    pub completed: u64,
    /// Provider-reported completion tokens over those responses.
    pub completion_tokens: u64,
    /// Provider-reported reasoning tokens over those responses.
    pub reasoning_tokens: u64,
    /// Our o200k count of the visible answers of those responses.
    pub o200k_answer_tokens: u64,
    /// (completion − reasoning) / o200k − 1: how much more (or fewer) visible tokens the provider
    /// bills than o200k counts; `None` without usage or answer tokens.
    pub answer_token_discrepancy: Option<f64>,
    /// Provider-reported cached prompt tokens over those responses.
    pub cached_tokens: u64,
    /// What those cached tokens cost at the lock's cached-input price (the input price when it
    /// gives none), USD; `None` without prices. Part of `cost_usd`.
    pub cached_cost_usd: Option<f64>,
    /// Provider-reported prompt tokens written to its cache (Anthropic's
    /// `cache_creation_input_tokens`) over those responses, each at most its prompt's uncached
    /// rest, as the cost counts them.
    pub cache_write_tokens: u64,
    /// What those writes cost at the lock's cache-write price (1.25 × the input price when it
    /// gives none), USD; `None` without prices. Part of `cost_usd`.
    pub cache_write_cost_usd: Option<f64>,
    /// Cost of the responses with usage at the lock's prices (the report's `usage.cost_usd`).
    pub cost_usd: Option<f64>,
    /// cost_usd per million provider-reported completion tokens.
    pub cost_per_million_output_tokens: Option<f64>,
    /// Exactly right answers among the responses with usage.
    pub correct_with_usage: u64,
    /// cost_usd / correct_with_usage.
    pub cost_per_correct_answer: Option<f64>,
}

/// Per lane of `run`, in the report's lane order.
pub fn of_run(run: &StoredRun) -> Vec<CostRow> {
    run.metrics
        .providers
        .iter()
        .map(|p| {
            let lane = run.lanes.lanes.iter().position(|l| l.lane == p.lane);
            let price = lane
                .and_then(|i| run.lanes.lanes.get(i))
                .and_then(|l| run.lock.providers.iter().find(|x| x.key == l.provider))
                .and_then(|x| x.price());
            let mut row = CostRow {
                lane: p.display_name.clone(),
                responses_with_usage: 0,
                completed: 0,
                completion_tokens: 0,
                reasoning_tokens: 0,
                o200k_answer_tokens: 0,
                answer_token_discrepancy: None,
                cached_tokens: 0,
                cached_cost_usd: None,
                cache_write_tokens: 0,
                cache_write_cost_usd: None,
                cost_usd: p.pooled.usage.cost_usd,
                cost_per_million_output_tokens: None,
                correct_with_usage: 0,
                cost_per_correct_answer: None,
            };
            let mine = run
                .observations
                .iter()
                .zip(&run.answer_tokens)
                .filter(|(o, _)| Some(o.lane as usize) == lane && o.completed);
            for (o, tokens) in mine {
                row.completed += 1;
                let Some(usage) = o.usage.as_deref() else {
                    continue;
                };
                row.responses_with_usage += 1;
                row.completion_tokens += usage.completion_tokens.unwrap_or(0);
                row.reasoning_tokens += usage.reasoning_tokens.unwrap_or(0);
                // As the cost counts them: cached at most the prompt, written at most the rest.
                let prompt = usage.prompt_tokens.unwrap_or(u64::MAX);
                let cached = usage.cached_tokens.unwrap_or(0).min(prompt);
                row.cached_tokens += cached;
                row.cache_write_tokens +=
                    usage.cache_write_tokens.unwrap_or(0).min(prompt - cached);
                row.o200k_answer_tokens += tokens.unwrap_or(0);
                row.correct_with_usage += u64::from(o.correct());
            }
            row.cached_cost_usd = price
                .filter(|_| row.responses_with_usage > 0)
                .map(|p| row.cached_tokens as f64 * p.cached_price() / 1e6);
            row.cache_write_cost_usd = price
                .filter(|_| row.responses_with_usage > 0)
                .map(|p| row.cache_write_tokens as f64 * p.cache_write_price() / 1e6);
            let visible = row.completion_tokens.saturating_sub(row.reasoning_tokens);
            row.answer_token_discrepancy = (row.o200k_answer_tokens > 0
                && row.responses_with_usage > 0)
                .then(|| visible as f64 / row.o200k_answer_tokens as f64 - 1.0);
            row.cost_per_million_output_tokens = row
                .cost_usd
                .filter(|_| row.completion_tokens > 0)
                .map(|c| c / row.completion_tokens as f64 * 1e6);
            row.cost_per_correct_answer = row
                .cost_usd
                .filter(|_| row.correct_with_usage > 0)
                .map(|c| c / row.correct_with_usage as f64);
            row
        })
        .collect()
}
