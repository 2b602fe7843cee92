//! What the probe found, per lane (provider × region), computed from the records alone.
//!
//! - A request **hit** when its usage reports cached tokens covering at least half its prompt
//!   (`cached_tokens × 2 ≥ prompt_tokens`); it **missed** when usage reports fewer; its status is
//!   **unknown** when usage gives no cached count (a provider that does not report one).
//! - **Hit rate**: hits among the probes whose status is known.
//! - **TTFA of hits vs misses**: p50 (nearest rank) of the probes that hit and of the fresh
//!   requests that missed (the paired, never-sent prefix of the same length); the difference
//!   miss − hit with a 95 % percentile-bootstrap interval (hits and misses resampled apart,
//!   seeded).
//! - **TTL**: a gap hits when most of its probes hit, misses when most missed; the TTL lies
//!   between the longest hitting gap below the shortest missing gap, and that missing gap.
//! - **Cost**: every completed request's usage at the locked prices, cached tokens at the cached
//!   input price; beside it the same usage with no cache discount.

use crate::plan::{SendKind, parse_item_key, trials};
use crate::section::CacheProbeSection;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_common::rng::Stream;
use openbench_common::spec::Price;
use openbench_common::stats::nearest_rank;
use openbench_report_kit::bootstrap::percentile_interval;
use serde::{Deserialize, Serialize};

/// Bootstrap replicates of the TTFA difference.
pub const REPLICATES: usize = 2000;

/// A request's cache status from its usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Cached tokens cover at least half the prompt.
    Hit,
    /// Fewer cached tokens.
    Miss,
    /// Usage reports no cached count.
    Unknown,
}

/// The cache status of one completed record (`None` for one that did not complete).
pub fn status(record: &TerminalRecord) -> Option<Status> {
    if record.outcome != Outcome::Completed {
        return None;
    }
    let usage = record.usage.as_ref();
    let counts = usage.and_then(|u| Some((u.cached_tokens?, u.prompt_tokens?)));
    Some(match counts {
        Some((cached, prompt)) if cached * 2 >= prompt && prompt > 0 => Status::Hit,
        Some(_) => Status::Miss,
        None => Status::Unknown,
    })
}

/// The probes of one gap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapFigures {
    /// The gap, seconds.
    pub gap_s: f64,
    /// Probes that completed with a known status.
    pub probes: u64,
    /// Of those, hits.
    pub hits: u64,
}

/// Everything the report says about one lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneFigures {
    /// Lane label.
    pub lane: String,
    /// Provider key.
    pub provider: String,
    /// Region name.
    pub region: String,
    /// Requests recorded (warm, probe and fresh).
    pub requests: u64,
    /// Requests that completed.
    pub completed: u64,
    /// Completed requests whose usage gave no cached count.
    pub unknown_status: u64,
    /// Probes with a known status.
    pub probes: u64,
    /// Probes that hit.
    pub probe_hits: u64,
    /// probe_hits / probes.
    pub hit_rate: Option<f64>,
    /// Fresh requests that hit (a provider sharing cache across prefixes, or a tag collision).
    pub fresh_hits: u64,
    /// Per gap, ascending.
    pub gaps: Vec<GapFigures>,
    /// Longest gap that still hit, below the shortest missing one, seconds.
    pub ttl_longest_hit_s: Option<f64>,
    /// Shortest gap that missed, seconds.
    pub ttl_shortest_miss_s: Option<f64>,
    /// TTFA p50 of the probes that hit, ms.
    pub ttfa_hit_p50_ms: Option<f64>,
    /// TTFA p50 of the fresh requests that missed, ms.
    pub ttfa_miss_p50_ms: Option<f64>,
    /// Miss p50 − hit p50, ms.
    pub ttfa_saving_ms: Option<f64>,
    /// 95 % bootstrap interval of the saving, ms.
    pub ttfa_saving_interval_ms: (Option<f64>, Option<f64>),
    /// Hits and misses behind the TTFA figures.
    pub ttfa_samples: (u64, u64),
    /// Cost of every completed request's usage, cached tokens at the cached price, USD.
    pub cost_usd: Option<f64>,
    /// The same usage with no cache discount, USD.
    pub cost_without_cache_usd: Option<f64>,
    /// The lane's conversation, when the section asks for one (its requests are in none of the
    /// figures above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<crate::conversation::ConversationFigures>,
}

/// The figures of one lane's records under `section`, priced at `price`.
pub fn lane_figures(
    section: &CacheProbeSection,
    records: &[&TerminalRecord],
    price: Option<Price>,
) -> LaneFigures {
    let first = records.first();
    let trial_gaps: Vec<f64> = trials(section).iter().map(|t| t.gap_s).collect();
    let mut gaps: Vec<GapFigures> = section
        .gaps_s
        .iter()
        .map(|g| GapFigures {
            gap_s: *g,
            probes: 0,
            hits: 0,
        })
        .collect();
    let (mut hit_ttfa, mut miss_ttfa) = (Vec::new(), Vec::new());
    let (mut completed, mut unknown, mut fresh_hits) = (0, 0, 0);
    let (mut cost, mut plain_cost) = (0.0, 0.0);
    // No cache: no discount, and no cache writes either (written tokens at the input price).
    let undiscounted = price.map(|p| Price {
        cached_input_per_mtok: None,
        cache_write_input_per_mtok: Some(p.input_per_mtok),
        ..p
    });
    for record in records {
        let Some(status) = status(record) else {
            continue;
        };
        completed += 1;
        if let (Some(p), Some(plain), Some(u)) = (price, undiscounted, record.usage.as_ref()) {
            let (prompt, cached) = (u.prompt_tokens.unwrap_or(0), u.cached_tokens.unwrap_or(0));
            let output = u.completion_tokens.unwrap_or(0);
            let written = u.cache_write_tokens.unwrap_or(0);
            cost += p.cost_usd(prompt, cached, written, output);
            plain_cost += plain.cost_usd(prompt, cached, written, output);
        }
        if status == Status::Unknown {
            unknown += 1;
            continue;
        }
        let Some((trial, kind)) = parse_item_key(&record.item_id) else {
            continue;
        };
        let hit = status == Status::Hit;
        match kind {
            SendKind::Probe => {
                let gap = trial_gaps.get(trial).copied();
                if let Some(cell) = gaps.iter_mut().find(|g| Some(g.gap_s) == gap) {
                    cell.probes += 1;
                    cell.hits += u64::from(hit);
                }
                if hit {
                    hit_ttfa.extend(record.ttfa_ms);
                }
            }
            SendKind::Fresh if hit => fresh_hits += 1,
            SendKind::Fresh => miss_ttfa.extend(record.ttfa_ms),
            SendKind::Warm => {}
        }
    }
    let probes: u64 = gaps.iter().map(|g| g.probes).sum();
    let probe_hits: u64 = gaps.iter().map(|g| g.hits).sum();
    let (longest_hit, shortest_miss) = ttl_bracket(&gaps);
    let hit_p50 = nearest_rank(&hit_ttfa, 0.5);
    let miss_p50 = nearest_rank(&miss_ttfa, 0.5);
    let priced = price.is_some() && completed > 0;
    LaneFigures {
        lane: first.map(|r| r.lane.clone()).unwrap_or_default(),
        provider: first.map(|r| r.provider.clone()).unwrap_or_default(),
        region: first.map(|r| r.region.clone()).unwrap_or_default(),
        requests: records.len() as u64,
        completed,
        unknown_status: unknown,
        probes,
        probe_hits,
        hit_rate: (probes > 0).then(|| probe_hits as f64 / probes as f64),
        fresh_hits,
        gaps,
        ttl_longest_hit_s: longest_hit,
        ttl_shortest_miss_s: shortest_miss,
        ttfa_hit_p50_ms: hit_p50,
        ttfa_miss_p50_ms: miss_p50,
        ttfa_saving_ms: miss_p50.zip(hit_p50).map(|(m, h)| m - h),
        ttfa_saving_interval_ms: saving_interval(&hit_ttfa, &miss_ttfa, section.bootstrap_seed),
        ttfa_samples: (hit_ttfa.len() as u64, miss_ttfa.len() as u64),
        cost_usd: priced.then_some(cost),
        cost_without_cache_usd: priced.then_some(plain_cost),
        conversation: None,
    }
}

/// (longest hitting gap below the shortest missing one, shortest missing gap).
fn ttl_bracket(gaps: &[GapFigures]) -> (Option<f64>, Option<f64>) {
    let hits = |g: &&GapFigures| g.probes > 0 && g.hits * 2 > g.probes;
    let misses = |g: &&GapFigures| g.probes > 0 && g.hits * 2 < g.probes;
    let shortest_miss = gaps.iter().filter(misses).map(|g| g.gap_s).reduce(f64::min);
    let longest_hit = gaps
        .iter()
        .filter(hits)
        .map(|g| g.gap_s)
        .filter(|g| shortest_miss.is_none_or(|m| *g < m))
        .reduce(f64::max);
    (longest_hit, shortest_miss)
}

/// The 95 % percentile-bootstrap interval of p50(misses) − p50(hits), each resampled with
/// replacement from its own population, [`REPLICATES`] times from the project's seeded stream
/// `(seed, "bootstrap", "ttfa-saving")` (no modulo bias).
fn saving_interval(hits: &[f64], misses: &[f64], seed: u64) -> (Option<f64>, Option<f64>) {
    if hits.is_empty() || misses.is_empty() {
        return (None, None);
    }
    let mut stream = Stream::derive(seed, &["bootstrap", "ttfa-saving"]);
    let mut resample = |values: &[f64]| -> Option<f64> {
        let drawn: Vec<f64> = (0..values.len())
            .map(|_| values[stream.below(values.len() as u64) as usize])
            .collect();
        nearest_rank(&drawn, 0.5)
    };
    let savings: Vec<f64> = (0..REPLICATES)
        .filter_map(|_| {
            let h = resample(hits)?;
            let m = resample(misses)?;
            Some(m - h)
        })
        .collect();
    percentile_interval(&savings, 0.95)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A completed record as reports read it: 1,000 prompt and 10 completion tokens.
    fn record(key: &str, ttfa: f64, cached: Option<u64>) -> TerminalRecord {
        let mut usage = serde_json::json!({"prompt_tokens": 1000, "completion_tokens": 10});
        if let Some(cached) = cached {
            usage["cached_tokens"] = cached.into();
        }
        serde_json::from_value(serde_json::json!({
            "schema_version": 1, "request_id": key, "provider": "zai", "region": "local",
            "lane": "zai", "item_id": key, "started_at": "2026-01-01T00:00:00Z",
            "outcome": "completed", "answer_text": "{}", "reasoning_text": "",
            "ttfa_ms": ttfa, "usage": usage
        }))
        .unwrap()
    }

    fn section() -> CacheProbeSection {
        CacheProbeSection {
            prefix_tokens: 1000,
            gaps_s: vec![10.0, 60.0, 120.0],
            repeats: 2,
            spacing_s: 1.0,
            pair_offset_s: 0.5,
            max_output_tokens: 8,
            bootstrap_seed: 1,
            conversation_turns: 0,
            conversation_think_s: 1.0,
        }
    }

    #[test]
    fn hit_rate_ttl_ttfa_and_cost_by_hand() {
        // Trials: t0 gap 10, t1 gap 60, t2 gap 120, t3 gap 10, t4 gap 60, t5 gap 120.
        // Probes: gaps 10 and 60 hit twice, gap 120 misses twice; fresh requests all miss.
        let records = [
            record("t0-warm", 300.0, Some(0)),
            record("t0-probe", 50.0, Some(960)),
            record("t0-fresh", 310.0, Some(0)),
            record("t1-probe", 60.0, Some(960)),
            record("t1-fresh", 290.0, Some(0)),
            record("t2-probe", 280.0, Some(0)),
            record("t2-fresh", 300.0, Some(0)),
            record("t3-probe", 55.0, Some(960)),
            record("t4-probe", 52.0, Some(512)),
            record("t5-probe", 305.0, Some(100)),
            record("t5-fresh", 320.0, None),
        ];
        let refs: Vec<&TerminalRecord> = records.iter().collect();
        let price = Price {
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
            cached_input_per_mtok: Some(0.25),
            cache_write_input_per_mtok: None,
        };
        let f = lane_figures(&section(), &refs, Some(price));
        assert_eq!((f.requests, f.completed, f.unknown_status), (11, 11, 1));
        assert_eq!((f.probes, f.probe_hits), (6, 4));
        assert_eq!(f.hit_rate, Some(4.0 / 6.0));
        let per_gap: Vec<(f64, u64, u64)> =
            f.gaps.iter().map(|g| (g.gap_s, g.probes, g.hits)).collect();
        assert_eq!(per_gap, vec![(10.0, 2, 2), (60.0, 2, 2), (120.0, 2, 0)]);
        assert_eq!(
            (f.ttl_longest_hit_s, f.ttl_shortest_miss_s),
            (Some(60.0), Some(120.0))
        );
        // Hits 50, 52, 55, 60: p50 (nearest rank, 2nd of 4) = 52; fresh misses 290, 300, 310:
        // p50 = 300; saving 248.
        assert_eq!(
            (f.ttfa_hit_p50_ms, f.ttfa_miss_p50_ms),
            (Some(52.0), Some(300.0))
        );
        assert_eq!(f.ttfa_saving_ms, Some(248.0));
        assert_eq!(f.ttfa_samples, (4, 3));
        let (lo, hi) = f.ttfa_saving_interval_ms;
        // Every resampled p50 is one of the observed values: 290 − 60 = 230 ≤ lo, hi ≤ 310 − 50.
        assert!(
            lo.unwrap() >= 230.0 && hi.unwrap() <= 260.0,
            "{lo:?} {hi:?}"
        );
        // Cost: 11 × (1000 prompt, 10 completion); cached 960 × 3 + 512 + 100 = 3,492.
        // With the cache: (11,000 − 3,492) × 1 + 3,492 × 0.25 + 110 × 2 = 8,601 per 1e6.
        // Without: 11,000 + 220 = 11,220 per 1e6.
        assert!(
            (f.cost_usd.unwrap() - 0.008601).abs() < 1e-12,
            "{:?}",
            f.cost_usd
        );
        assert!((f.cost_without_cache_usd.unwrap() - 0.011220).abs() < 1e-12);
    }

    #[test]
    fn a_ttl_above_every_gap_or_below_every_gap_is_open_on_one_side() {
        let gap = |gap_s, probes, hits| GapFigures {
            gap_s,
            probes,
            hits,
        };
        assert_eq!(
            ttl_bracket(&[gap(10.0, 2, 2), gap(60.0, 2, 2)]),
            (Some(60.0), None)
        );
        assert_eq!(
            ttl_bracket(&[gap(10.0, 2, 0), gap(60.0, 2, 0)]),
            (None, Some(10.0))
        );
        // A hit above the first miss (a noisy provider) does not raise the lower end.
        assert_eq!(
            ttl_bracket(&[gap(10.0, 2, 2), gap(30.0, 2, 0), gap(60.0, 2, 2)]),
            (Some(10.0), Some(30.0))
        );
    }
}
