//! The cache-probe workflow end to end against the embedded simulator's prefix cache: a smoke,
//! the full timetable through the real coordinator, an in-process probe and the simulator, and
//! the report, which must find the configured TTL and the hit-vs-miss TTFA difference.
//!
//! The simulator's `plain` profile with `?prefix_cache=on`: TTFA 40 ms + 0.1 ms per uncached
//! prompt token, blocks of 64 tokens, TTL 60 s after the last use, all × the time scale 0.25
//! here: the TTL lasts 15 real seconds. Gaps of 5, 10 and 12.5 s hit and 17.5 and 22.5 s miss,
//! each 2.5 s from the TTL: a send lag or a slow warm request would have to shift a probe by
//! 2.5 s to change the answer. A second lane (`sim://plain`, no cache) misses at every gap.
//! Expected TTFA per record, from its own usage: (40 + 0.1 × (prompt − cached)) × 0.25 ms; a
//! 4,000-token prefix makes a miss ≈ 110 ms and a hit ≈ 11 ms real.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use coordinator_support::{options, records};
use openbench_cache_probe::CacheProbe;
use openbench_cache_probe::figures::LaneFigures;
use openbench_common::record::Outcome;
use openbench_common::rundir as layout;
use openbench_common::workflow::{ReportOptions, Workflow};
use openbench_coordinator::{RunDir, RunStatus, prepare_inputs, run_full, run_smoke};
use std::path::Path;
use std::sync::Arc;

const SCALE: f64 = 0.25;

/// A lane with the cache and one without, both priced.
const PROVIDERS: &str =
    "  - {key: cached, endpoint: 'sim://plain?prefix_cache=on', model: m, api: openai-responses,
      price: {input_per_mtok: 1.0, output_per_mtok: 4.0, cached_input_per_mtok: 0.1}}
  - {key: nocache, endpoint: 'sim://plain', model: m, api: openai-responses,
      price: {input_per_mtok: 1.0, output_per_mtok: 4.0, cached_input_per_mtok: 0.1}}";

fn write_spec(dir: &Path, section: &str) -> std::path::PathBuf {
    write_spec_with(dir, PROVIDERS, section)
}

fn write_spec_with(dir: &Path, providers: &str, section: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let corpus = "the quick brown fox jumps over the lazy dog while seven wary owls \
                  watch a pale moon rise above the quiet harbour ";
    std::fs::write(dir.join("data/corpus.txt"), corpus.repeat(4)).unwrap();
    let spec = format!(
        "benchmark: {{slug: cache, workflow: cache-probe, schedule_version: cache-v1}}
request: {{temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 20000,
  harness_grace_ms: 60000}}
providers:
{providers}
dataset: {{source: data, manifest: corpus.txt}}
simulator: {{time_scale: {SCALE}, seed: 5}}
run_root: runs
{section}"
    );
    let path = dir.join("spec.yaml");
    std::fs::write(&path, spec).unwrap();
    path
}

const SECTION: &str = "cache_probe:
  prefix_tokens: 4000
  gaps_s: [5, 10, 12.5, 17.5, 22.5]
  repeats: 2
  spacing_s: 0.5
  pair_offset_s: 0.3
  max_output_tokens: 8
";

#[test]
fn the_section_is_checked_with_every_problem_named() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = "cache_probe: {gaps_s: [10, 5, -1], repeats: 0, prefix_tokens: 0}\ntypo: 1\n";
    let path = write_spec(tmp.path(), bad);
    let err = prepare_inputs(&path, Arc::new(CacheProbe), "c")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    for expected in [
        "typo: unknown section (cache-probe has `cache_probe`)",
        "cache_probe.prefix_tokens: 0 must be in 1..=1000000",
        "cache_probe.gaps_s[2]: -1 must be above 0",
        "cache_probe.gaps_s: [10.0, 5.0, -1.0] must be ascending",
        "cache_probe.repeats: must be at least 1",
    ] {
        assert!(err.contains(expected), "{expected}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_finds_the_simulators_ttl_and_hit_vs_miss_ttfa() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = write_spec(tmp.path(), SECTION);
    let inputs = prepare_inputs(&spec, Arc::new(CacheProbe), "test-code-digest").unwrap();
    let run = RunDir::create(&inputs, Some("T-1"), "test").unwrap();
    let smoke = run_smoke(&inputs, &run, &options(&inputs)).await.unwrap();
    assert!(smoke.passed, "{:?}", smoke.attempts);
    let outcome = run_full(&inputs, &run, "T-1", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    let recs = records(&run.dir.join(layout::FULL_RESULTS));
    // 5 gaps × 2 repeats × (warm, probe, fresh) per lane.
    assert_eq!(recs.len(), 2 * 30);
    // Causal: no request answered before its prefill allowed (TTFA from the send, the
    // simulator's timeline from receipt).
    for r in &recs {
        assert_eq!(r.outcome, Outcome::Completed, "{r:?}");
        let u = r.usage.as_ref().unwrap();
        let uncached = u.prompt_tokens.unwrap() - u.cached_tokens.unwrap();
        // Without the cache model, plain's TTFA is 40 ms whatever the prompt.
        let prefill = if r.lane == "cached" {
            0.1 * uncached as f64
        } else {
            0.0
        };
        let planned = (40.0 + prefill) * SCALE;
        assert!(r.ttfa_ms.unwrap() >= planned, "{}: {r:?}", r.item_id);
    }

    CacheProbe
        .report(&run.dir, &ReportOptions::default())
        .unwrap();
    let bytes = std::fs::read(run.dir.join(openbench_cache_probe::FIGURES_JSON)).unwrap();
    let lanes: Vec<LaneFigures> = serde_json::from_slice(&bytes).unwrap();
    let lane = |key: &str| lanes.iter().find(|l| l.lane == key).unwrap();

    let cached = lane("cached");
    let per_gap: Vec<(f64, u64, u64)> = cached
        .gaps
        .iter()
        .map(|g| (g.gap_s, g.probes, g.hits))
        .collect();
    assert_eq!(
        per_gap,
        [
            (5.0, 2, 2),
            (10.0, 2, 2),
            (12.5, 2, 2),
            (17.5, 2, 0),
            (22.5, 2, 0)
        ]
    );
    assert_eq!(
        (cached.probe_hits, cached.probes, cached.fresh_hits),
        (6, 10, 0)
    );
    // The configured TTL, 60 s × 0.25 = 15 s, lies in the bracket the probe found.
    assert_eq!(
        (cached.ttl_longest_hit_s, cached.ttl_shortest_miss_s),
        (Some(12.5), Some(17.5))
    );
    // The hit-vs-miss TTFA difference: expected from the records' own usage, the p50 of the
    // fresh misses' planned TTFA less the p50 of the hits'. Load adds to both; the test allows
    // the measured saving half of the expected either way (≈ 50 ms of the ≈ 100 ms).
    let planned = |kind: &str, hit: bool| {
        let mut v: Vec<f64> = recs
            .iter()
            .filter(|r| r.lane == "cached" && r.item_id.ends_with(kind))
            .filter_map(|r| {
                let u = r.usage.as_ref()?;
                let (prompt, cached) = (u.prompt_tokens?, u.cached_tokens?);
                ((cached * 2 >= prompt) == hit)
                    .then(|| (40.0 + 0.1 * (prompt - cached) as f64) * SCALE)
            })
            .collect();
        v.sort_by(f64::total_cmp);
        v[(v.len() - 1) / 2]
    };
    let expected = planned("fresh", false) - planned("probe", true);
    let saving = cached.ttfa_saving_ms.unwrap();
    println!(
        "cached lane: saving {saving:.1} ms (expected {expected:.1}), interval {:?}, \
         hit p50 {:?}, miss p50 {:?}",
        cached.ttfa_saving_interval_ms, cached.ttfa_hit_p50_ms, cached.ttfa_miss_p50_ms
    );
    assert!(expected > 90.0, "{expected}");
    assert!(
        (saving - expected).abs() <= 0.5 * expected,
        "saving {saving} vs {expected}"
    );
    let (lo, hi) = cached.ttfa_saving_interval_ms;
    assert!(lo.unwrap() <= saving && saving <= hi.unwrap());
    // Cached tokens at a tenth of the input price: cheaper than without the discount.
    assert!(cached.cost_usd.unwrap() < cached.cost_without_cache_usd.unwrap());

    // No cache: every probe misses, so the TTL is below the shortest gap; no discount.
    let plain = lane("nocache");
    assert_eq!((plain.probe_hits, plain.probes), (0, 10));
    assert_eq!(plain.hit_rate, Some(0.0));
    assert_eq!(
        (plain.ttl_longest_hit_s, plain.ttl_shortest_miss_s),
        (None, Some(5.0))
    );
    assert_eq!(plain.cost_usd, plain.cost_without_cache_usd);
    let summary = std::fs::read_to_string(run.dir.join(layout::REPORT_MD)).unwrap();
    assert!(summary.contains("12.5..17.5"), "{summary}");
}

/// A 4-turn conversation per lane after one short trial, on three simulated providers whose
/// truth is known: `cached` (plain's cache, 100,000 tokens) keeps it, so turn k's cached tokens
/// are turn k − 1's prompt to within the last partial 64-token block; `nocache` reuses nothing;
/// `small` (the same cache held to 512 tokens, `prefix_cache_tokens`) keeps only the first 512
/// tokens of a ≈ 2,000-token conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_stays_on_a_cache_that_holds_it_and_loses_one_too_small() {
    let tmp = tempfile::tempdir().unwrap();
    let providers = format!(
        "{PROVIDERS}
  - {{key: small, endpoint: 'sim://plain?prefix_cache=on&prefix_cache_tokens=512', model: m,
      api: openai-responses}}"
    );
    let section = "cache_probe:
  prefix_tokens: 2000
  gaps_s: [1]
  repeats: 1
  spacing_s: 0.5
  pair_offset_s: 0.3
  max_output_tokens: 8
  conversation_turns: 4
  conversation_think_s: 0.2
";
    let spec = write_spec_with(tmp.path(), &providers, section);
    let inputs = prepare_inputs(&spec, Arc::new(CacheProbe), "test-code-digest").unwrap();
    let run = RunDir::create(&inputs, Some("T-1"), "test").unwrap();
    let outcome = run_full(&inputs, &run, "T-1", &options(&inputs))
        .await
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    let recs = records(&run.dir.join(layout::FULL_RESULTS));
    // Per lane: warm, probe, fresh, then the conversation's 4 turns.
    assert_eq!(recs.len(), 3 * 7);
    CacheProbe
        .report(&run.dir, &ReportOptions::default())
        .unwrap();
    let bytes = std::fs::read(run.dir.join(openbench_cache_probe::FIGURES_JSON)).unwrap();
    let lanes: Vec<LaneFigures> = serde_json::from_slice(&bytes).unwrap();
    let lane = |key: &str| lanes.iter().find(|l| l.lane == key).unwrap();
    for key in ["cached", "nocache", "small"] {
        let l = lane(key);
        // The trials' figures hold the trials' three requests only.
        assert_eq!(l.requests, 3, "{key}");
        let c = l.conversation.as_ref().unwrap();
        assert_eq!(
            c.turns.iter().map(|t| t.turn).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        for pair in c.turns.windows(2) {
            let (before, now) = (&pair[0], &pair[1]);
            let previous = before.prompt_tokens.unwrap();
            let cached = now.cached_tokens.unwrap();
            assert_eq!(now.previous_prompt_tokens, Some(previous));
            // Each turn repeats the last and adds its answer and a question.
            assert!(now.prompt_tokens.unwrap() > previous, "{key}: {now:?}");
            match key {
                // Every full 64-token block of the previous prompt (⌈characters / 4⌉ tokens).
                "cached" => assert!(
                    cached <= previous && cached + 65 > previous,
                    "{key}: {cached} of {previous}"
                ),
                "nocache" => assert_eq!(cached, 0),
                _ => assert_eq!(cached, 512, "{key}: turn {}", now.turn),
            }
            // Read back from JSON: equal to the last bits or so.
            assert!((now.reuse.unwrap() - cached as f64 / previous as f64).abs() < 1e-12);
        }
        println!(
            "{key}: {:?}",
            c.turns.iter().map(|t| t.reuse).collect::<Vec<_>>()
        );
    }
    assert_eq!(
        lane("cached").conversation.as_ref().unwrap().stays_on_cache,
        Some(true)
    );
    assert_eq!(
        lane("nocache")
            .conversation
            .as_ref()
            .unwrap()
            .stays_on_cache,
        Some(false)
    );
    assert_eq!(
        lane("small").conversation.as_ref().unwrap().stays_on_cache,
        Some(false)
    );
    let report = std::fs::read_to_string(run.dir.join(layout::REPORT_MD)).unwrap();
    assert!(
        report.contains("Conversation: stays on its cache"),
        "{report}"
    );
    assert!(
        report.contains("Conversation: does not stay on its cache"),
        "{report}"
    );
}
