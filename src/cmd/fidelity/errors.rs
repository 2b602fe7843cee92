//! The timing error of a finished fidelity run: every probe stamp in the run directory against
//! the upstream's log of the write that carried it.
//!
//! Both count from their own zero: the probe from just before it sent the request, the upstream
//! from when it had received it. So error = probe offset − upstream offset is the request's
//! transit (one loopback trip plus HTTP parsing, measured apart as loopback latency) plus each
//! read's delay, never negative by causality; its mean is the bias. `E2E − TTFA` cancels the
//! transit and is the error of an interval measured within one stream.

use openbench_common::record::{StreamEvent, TerminalRecord};
use openbench_common::stats::nearest_rank;
use serde::Serialize;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

/// p50, p99, max and mean (the bias) of one error population, µs.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Spread {
    /// Values in the population.
    pub n: usize,
    /// Median, µs.
    pub p50_us: Option<f64>,
    /// 99th percentile (nearest rank), µs.
    pub p99_us: Option<f64>,
    /// Largest, µs.
    pub max_us: Option<f64>,
    /// Mean, µs: the bias.
    pub mean_us: Option<f64>,
}

impl Spread {
    /// The spread of `values` (µs).
    pub fn of(values: &[f64]) -> Spread {
        let mean = (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
        Spread {
            n: values.len(),
            p50_us: nearest_rank(values, 0.5),
            p99_us: nearest_rank(values, 0.99),
            max_us: nearest_rank(values, 1.0),
            mean_us: mean,
        }
    }
}

/// The error of every figure against the upstream's log.
#[derive(Debug, Clone, Serialize)]
pub struct Errors {
    /// Time to first output.
    pub ttfo: Spread,
    /// Time to first answer.
    pub ttfa: Spread,
    /// End to end (the last answer piece).
    pub e2e: Spread,
    /// E2E − TTFA (the transit cancels).
    pub e2e_minus_ttfa: Spread,
    /// Every event offset.
    pub events: Spread,
    /// How late the upstream wrote against its schedule, µs: near zero when it was never the
    /// bottleneck.
    pub upstream_lateness: Spread,
    /// Requests compared.
    pub requests_compared: usize,
    /// Requests that could not be compared (no record, no log, or event and write counts
    /// differ), named in `unmatched_examples`.
    pub unmatched: usize,
    /// Up to five unmatched requests and why.
    pub unmatched_examples: Vec<String>,
}

/// One request's probe side: its lane, round, record figures and events in order.
pub struct Probed {
    lane: String,
    round_index: u64,
    record: (Option<f64>, Option<f64>, Option<f64>),
    events: Vec<(u32, f64, bool, bool)>,
}

/// Reads the records and events of a run's full plan, keyed by request id.
pub fn read_probed(results: &Path, events: &Path) -> anyhow::Result<HashMap<String, Probed>> {
    let mut out = HashMap::new();
    for line in lines(results)? {
        let r: TerminalRecord = serde_json::from_str(&line)?;
        out.insert(
            r.request_id.clone(),
            Probed {
                lane: r.lane.clone(),
                round_index: r.round_index,
                record: (r.ttfo_ms, r.ttfa_ms, r.e2e_ms),
                events: Vec::new(),
            },
        );
    }
    for line in lines(events)? {
        let e: StreamEvent = serde_json::from_str(&line)?;
        if let Some(p) = out.get_mut(&e.request_id) {
            let output = !e.answer.is_empty() || !e.reasoning.is_empty();
            p.events
                .push((e.index, e.offset_ms, output, !e.answer.is_empty()));
        }
    }
    for p in out.values_mut() {
        p.events.sort_by_key(|e| e.0);
    }
    Ok(out)
}

fn lines(path: &Path) -> anyhow::Result<Vec<String>> {
    let file = std::fs::File::open(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    Ok(std::io::BufReader::new(file)
        .lines()
        .collect::<Result<_, _>>()?)
}

/// Compares every request with the upstream log of its lane. `logs` maps a lane to its writes in
/// arrival order (write index, µs); the k-th stream in a lane's log is its round k, since a lane
/// runs one request per round and rounds never overlap. `schedules` gives each lane's gaps.
pub fn compare(
    probed: &HashMap<String, Probed>,
    logs: &HashMap<String, Vec<(usize, u64)>>,
    schedules: &HashMap<String, Vec<u64>>,
) -> Errors {
    let streams: HashMap<&str, Vec<Vec<u64>>> = logs
        .iter()
        .map(|(lane, log)| (lane.as_str(), split_streams(log)))
        .collect();
    let mut late = Vec::new();
    for (lane, lane_streams) in &streams {
        let gaps = schedules.get(*lane).map(Vec::as_slice).unwrap_or(&[]);
        for stream in lane_streams {
            late.extend(lateness(stream, gaps));
        }
    }
    let (mut ttfo, mut ttfa, mut e2e, mut interval, mut all) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut unmatched = Vec::new();
    let mut ids: Vec<&String> = probed.keys().collect();
    ids.sort();
    for id in ids {
        let p = &probed[id];
        let stream = streams
            .get(p.lane.as_str())
            .and_then(|s| s.get(p.round_index as usize));
        let Some(stream) = stream else {
            unmatched.push(format!("{id}: no upstream log for lane {}", p.lane));
            continue;
        };
        if stream.len() != p.events.len() {
            unmatched.push(format!(
                "{id}: {} events, {} upstream writes",
                p.events.len(),
                stream.len()
            ));
            continue;
        }
        let err = |i: usize| p.events[i].1 * 1000.0 - stream[i] as f64;
        all.extend((0..stream.len()).map(err));
        let first_output = p.events.iter().position(|e| e.2);
        let first_answer = p.events.iter().position(|e| e.3);
        let last_answer = p.events.iter().rposition(|e| e.3);
        let at = |i: Option<usize>| i.map(|i| p.events[i].1);
        if (at(first_output), at(first_answer), at(last_answer)) != p.record {
            unmatched.push(format!(
                "{id}: the record's TTFO/TTFA/E2E are not its events'"
            ));
            continue;
        }
        ttfo.extend(first_output.map(err));
        ttfa.extend(first_answer.map(err));
        e2e.extend(last_answer.map(err));
        if let (Some(a), Some(b)) = (first_answer, last_answer) {
            interval.push(err(b) - err(a));
        }
    }
    Errors {
        ttfo: Spread::of(&ttfo),
        ttfa: Spread::of(&ttfa),
        e2e: Spread::of(&e2e),
        e2e_minus_ttfa: Spread::of(&interval),
        events: Spread::of(&all),
        upstream_lateness: Spread::of(&late),
        requests_compared: probed.len() - unmatched.len(),
        unmatched: unmatched.len(),
        unmatched_examples: unmatched.into_iter().take(5).collect(),
    }
}

/// Splits a lane's log into streams: a new one starts at each write index 0.
fn split_streams(log: &[(usize, u64)]) -> Vec<Vec<u64>> {
    let mut out: Vec<Vec<u64>> = Vec::new();
    for &(index, offset) in log {
        match out.last_mut() {
            Some(stream) if index != 0 => stream.push(offset),
            _ => out.push(vec![offset]),
        }
    }
    out
}

/// How late each write was against its due time (the sum of the gaps up to it; the finish and
/// `[DONE]` writes are due with the last piece), µs.
fn lateness(stream: &[u64], gaps: &[u64]) -> Vec<f64> {
    let mut due_ms = 0u64;
    stream
        .iter()
        .enumerate()
        .map(|(i, &offset)| {
            if let Some(gap) = gaps.get(i) {
                due_ms += gap;
            }
            offset as f64 - (due_ms * 1000) as f64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_split_at_index_zero_and_lateness_counts_from_the_schedule() {
        let log = [
            (0, 5_100),
            (1, 25_300),
            (2, 25_400),
            (0, 5_050),
            (1, 25_000),
        ];
        let streams = split_streams(&log);
        assert_eq!(
            streams,
            vec![vec![5_100, 25_300, 25_400], vec![5_050, 25_000]]
        );
        // Due at 5 ms, 25 ms, then 25 ms again (no third gap).
        assert_eq!(lateness(&streams[0], &[5, 20]), vec![100.0, 300.0, 400.0]);
    }

    #[test]
    fn spread_of_known_values() {
        let s = Spread::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(s.n, 4);
        assert_eq!(s.p50_us, Some(2.0));
        assert_eq!(s.max_us, Some(4.0));
        assert_eq!(s.mean_us, Some(2.5));
        assert_eq!(Spread::of(&[]).mean_us, None);
    }
}
