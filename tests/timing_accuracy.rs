#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Timestamp correctness of the probe against the simulator's own record of its writes, with
//! bounds no load can break: the simulator runs in this process, so the probe, the simulator
//! and the test read one monotonic clock, and every bound below follows from causality on it.
//!
//! - **Lower bound, against the upstream's clock.** The simulator stamps each write before
//!   handing it to the socket and counts from the moment the request arrived; the probe takes
//!   its zero before sending and stamps an event after reading it. So every event's probe offset
//!   is at least the simulator's offset of that write: lead = probe − simulator ≥ 0, with no
//!   offset removed. A zero taken late (after sending) or a stamp taken before the read breaks it.
//! - **Upper bound, against the test's clock.** The test stamps `before` just ahead of
//!   `execute` and `after` right behind it; the probe's zero lies after `before` and its last
//!   read before `after`, so the last offset is at most `after − before`. The difference, the
//!   "slack", is the probe's bookkeeping outside its clock (well under a millisecond). A zero
//!   taken 10 ms early adds 10 ms to every offset and breaks the bound on every request whose
//!   slack is under 10 ms — all eight of them would have to be stalled longer to hide it.
//! - **A loose statistical check.** A request's lead is nearly constant: the time from the
//!   probe's zero to the simulator's receipt (2–15 ms here: eight debug-build requests sent from
//!   one worker thread) plus each read's small delay. Its spread — the lead above the request's
//!   smallest — has a median under 100 ms over all 984 paired events: stamps taken late (after
//!   buffering a body, say) miss by hundreds of ms, while load would have to hold the probe back
//!   by 100 ms on most events to reach it.
//!
//! The same schedule runs in every API dialect, the simulator framing it as each dialect's
//! servers do. Chat writes one event per write, so all 33 events of a request are paired with
//! their writes; in Anthropic messages, Responses and legacy completions each of the 30 answer
//! events is paired with the write that carried its piece (the simulator labels a write by its
//! last event, and the piece is last): the events that time TTFA and E2E.
//!
//! The lead's and the spread's p50/p99/max are printed, not asserted: strict timing figures
//! belong to the benchmark (`bench fidelity`), where the build and the machine are controlled.

use openbench_common::record::{Classification, Execution, Outcome};
use openbench_common::request::{ChatMessage, PlannedRequest, RequestIdentity, Role};
use openbench_common::spec::{Api, ProviderAdapter, RequestContract};
use openbench_common::stats::nearest_rank;
use openbench_probe::{Credentials, Executor};
use openbench_simulator::{SimConfig, start};
use std::collections::BTreeMap;
use std::time::Instant;

const REQUESTS: usize = 8;
const CHUNKS: usize = 30;

/// Gaps of request `r`: the role chunk 30 + 5r ms after the request (every connection is set up
/// by then, and the requests' events interleave instead of coinciding), the first answer piece
/// 150 ms later, then 29 gaps in 0..=80 ms from a fixed linear congruential sequence (the same on
/// every run).
fn schedule(r: usize) -> Vec<u64> {
    let mut state = 12_345u64 + r as u64;
    let mut gaps = vec![30 + 5 * r as u64, 150];
    for _ in 1..CHUNKS {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        gaps.push((state >> 33) % 81);
    }
    gaps
}

/// An executor speaking `api` whose requests follow request `r`'s schedule and carry
/// `x-sim-id: <id>`.
fn executor(api: Api, endpoint: String, id: &str, r: usize) -> Executor {
    let gaps: Vec<String> = schedule(r).iter().map(u64::to_string).collect();
    let extra_headers = BTreeMap::from([
        ("x-sim-schedule".to_string(), gaps.join(",")),
        ("x-sim-id".to_string(), id.to_string()),
    ]);
    let adapter = ProviderAdapter {
        api,
        extra_headers,
        ..ProviderAdapter::open("sim", &endpoint, "zai-org/GLM-5.3-Flash")
    };
    let contract = RequestContract::reference(20_000);
    Executor::new(adapter, contract, &Credentials::empty()).unwrap()
}

async fn execute(executor: Executor, r: usize) -> Execution {
    let request = PlannedRequest {
        identity: RequestIdentity {
            run_id: "run-timing".into(),
            round_id: format!("round-{r}"),
            request_id: format!("req-{r}"),
            round_index: r as u64,
            attempt: 0,
            task_family: "ticket-triage".into(),
            item_id: format!("item-{r}"),
            provider: "sim".into(),
            region: "local".into(),
            lane: "sim".into(),
            ..RequestIdentity::default()
        },
        messages: vec![ChatMessage::text(Role::User, format!("question {r}"))],
        deadline_ms: 20_000,
        output: None,
        load: None,
        tool: None,
        tools: Vec::new(),
    };
    executor.execute(&request).await
}

/// Writes of one scheduled chat request: role, 30 answer pieces, finish, `[DONE]`.
const WRITES: usize = CHUNKS + 3;
/// Largest median spread of the lead (above its request's smallest) over all events, ms: far
/// above any delay a loaded machine imposes on most reads, far below the error of late stamps.
const MEDIAN_SPREAD_LIMIT_MS: f64 = 100.0;

/// Every dialect in turn (the simulator frames the same schedule in each: one write per drafted
/// event, the answer piece last in its write). In every dialect each answer event is paired with
/// the write that carried its piece; in chat, whose every write is one event, every event is.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn probe_timestamps_are_bounded_by_the_simulators_clock_and_the_tests() {
    let (base, addr, stop) = simulator_thread();
    let mut leads_ms = Vec::new();
    let mut spreads_ms = Vec::new();
    let mut slacks_ms = Vec::new();
    for api in Api::ALL {
        // Build every executor (and the tokenizer) before anything is measured, and run one
        // unchecked round so connections are open and lazy initialisation is done on both sides.
        let endpoint = api.post_url(&base);
        let executors: Vec<Executor> = (0..REQUESTS)
            .map(|r| executor(api, endpoint.clone(), &format!("timing-{api}-{r}"), r))
            .collect();
        let _ = run_round(&executors).await;
        let runs = run_round(&executors).await;
        for (r, (e, elapsed_ms)) in runs.iter().enumerate() {
            // Each request id's log holds the warm-up's writes, then this round's.
            let log = write_log(addr, &format!("timing-{api}-{r}")).await;
            assert_eq!(log.len() % 2, 0, "{api} request {r}");
            let writes = &log[log.len() / 2..];
            let (leads, slack) = check_request(api, r, e, *elapsed_ms, writes);
            let smallest = leads.iter().copied().fold(f64::INFINITY, f64::min);
            spreads_ms.extend(leads.iter().map(|lead| lead - smallest));
            leads_ms.extend(leads);
            slacks_ms.push(slack);
        }
    }
    let _ = stop.send(());

    let us = |values: &[f64], p: f64| nearest_rank(values, p).unwrap() * 1000.0;
    println!(
        "timing over {} events: lead (probe − simulator) p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs; \
         spread above the request's smallest lead p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs; \
         slack outside the probe's clock per request min {:.0} µs, p50 {:.0} µs",
        leads_ms.len(),
        us(&leads_ms, 0.5),
        us(&leads_ms, 0.99),
        us(&leads_ms, 1.0),
        us(&spreads_ms, 0.5),
        us(&spreads_ms, 0.99),
        us(&spreads_ms, 1.0),
        us(&slacks_ms, 0.01),
        us(&slacks_ms, 0.5),
    );
    // Chat pairs all 33 events of a request, the other dialects their 30 answer events.
    assert_eq!(leads_ms.len(), REQUESTS * (WRITES + 3 * CHUNKS));
    let median_spread = nearest_rank(&spreads_ms, 0.5).unwrap();
    assert!(
        median_spread < MEDIAN_SPREAD_LIMIT_MS,
        "median spread {median_spread:.3} ms: events are stamped long after they arrive"
    );
}

/// Checks request `r` of `api` against its writes (this round's): the schedule was honoured,
/// no paired event is stamped before its write, the last event no later than `execute`
/// returned. Returns each paired event's lead (probe − simulator, ms) and the slack.
fn check_request(
    api: Api,
    r: usize,
    e: &Execution,
    elapsed_ms: f64,
    writes: &[Stamp],
) -> (Vec<f64>, f64) {
    assert_eq!(e.record.outcome, Outcome::Completed, "{api} request {r}");
    assert_eq!(
        e.events.last().map(|ev| ev.classification),
        Some(Classification::Done),
        "{api} request {r}"
    );
    let answers: Vec<usize> = (0..e.events.len())
        .filter(|&i| e.events[i].classification == Classification::Answer)
        .collect();
    assert_eq!(answers.len(), CHUNKS, "{api} request {r}");
    // TTFA is the first answer piece's stamp, E2E the last one's.
    let offset = |i: usize| e.events[i].offset_ms;
    assert_eq!(
        e.record.ttfa_ms,
        Some(offset(answers[0])),
        "{api} request {r}"
    );
    assert_eq!(
        e.record.e2e_ms,
        Some(offset(answers[CHUNKS - 1])),
        "{api} {r}"
    );
    for pair in e.events.windows(2) {
        assert!(
            pair[1].offset_ms >= pair[0].offset_ms,
            "{api} {r}: out of order"
        );
    }
    let ms = |w: &Stamp| w.offset_us as f64 / 1000.0;
    let answer_writes: Vec<f64> = writes
        .iter()
        .filter(|w| w.label == "answer")
        .map(ms)
        .collect();
    assert_eq!(answer_writes.len(), CHUNKS, "{api} request {r}");
    // The server honoured the schedule: answer piece k no earlier than gaps 0..=k+1 after it
    // received the request.
    let gaps = schedule(r);
    for (k, at) in answer_writes.iter().enumerate() {
        let due: u64 = gaps[..=k + 1].iter().sum();
        assert!(
            *at >= due as f64,
            "{api} request {r} answer {k}: {at} ms < {due} ms"
        );
    }
    // The pairs: in chat every event with its write (role, 30 answers, finish, [DONE]); in the
    // others each answer event with the write that carried its piece.
    let pairs: Vec<(usize, f64)> = if api == Api::OpenaiChat {
        let mut want = vec![Classification::Role];
        want.extend([Classification::Answer; CHUNKS]);
        want.extend([Classification::Finish, Classification::Done]);
        let got: Vec<Classification> = e.events.iter().map(|ev| ev.classification).collect();
        assert_eq!(got, want, "request {r}: {:?}", e.record.error_message);
        assert_eq!(writes.len(), WRITES, "request {r}");
        (0..WRITES).map(|i| (i, ms(&writes[i]))).collect()
    } else {
        answers.iter().copied().zip(answer_writes).collect()
    };
    // Lower bound: no event is stamped before the simulator wrote it.
    let leads = pairs
        .iter()
        .map(|&(i, written)| {
            let lead = offset(i) - written;
            assert!(
                lead >= 0.0,
                "{api} request {r} event {i}: probe {:.3} ms is before the simulator's write \
                 at {written:.3} ms",
                offset(i)
            );
            lead
        })
        .collect();
    // Upper bound: no event is stamped after `execute` returned, counted from before it was
    // called.
    let last = offset(e.events.len() - 1);
    assert!(
        last <= elapsed_ms,
        "{api} request {r}: the last event at {last:.3} ms is later than execute's whole call \
         ({elapsed_ms:.3} ms from before it to after it): the clock zero is early"
    );
    (leads, elapsed_ms - last)
}

/// Runs every executor's scheduled request once, concurrently; returns each execution with
/// the time from just before `execute` was called to just after it returned, ms, on the test's
/// clock (the same monotonic clock the probe reads).
async fn run_round(executors: &[Executor]) -> Vec<(Execution, f64)> {
    let handles: Vec<_> = executors
        .iter()
        .enumerate()
        .map(|(r, ex)| {
            let ex = ex.clone();
            tokio::spawn(async move {
                let before = Instant::now();
                let execution = execute(ex, r).await;
                let elapsed_ms = before.elapsed().as_nanos() as f64 / 1e6;
                (execution, elapsed_ms)
            })
        })
        .collect();
    let mut runs = Vec::new();
    for handle in handles {
        runs.push(handle.await.unwrap());
    }
    runs
}

/// Runs the simulator on its own thread and runtime, as a separate server process would, so
/// its write stamps are not delayed by the probe's work; returns its `plain` profile's base URL
/// (each dialect adds its path), its address and a sender that stops it.
fn simulator_thread() -> (
    String,
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
) {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let sim = start(SimConfig::default(), "127.0.0.1:0".parse().unwrap())
                .await
                .unwrap();
            ready_tx
                .send((sim.profile_base("plain"), sim.addr()))
                .unwrap();
            let _ = stop_rx.await;
            sim.stopped().await;
        });
    });
    let (endpoint, addr) = ready_rx.recv().unwrap();
    (endpoint, addr, stop_tx)
}

/// The simulator's write log of request `r`, through `GET /debug/writes/{id}`.
async fn write_log(addr: std::net::SocketAddr, id: &str) -> Vec<Stamp> {
    let url = format!("http://{addr}/debug/writes/{id}");
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

/// One entry of the write log as the debug endpoint serves it.
#[derive(Debug, serde::Deserialize)]
struct Stamp {
    offset_us: u64,
    /// What the write carried (`answer`, …), by its last event.
    label: String,
}
