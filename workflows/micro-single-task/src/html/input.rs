//! Building [`HtmlReportInput`] from what the report step already computed: the lock, the
//! metrics, the paired comparisons (via the markdown's [`ReportContext`]) and the final records'
//! observations (for the raw samples behind the CDFs and head-to-head shares).

use super::{
    FamilyFigures, Figures, HtmlReportInput, LaneWins, PairMedian, PairedReport, ProviderReport,
    Sample,
};
use crate::metrics::{LaneTable, Observation, Summary};
use crate::report::markdown::ReportContext;

impl From<&Summary> for Figures {
    fn from(s: &Summary) -> Self {
        Figures {
            submitted: s.submitted_count,
            e2e_p50: s.e2e_latency_p50,
            e2e_p99: s.e2e_latency_p99,
            ttfa_p50: s.ttfa_p50,
            tps_p50: s.output_tokens_per_second_p50,
            tps_p95_floor: s.output_tokens_per_second_p95,
            task_success_rate: s.task_success_rate,
            failure_rate: s.failure_rate,
        }
    }
}

impl HtmlReportInput {
    /// The page's input for a run: figures from `ctx.metrics`, win shares and median differences
    /// from `ctx.paired`, provenance from `ctx.lock` and `ctx.period`, and the timings of the
    /// completed (non-harness) `observations`, whose lane indices point into `lanes`.
    pub fn from_report(
        ctx: &ReportContext<'_>,
        observations: &[Observation],
        lanes: &LaneTable,
    ) -> HtmlReportInput {
        let m = ctx.metrics;
        let lock = ctx.lock;
        // One pass over the records, bucketed by lane index (in record order within a lane).
        let mut samples_by_lane: Vec<Vec<Sample>> = vec![Vec::new(); lanes.lanes.len()];
        for o in observations
            .iter()
            .filter(|o| o.completed && !o.is_harness())
        {
            if let Some(bucket) = samples_by_lane.get_mut(o.lane as usize) {
                bucket.push(Sample {
                    round_index: o.round_index,
                    ttfa_ms: o.ttfa_ms,
                    e2e_ms: o.e2e_ms,
                    tokens_per_second: o.tokens_per_second,
                });
            }
        }
        let index_of = lanes.index_by_label();
        let providers = m
            .providers
            .iter()
            .map(|p| {
                let samples = index_of
                    .get(p.lane.as_str())
                    .and_then(|i| samples_by_lane.get_mut(*i))
                    .map(std::mem::take)
                    .unwrap_or_default();
                ProviderReport {
                    lane: p.lane.clone(),
                    display_name: p.display_name.clone(),
                    pooled: Figures::from(&p.pooled),
                    families: p
                        .families
                        .iter()
                        .map(|f| FamilyFigures {
                            family: f.task_family.clone(),
                            figures: Figures::from(f),
                        })
                        .collect(),
                    samples,
                    rank: p.rank,
                    ineligibility_reasons: p.ineligibility_reasons.clone(),
                }
            })
            .collect();
        let paired = PairedReport {
            lanes: ctx.paired.lanes.clone(),
            excluded: ctx.paired.excluded_incompatible.clone(),
            rounds_with_winner: ctx.paired.rounds_with_winner,
            wins: ctx
                .paired
                .wins
                .iter()
                .map(|w| LaneWins {
                    lane: w.lane.clone(),
                    wins: w.wins,
                    win_share: w.win_share,
                })
                .collect(),
            pairs: ctx
                .paired
                .pairs
                .iter()
                .map(|d| PairMedian {
                    a: d.a.clone(),
                    b: d.b.clone(),
                    count: d.count,
                    e2e_diff_p50: d.e2e_diff_p50,
                })
                .collect(),
        };
        let mut provenance = vec![
            ("Run id".to_string(), lock.run_id.clone()),
            ("Workflow".to_string(), lock.workflow.clone()),
            ("Benchmark slug".to_string(), lock.benchmark_slug.clone()),
            (
                "Schedule version".to_string(),
                lock.schedule_version.clone(),
            ),
            ("Model".to_string(), lock.model_label.clone()),
            (
                "Period".to_string(),
                match &ctx.period {
                    Some((start, end, source)) => format!("{start} → {end} (from {source})"),
                    None => "unknown (no records)".to_string(),
                },
            ),
            (
                "Records".to_string(),
                format!("{} final records from {}", m.final_records, m.records_file),
            ),
            (
                "Spec".to_string(),
                format!("{} (sha256 {})", lock.spec_path, lock.spec_sha256),
            ),
            (
                "Dataset release".to_string(),
                lock.dataset_release_hash.clone(),
            ),
            ("Adapters sha256".to_string(), lock.adapters_sha256.clone()),
            (
                "Tokenizer".to_string(),
                format!(
                    "{} (ranks sha256 {})",
                    lock.tokenizer, lock.tokenizer_ranks_sha256
                ),
            ),
            ("Code sha256".to_string(), lock.code_sha256.clone()),
            ("Program version".to_string(), lock.program_version.clone()),
            (
                "Request deadline".to_string(),
                format!("{} ms", lock.timeout_ms),
            ),
        ];
        if let Some(id) = &lock.approval_id {
            provenance.push(("Approval id".to_string(), id.clone()));
        }
        let mut notes = Vec::new();
        if let Some(scale) = lock.simulator_time_scale {
            notes.push(format!(
                "Simulated providers: this run targeted the embedded simulator with time scale \
                 {scale} (every simulated delay multiplied by {scale}). Its latencies and speeds \
                 describe the simulator's profiles, not any real provider."
            ));
        }
        HtmlReportInput {
            time_scale: lock.simulator_time_scale,
            validity: m.validity.clone(),
            repeats: m.repeats.clone(),
            title: format!("Inference benchmark: {}", lock.model_label),
            header_notes: ctx.accepted.to_vec(),
            subtitle: format!(
                "Run {} · {} · {} rounds · {} providers",
                m.run_id,
                m.workflow,
                m.rounds,
                m.providers.len()
            ),
            families: m.families.clone(),
            providers,
            paired,
            min_task_success_rate: m.thresholds.min_task_success_rate,
            max_failure_rate: m.thresholds.max_failure_rate,
            provenance,
            notes,
        }
    }
}
