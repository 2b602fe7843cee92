//! The report's figures against hand-computed values from [`super::fixture`].

use super::compute::{ITL_EDGES_MS, LoadMetrics, Row, compute, itl_histogram};
use super::fixture::results;
use super::{markdown, write_reports};
use crate::metrics::{FailureClass, RateVerdict};

fn metrics() -> LoadMetrics {
    compute(&results())
}

fn row<'a>(m: &'a LoadMetrics, step: usize, name: &str) -> &'a Row {
    let s = &m.steps[step];
    if name == "pooled" {
        return &s.pooled;
    }
    s.lanes.iter().find(|r| r.name == name).unwrap()
}

#[test]
fn a_lanes_latencies_are_nearest_rank_from_actual_and_scheduled_sends() {
    let m = metrics();
    let a = &row(&m, 0, "a").metrics;
    // Measured: the four due in [0, 2000) ms; the one due at 2000 is cool-down.
    assert_eq!((a.measured, a.completed), (4, 3));
    // TTFA of the completed: 100, 200, 300 → p50 rank 2, p99 rank 3.
    assert_eq!((a.ttfa_ms.p50, a.ttfa_ms.p99), (Some(200.0), Some(300.0)));
    assert_eq!((a.e2e_ms.p50, a.e2e_ms.p99), (Some(260.0), Some(700.0)));
    // From the schedule: + send lag (10, 0, 0) → 110, 200, 300; E2E 160, 260, 700.
    let sched = a.ttfa_sched_ms.as_ref().unwrap();
    assert_eq!((sched.p50, sched.p99), (Some(200.0), Some(300.0)));
    assert_eq!(sched.p01, Some(110.0));
    assert_eq!(a.e2e_sched_ms.as_ref().unwrap().p01, Some(160.0));
    // Send lag of every measured request, 429 included: 10, 0, 30, 0.
    let lag = a.send_lag_ms.as_ref().unwrap();
    assert_eq!((lag.count, lag.p50, lag.p99), (4, Some(0.0), Some(30.0)));
    assert_eq!(row(&m, 0, "a").send_lag_max_ms, Some(30.0));
    // TPOT: 50/2, 60/3, 400/1.
    assert_eq!(a.tpot_ms.p50, Some(25.0));
}

#[test]
fn itl_pools_every_gap_between_answer_chunks() {
    let m = metrics();
    let a = row(&m, 0, "a");
    // Gaps 20, 30 | 10, 20, 30 | 400.
    let itl = &a.metrics.itl_ms;
    assert_eq!(itl.count, 6);
    assert_eq!(itl.mean, Some(85.0));
    assert_eq!(
        (itl.p50, itl.p90, itl.p99),
        (Some(20.0), Some(400.0), Some(400.0))
    );
    assert_eq!(a.itl_histogram, vec![0, 0, 0, 0, 1, 4, 0, 0, 1, 0, 0]);
    // Pooled with lane b's four 10 ms gaps: 10×5, 20×2, 30×2, 400.
    let pooled = row(&m, 0, "pooled");
    let itl = &pooled.metrics.itl_ms;
    assert_eq!(
        (itl.p50, itl.p90, itl.p99),
        (Some(10.0), Some(30.0), Some(400.0))
    );
    assert_eq!(pooled.itl_histogram, vec![0, 0, 0, 0, 5, 4, 0, 0, 1, 0, 0]);
}

#[test]
fn the_histogram_buckets_are_closed_below_and_open_above() {
    let gaps = [0.5, 1.0, 1.999, 999.0, 1000.0, 5000.0];
    assert_eq!(ITL_EDGES_MS.len(), 10);
    assert_eq!(
        itl_histogram(gaps.into_iter()),
        vec![1, 2, 0, 0, 0, 0, 0, 0, 0, 1, 2]
    );
}

#[test]
fn throughput_goodput_and_achieved_rate_follow_the_definitions() {
    let m = metrics();
    let a = &row(&m, 0, "a").metrics;
    // D: window start 0 to the last measured end, 1500 + 700 ms = 2.2 s; three measured
    // completed: the drain rate 3 / 2.2.
    assert_eq!(a.duration_s, Some(2.2));
    assert_eq!(a.drain_requests_per_s, Some(3.0 / 2.2));
    // Completed inside [0, 2000): ends 10 + 160 = 170 and 500 + 270 = 770; 1500 + 700 = 2200
    // and the cool-down's 2060 are past it. Two over 2 s: 1/s; tokens 3 + 4 = 7 → 3.5/s;
    // prompts 10 + 10 → 10/s.
    assert_eq!(a.completed_in_window, 2);
    assert_eq!(a.request_throughput_per_s, Some(1.0));
    assert_eq!(a.output_tokens_per_s, Some(3.5));
    assert_eq!(a.input_tokens_per_s, Some(10.0));
    // Usage on one of them: 4 against 3 o200k tokens.
    assert_eq!(a.usage.requests, 1);
    assert_eq!(a.usage.output_per_s, Some(2.0));
    assert_eq!(a.usage.output_discrepancy, Some(1.0 / 3.0));
    // Four sent in a 2 s window at a target of 2/s; three of them completed (1.5/s < 95% of 2).
    assert_eq!(a.rate.target_per_s, Some(2.0));
    assert_eq!((a.rate.achieved_per_s, a.rate.completed_per_s), (2.0, 1.5));
    assert_eq!(a.rate.verdict, RateVerdict::ServerBehind);
    // TTFA ≤ 250: 100 and 200 → 2 good of 4 measured, 2 over the 2 s window.
    assert_eq!(a.goodput.good, 2);
    assert_eq!(a.goodput.fraction, 0.5);
    assert_eq!(a.goodput.per_s, Some(1.0));
    assert!(!a.sustained);
    let b = &row(&m, 0, "b").metrics;
    // b: four ends at 60, 560, 1060, 1560, all inside: 2/s; all four completed: on target, all
    // good.
    assert_eq!(b.request_throughput_per_s, Some(2.0));
    assert_eq!(b.rate.verdict, RateVerdict::OnTarget);
    assert!(b.sustained);
    // Pooled: targets summed (4/s), eight sent, 2 + 4 completed in the window, six good.
    let p = &row(&m, 0, "pooled").metrics;
    assert_eq!(p.rate.target_per_s, Some(4.0));
    assert_eq!(p.rate.achieved_per_s, 4.0);
    assert_eq!(p.request_throughput_per_s, Some(3.0));
    assert_eq!(p.goodput.fraction, 0.75);
    assert_eq!((p.ttfa_ms.p50, p.ttfa_ms.p99), (Some(50.0), Some(300.0)));
    assert_eq!(m.steps[0].harness_failures, 1);
}

#[test]
fn rate_limited_requests_keep_their_retry_after() {
    let m = metrics();
    let a0 = row(&m, 0, "a");
    assert_eq!(
        a0.metrics.failures.get(&FailureClass::RateLimited),
        Some(&1)
    );
    assert_eq!(
        (a0.retry_after.rate_limited, a0.retry_after.with_header),
        (1, 1)
    );
    assert_eq!(a0.retry_after.max_s, Some(2.0));
    let a1 = row(&m, 1, "a");
    assert_eq!(
        a1.metrics.failures.get(&FailureClass::RateLimited),
        Some(&4)
    );
    let ra = &a1.retry_after;
    assert_eq!((ra.rate_limited, ra.with_header), (4, 2));
    assert_eq!(
        (ra.min_s, ra.p50_s, ra.max_s),
        (Some(1.0), Some(1.0), Some(3.0))
    );
    // Lane b has no 429 and no wait.
    assert_eq!(row(&m, 1, "b").retry_after.with_header, 0);
}

#[test]
fn the_saturation_point_is_the_highest_sustained_step_per_kind() {
    let m = metrics();
    let names: Vec<&str> = m.saturation.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["a", "b"]);
    let (a, b) = (&m.saturation[0], &m.saturation[1]);
    // a: no open-loop step sustained; the closed step (2 users, all good) was.
    assert_eq!(a.open, None);
    let closed = a.closed.as_ref().unwrap();
    assert_eq!(
        (closed.step, closed.load, closed.achieved_per_s),
        (2, 2.0, 4.0)
    );
    // b: both open steps sustained; the 4/s one is the highest. Its closed step had no requests.
    let open = b.open.as_ref().unwrap();
    assert_eq!(
        (open.step, open.label.as_str(), open.load),
        (1, "constant 4/s", 4.0)
    );
    assert_eq!(b.closed, None);
}

#[test]
fn report_md_has_its_sections_in_order_and_the_summary_rows() {
    let md = markdown::render(&metrics());
    let headings: Vec<&str> = md.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(
        headings,
        vec![
            "# Load report: run-load-1",
            "## Summary",
            "## Latency from the actual send (ms)",
            "## Latency intervals (95% bootstrap over requests, 1000 replicates; none under 30 values)",
            "## Timed from the scheduled send (open-loop steps)",
            "## Goodput per step",
            "## Saturation point",
            "## Failures by step",
            "## Inter-token latency (ms; values per bucket)",
            "## Throughput (o200k and provider usage)",
        ]
    );
    assert!(md.contains("- SLO: ttfa_ms ≤ 250.\n"));
    assert!(md.contains("- Note: provider b does not honour ignore_eos\n"));
    assert!(md.contains(
        "| 0 constant 2/s | a | 2/s | 2.00 | 200.0 | 300.0 | 400.0 | 700.0 | 50.00% | no |\n"
    ));
    assert!(md.contains(
        "| 2 closed c=2 | a | 2 users | 4.00 | 100.0 | 100.0 | 50.0 | 150.0 | 100.00% | yes |\n"
    ));
    assert!(md.contains(
        "| 0 constant 2/s | a | 200.0 | 200.0 | 300.0 | 300.0 | 700.0 | 700.0 | 0.0 | 30.0 | 30.0 |\n"
    ));
    assert!(md.contains("| b | none sustained | step 1 (constant 4/s), achieved 4.00/s |\n"));
    assert!(md.contains(
        "| 1 constant 4/s | a | 4 | 0 | 4 | 0 | 0 | 0 | 0 | 0 | 0 | 2/4 | 1.00/1.00/3.00 |\n"
    ));
    assert!(md.contains("Harness failures (not the providers'): step 0: 1.\n"));
    assert!(!md.contains("Interrupted and resumed"));
}

/// A step whose records came from two sittings is named, with its sittings, under the
/// failures; the other steps are not.
#[test]
fn a_step_resumed_mid_way_is_flagged_with_its_sittings() {
    let mut results = results();
    results.steps[1].sittings = vec![1, 3];
    let m = compute(&results);
    assert_eq!(m.steps[1].sittings, [1, 3]);
    let md = markdown::render(&m);
    assert!(
        md.contains("Interrupted and resumed mid-step: step 1 (sittings 1, 3). Each sitting's"),
        "{md}"
    );
    assert!(!md.contains("step 0 (sittings"), "{md}");
    let html = super::html::render(&m);
    assert!(
        html.contains("<p>Interrupted and resumed mid-step: step 1 (sittings 1, 3)."),
        "{html}"
    );
    assert!(!super::html::render(&metrics()).contains("Interrupted and resumed"));
}

#[test]
fn write_reports_writes_three_files_with_the_same_bytes_twice() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = write_reports(dir.path(), &results()).unwrap();
    let names: Vec<String> = outcome
        .written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["report.md", "report.html", "load-metrics.json"]);
    let first: Vec<Vec<u8>> = outcome
        .written
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    write_reports(dir.path(), &results()).unwrap();
    let second: Vec<Vec<u8>> = outcome
        .written
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert_eq!(first, second);
    let json: serde_json::Value = serde_json::from_slice(&first[2]).unwrap();
    assert_eq!(
        json["steps"][0]["lanes"][0]["metrics"]["ttfa_ms"]["p50"],
        200.0
    );
    assert_eq!(
        json["steps"][1]["lanes"][0]["metrics"]["failures"]["rate_limited"],
        4
    );
    assert_eq!(json["saturation"][1]["open"]["step"], 1);
    assert!(outcome.summary_table.starts_with("Step"));
    assert!(outcome
        .summary_table
        .contains("saturation point of b: closed loop none sustained; open loop step 1 (constant 4/s), achieved 4.00/s\n"));
}

#[test]
fn report_html_is_self_contained_with_curves_and_the_saturation_ring() {
    let html = super::html::render(&metrics());
    for heading in [
        "<h2>Summary</h2>",
        "<h2>Throughput against offered load</h2>",
        "<h2>Latency against offered load</h2>",
        "<h2>Inter-token latency (ms; values per bucket)</h2>",
        "<h2>Goodput per step</h2>",
        "<h2>Saturation point</h2>",
        "<h2>Failures by step</h2>",
    ] {
        assert!(html.contains(heading), "{heading}");
    }
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"));
    // Ringed saturation points: b's open step in the 5 open-loop charts (requests/s, output
    // tokens/s, TTFA, ITL, E2E) and a's closed step in the 5 closed-loop ones.
    assert_eq!(html.matches("r=\"8\"").count(), 10);
    // The x axis is the offered load: no note of a vertical line, as no lane repeats a load.
    assert!(!html.contains("joins them vertically"));
}

#[test]
fn scored_runs_report_task_success_under_load() {
    let mut run = results();
    run.scored = true;
    // Step 0, lane b: right, wrong, right, unscored (None counts as not right).
    for (k, correct) in [(5, Some(true)), (6, Some(false)), (7, Some(true))] {
        run.steps[0].samples[k].correct = correct;
    }
    let m = compute(&run);
    let b = row(&m, 0, "b");
    assert_eq!(b.task_success, Some(0.5));
    // The wrong answer is not good: 3 of 4 met the SLO and were not wrong.
    assert_eq!(b.metrics.goodput.good, 3);
    // Lane a: 4 measured, none scored right.
    assert_eq!(row(&m, 0, "a").task_success, Some(0.0));
    assert_eq!(metrics().steps[0].lanes[1].task_success, None);
    let md = markdown::render(&m);
    assert!(md.contains("a good request also needs an exactly right answer"));
    assert!(md.contains(
        "| 0 constant 2/s | b | 2.00 | 2.00 | 2.00 | on_target | 4 | — | 3 | 1.50 | 75.00% | no | 50.00% |\n"
    ));
}

#[test]
fn an_empty_run_still_writes_every_report() {
    let mut run = results();
    run.steps.clear();
    run.notes.clear();
    let dir = tempfile::tempdir().unwrap();
    let outcome = write_reports(dir.path(), &run).unwrap();
    assert_eq!(outcome.written.len(), 3);
    let md = std::fs::read_to_string(&outcome.written[0]).unwrap();
    assert!(md.contains("## Summary\n\nNo steps ran.\n"));
    assert!(md.contains("No open-loop step ran."));
    let html = std::fs::read_to_string(&outcome.written[1]).unwrap();
    assert!(html.ends_with("</html>\n"));
}

#[test]
fn a_provider_in_two_regions_gets_a_pooled_row_and_its_own_saturation_point() {
    let mut run = results();
    run.steps.truncate(1);
    let step = &mut run.steps[0];
    // Lane a becomes acme@eu, lane b acme@us: one provider at 2/s per region.
    for lane in &mut step.lanes {
        lane.region = if lane.lane == "a" { "eu" } else { "us" }.into();
        lane.lane = format!("acme@{}", lane.region);
        lane.provider = "acme".into();
    }
    for s in &mut step.samples {
        s.lane = if s.lane == "a" { "acme@eu" } else { "acme@us" }.into();
    }
    step.samples.push(super::fixture::done(
        "stray",
        Some(0.0),
        0.0,
        &[1.0],
        1.0,
        1,
    ));
    let m = compute(&run);
    let acme = &m.steps[0].providers[0];
    assert_eq!(acme.name, "acme");
    // The regions' targets add up; the provider row pools both lanes (8 measured, 6 good).
    assert_eq!(acme.load, 4.0);
    assert_eq!(acme.metrics.rate.target_per_s, Some(4.0));
    assert_eq!(acme.metrics.rate.achieved_per_s, 4.0);
    assert_eq!((acme.metrics.measured, acme.metrics.goodput.good), (8, 6));
    assert!(!acme.metrics.sustained);
    let names: Vec<&str> = m.saturation.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["acme@eu", "acme@us", "acme"]);
    assert_eq!(m.saturation[1].open.as_ref().map(|p| p.step), Some(0));
    assert_eq!(m.saturation[2].open, None);
    // The pooled row counts listed lanes only, and the report says what it left out.
    assert_eq!(m.steps[0].pooled.metrics.measured, 8);
    assert_eq!(
        m.notes.last().map(String::as_str),
        Some("step 0: requests of lanes the step does not list are not counted: stray (1)")
    );
}

#[test]
fn latency_intervals_need_thirty_values_and_bracket_the_percentile() {
    // The hand-built run has at most 4 completed requests per row: no interval.
    let m = metrics();
    assert_eq!(row(&m, 0, "a").intervals.ttfa_p50_ms, None);
    // 40 requests of TTFA 100 ms (E2E 110 ms): every resample gives the same percentiles.
    let m = compute(&super::fixture::forty("A", 100.0, &[]));
    let i = &m.steps[0].lanes[0].intervals;
    assert_eq!(i.ttfa_p50_ms, Some((100.0, 100.0)));
    assert_eq!(i.e2e_p99_ms, Some((110.0, 110.0)));
    // Half at 100 and half at 200 ms: a resample's median is either, each in about half of the
    // 1,000 replicates, so the 2.5% and 97.5% points are 100 and 200.
    let half: Vec<usize> = (0..20).collect();
    let m = compute(&super::fixture::forty("A", 100.0, &half));
    let i = &m.steps[0].lanes[0].intervals;
    assert_eq!(i.ttfa_p50_ms, Some((100.0, 200.0)));
    let md = markdown::render(&m);
    assert!(md.contains("| 0 constant 10/s | x | [100.0, 200.0] | [200.0, 200.0] | [110.0, 210.0] | [210.0, 210.0] |\n"));
}

#[test]
fn a_kind_of_load_that_never_ran_reads_no_steps_not_none_sustained() {
    // The fixture without its closed-loop step (step 2): only open loops ran.
    let mut only_open = results();
    only_open.steps.retain(|s| s.index != 2);
    let text = markdown::summary_text(&compute(&only_open));
    assert!(
        text.contains(
            "saturation point of b: closed loop no steps; open loop step 1 (constant 4/s), achieved 4.00/s\n"
        ),
        "{text}"
    );
}
