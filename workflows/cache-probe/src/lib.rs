//! The cache-probe workflow (docs/cache-probe.md): per lane, a long prefix is sent, then sent
//! again after a controlled gap, paired with a fresh prefix of the same length; the report gives
//! per provider and region the hit rate, the TTFA of hits vs misses with an interval, the longest
//! gap that still hits (the cache's TTL) and the cost at the provider's cached-input price.
//!
//! - [`section`]: the `cache_probe:` spec section.
//! - [`plan`]: the trials' timetable (one open-loop phase) and the prompts.
//! - [`figures`]: what the records say, per lane.
//! - [`conversation`]: whether a conversation stays on its cache across turns.

pub mod conversation;
pub mod figures;
pub mod plan;
pub mod section;

pub use section::CacheProbeSection;

use conversation::{ConversationProbe, conversation_figures};
use figures::{LaneFigures, lane_figures};
use openbench_common::hash::sha256_hex;
use openbench_common::record::TerminalRecord;
use openbench_common::rundir::{
    self as layout, RunLock, counting_records, read_json, write_atomic,
};
use openbench_common::schedule::{LoadPhase, Pacing, Phase, RequestSource, Schedule, lanes};
use openbench_common::spec::{LoadedSpec, Spec};
use openbench_common::workflow::{
    DatasetRelease, PlanInputs, ReportOptions, ReportOutcome, WorkItem, Workflow, WorkflowError,
    smoke_problem,
};
use plan::{GROUP, ProbeSource, timetable};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Requests a lane may have in flight at once (a probe and its fresh pair overlap at most
/// with a few warm sends).
const MAX_IN_FLIGHT: u32 = 8;

/// The figures file a report writes beside `report.md`.
pub const FIGURES_JSON: &str = "cache-probe.json";

/// The cache-probe workflow.
pub struct CacheProbe;

impl Workflow for CacheProbe {
    fn name(&self) -> &'static str {
        "cache-probe"
    }
    fn description(&self) -> &'static str {
        "prompt-cache truth: hit rate, hit vs miss TTFA, TTL and cached-price cost per provider"
    }
    fn check_spec(&self, spec: &mut Spec) -> Vec<String> {
        CacheProbeSection::check(spec)
    }
    fn item_groups(&self, _spec: &Spec) -> Vec<String> {
        vec![GROUP.to_string()]
    }
    /// The dataset is one text file (the manifest names it): the corpus the prefixes are cut
    /// from, one item holding it all.
    fn load_dataset(&self, dir: &Path, manifest: &str) -> Result<DatasetRelease, WorkflowError> {
        let path = dir.join(manifest);
        let failed = |e: &dyn std::fmt::Display| {
            WorkflowError(format!("corpus {}: {e}", path.display()).into())
        };
        let bytes = openbench_common::input_file::read_regular(
            &path,
            openbench_common::input_file::DATASET_FILE_BYTES,
        )
        .map_err(|e| failed(&e))?;
        let text = String::from_utf8(bytes.clone()).map_err(|e| failed(&e))?;
        if text.split_whitespace().next().is_none() {
            return Err(failed(&"no word of text"));
        }
        let file_hash = sha256_hex(&bytes);
        let item = WorkItem {
            group: GROUP.to_string(),
            item_id: "corpus".to_string(),
            system: String::new(),
            user: text,
            item_hash: file_hash.clone(),
        };
        Ok(DatasetRelease {
            dir: dir.to_path_buf(),
            release_hash: sha256_hex(format!("{manifest}:{file_hash}")),
            file_hashes: BTreeMap::from([(manifest.to_string(), file_hash)]),
            items: BTreeMap::from([(GROUP.to_string(), vec![item])]),
        })
    }
    fn plan(&self, inputs: &PlanInputs<'_>, attempt: u32) -> Result<Schedule, WorkflowError> {
        let mut section = CacheProbeSection::of(inputs.spec)?;
        if attempt > 0 {
            // The smoke: one trial of the shortest gap, back to back.
            section.gaps_s.truncate(1);
            section.repeats = 1;
        }
        let corpus = inputs
            .dataset
            .items
            .get(GROUP)
            .and_then(|items| items.first())
            .map_or("", |item| item.user.as_str());
        // The run's name tags every prefix; a smoke's are tagged apart, so the full run's first
        // trial finds nothing the smoke left in a cache.
        let run_id = inputs
            .run_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let run_id = match attempt {
            0 => run_id,
            n => format!("{run_id} smoke-{n}"),
        };
        let offsets: Vec<f64> = timetable(&section).iter().map(|s| s.at_ms).collect();
        let source: Arc<dyn RequestSource> = Arc::new(ProbeSource::new(&section, corpus, &run_id));
        let lanes = lanes(inputs.spec);
        let conversation = (attempt == 0 && section.conversation_turns > 0).then(|| {
            // One conversation per lane, opening at the phase's start.
            Phase::OpenLoop(LoadPhase {
                name: "conversation".to_string(),
                load: format!(
                    "cache probe: a {}-turn conversation",
                    section.conversation_turns
                ),
                pacing: Pacing::Releases {
                    offsets_ms: vec![vec![0.0]; lanes.len()],
                    max_in_flight: 1,
                },
                lanes: lanes.clone(),
                source: Arc::new(ConversationProbe::new(&section, corpus, &run_id)),
            })
        });
        let phase = Phase::OpenLoop(LoadPhase {
            name: if attempt == 0 { "probe" } else { "smoke" }.to_string(),
            load: format!(
                "cache probe: {} gaps × {} repeats",
                section.gaps_s.len(),
                section.repeats
            ),
            pacing: Pacing::Releases {
                offsets_ms: vec![offsets; lanes.len()],
                max_in_flight: MAX_IN_FLIGHT,
            },
            lanes,
            source,
        });
        Ok(Schedule {
            version: inputs.spec.benchmark.schedule_version.clone(),
            attempt,
            phases: std::iter::once(phase).chain(conversation).collect(),
        })
    }
    fn smoke_failures(
        &self,
        schedule: &Schedule,
        records: &BTreeMap<String, TerminalRecord>,
    ) -> Vec<String> {
        (0..schedule.phases.len())
            .flat_map(|phase| schedule.load_request_ids(phase))
            .filter_map(|id| smoke_problem(records.get(&id)).map(|why| format!("{id}: {why}")))
            .collect()
    }
    fn report(
        &self,
        run_dir: &Path,
        _options: &ReportOptions,
    ) -> Result<ReportOutcome, WorkflowError> {
        let fail = |e: layout::RunDirError| WorkflowError(Box::new(e));
        let lock: RunLock = read_json(&layout::path(run_dir, layout::RUN_LOCK)).map_err(fail)?;
        let section = locked_section(&lock)?;
        let records =
            counting_records(&layout::path(run_dir, layout::FULL_RESULTS)).map_err(fail)?;
        let lanes = per_lane(&section, &lock, records.values());
        let summary_table = summary(&lanes);
        let md = layout::path(run_dir, layout::REPORT_MD);
        let text = format!(
            "# {} — cache-probe\n\n{}\n```text\n{summary_table}```\n\n{}",
            lock.run_id,
            DEFINITIONS,
            gap_tables(&lanes)
        );
        write_atomic(&md, text.as_bytes()).map_err(fail)?;
        let json = layout::path(run_dir, FIGURES_JSON);
        let bytes = serde_json::to_vec_pretty(&lanes)
            .map_err(|e| WorkflowError(format!("{FIGURES_JSON}: {e}").into()))?;
        write_atomic(&json, &bytes).map_err(fail)?;
        Ok(ReportOutcome {
            summary_table,
            written: vec![md, json],
        })
    }
}

/// The `cache_probe:` section of the spec the run was locked with, refusing a spec edited since.
fn locked_section(lock: &RunLock) -> Result<CacheProbeSection, WorkflowError> {
    let spec_path = Path::new(&lock.spec_path);
    let spec = LoadedSpec::load_checked(spec_path, |spec| {
        spec.fill_benchmark_defaults(CacheProbe.name(), &CacheProbe.default_schedule_version());
        CacheProbeSection::check(spec)
    })
    .map_err(|e| WorkflowError(Box::new(e)))?;
    if sha256_hex(&spec.bytes) != lock.spec_sha256 {
        return Err(WorkflowError(
            format!(
                "spec {}: changed since run {} was locked (sha256 differs from the lock's)",
                spec_path.display(),
                lock.run_id
            )
            .into(),
        ));
    }
    CacheProbeSection::of(&spec.spec)
}

/// What the report's columns mean (docs/cache-probe.md has the rest).
const DEFINITIONS: &str = "A request hits when its usage reports cached tokens covering at least \
half its prompt. Hit rate: probes that hit. TTFA hit / miss: p50 of probes that hit and of fresh \
prefixes that missed; saving = miss − hit with a 95 % bootstrap interval. TTL: between the longest \
gap still hitting and the shortest gap missing. Cost: usage at the locked prices, cached tokens at \
the cached-input price (beside it, with no cache discount).\n";

/// The figures of every lane, in lane order.
fn per_lane<'a>(
    section: &CacheProbeSection,
    lock: &RunLock,
    records: impl Iterator<Item = &'a TerminalRecord>,
) -> Vec<LaneFigures> {
    let mut by_lane: BTreeMap<&str, Vec<&TerminalRecord>> = BTreeMap::new();
    for r in records {
        by_lane.entry(r.lane.as_str()).or_default().push(r);
    }
    by_lane
        .values()
        .map(|rs| {
            let provider = rs.first().map(|r| r.provider.as_str()).unwrap_or_default();
            let price = lock
                .providers
                .iter()
                .find(|p| p.key == provider)
                .and_then(|p| p.price());
            // The conversation's turns apart: the trials' figures are the trials' alone.
            let (talk, trials): (Vec<&TerminalRecord>, Vec<&TerminalRecord>) = rs
                .iter()
                .copied()
                .partition(|r| conversation::parse_item_key(&r.item_id).is_some());
            LaneFigures {
                conversation: conversation_figures(&talk),
                ..lane_figures(section, &trials, price)
            }
        })
        .collect()
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.1}"))
}

fn seconds(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v}"))
}

/// One line per lane: hit rate, TTFA of hits and misses, the saving and its interval, the TTL
/// bracket and the cost.
fn summary(lanes: &[LaneFigures]) -> String {
    let mut out = format!(
        "{:<16} {:>9} {:>11} {:>12} {:>10} {:>19} {:>16} {:>12} {:>12}\n",
        "Lane",
        "Hit rate",
        "TTFA hit",
        "TTFA miss",
        "Saving",
        "Saving 95% CI",
        "TTL (s)",
        "Cost USD",
        "No cache USD"
    );
    for l in lanes {
        let rate = l.hit_rate.map_or("-".to_string(), |r| {
            format!("{}/{} ", l.probe_hits, l.probes) + &format!("{:.0}%", r * 100.0)
        });
        let (lo, hi) = l.ttfa_saving_interval_ms;
        let ttl = format!(
            "{}..{}",
            seconds(l.ttl_longest_hit_s),
            seconds(l.ttl_shortest_miss_s)
        );
        let usd = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.6}"));
        out.push_str(&format!(
            "{:<16} {:>9} {:>11} {:>12} {:>10} {:>19} {:>16} {:>12} {:>12}\n",
            l.lane,
            rate,
            ms(l.ttfa_hit_p50_ms),
            ms(l.ttfa_miss_p50_ms),
            ms(l.ttfa_saving_ms),
            format!("[{}, {}]", ms(lo), ms(hi)),
            ttl,
            usd(l.cost_usd),
            usd(l.cost_without_cache_usd),
        ));
    }
    out
}

/// Per lane, the probes of each gap and how many hit.
fn gap_tables(lanes: &[LaneFigures]) -> String {
    let mut out = String::new();
    for l in lanes {
        out.push_str(&format!(
            "## {} ({} in {})\n\n| gap (s) | probes | hits |\n|---:|---:|---:|\n",
            l.lane, l.provider, l.region
        ));
        for g in &l.gaps {
            out.push_str(&format!("| {} | {} | {} |\n", g.gap_s, g.probes, g.hits));
        }
        out.push_str(&format!(
            "\nCompleted {} of {} requests; {} without a cached count in their usage; {} fresh \
             prefixes hit.\n\n",
            l.completed, l.requests, l.unknown_status, l.fresh_hits
        ));
        if let Some(c) = &l.conversation {
            out.push_str(&conversation::markdown(c));
        }
    }
    out
}
