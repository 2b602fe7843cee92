//! The trace case of `bench load-generator` (issue 40 item 4): each shipped sample trace
//! (`data/traces/`, built into this binary) replayed by a `trace` step on one lane against the
//! in-process simulator (`sim://plain`, with `ignore_eos`), time-scaled by
//! `--trace-time-scale`. Beside an open loop's figures (send lag p50/p99/max and the rest) it
//! reports how dense the replay is (mean rate over its span, peak rate over any 100 ms) and
//! whether the replay is the file's: record k is the file's request k (item key `line-N`), due
//! at the file's offset × scale to the nanosecond, with a prompt of the file's input length
//! (o200k, the report's count of the prompt rebuilt from the record) and an answer of the file's
//! output length (the simulator, under `ignore_eos`, streams exactly the `max_tokens` it was
//! asked and reports that count in its usage).
//!
//! The file is parsed by the load workflow's one reader (`openbench_load::trace::parse_trace`);
//! the bench then multiplies each offset by the scale itself and compares the records to that.

use super::figures::{SEND_LAG_BOUND_MS, Traffic};
use anyhow::Context;
use openbench_common::record::TerminalRecord;
use openbench_load::metrics::RequestSample;
use openbench_load::spec::TraceFormat;
use openbench_load::trace::{TraceEntry, parse_trace};
use serde::Serialize;
use std::path::Path;

/// The default `--trace-time-scale`: 0.1, ten times the recorded pace. The Azure sample's 40
/// requests then span 305 ms (128/s mean, 170/s at the peak 100 ms) and the Mooncake sample's
/// 30 span 353 ms (82/s mean, 150/s at the peak): dense enough that a late release shows.
pub const DEFAULT_TIME_SCALE: f64 = 0.1;

/// The window the peak rate is counted over, ns.
pub const PEAK_WINDOW_NS: u64 = 100_000_000;

/// Mismatches a step lists (the rest are counted).
const LISTED_MISMATCHES: usize = 5;

/// A shipped sample trace (`data/traces/`, docs/load.md "Samples").
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceSample {
    /// `azure-llm-sample.csv` (`azure_csv`, 40 requests).
    Azure,
    /// `mooncake-sample.jsonl` (`mooncake_jsonl`, 30 requests).
    Mooncake,
}

impl TraceSample {
    /// Its file name, also the path the step's spec gives.
    pub fn file_name(self) -> &'static str {
        match self {
            TraceSample::Azure => "azure-llm-sample.csv",
            TraceSample::Mooncake => "mooncake-sample.jsonl",
        }
    }

    /// Its shape.
    pub fn format(self) -> TraceFormat {
        match self {
            TraceSample::Azure => TraceFormat::AzureCsv,
            TraceSample::Mooncake => TraceFormat::MooncakeJsonl,
        }
    }

    /// The `format` of a `trace` step, as the spec spells it.
    pub fn format_name(self) -> &'static str {
        match self {
            TraceSample::Azure => "azure_csv",
            TraceSample::Mooncake => "mooncake_jsonl",
        }
    }

    /// The committed file's bytes (built in, so the bench runs from any directory).
    fn bytes(self) -> &'static [u8] {
        match self {
            TraceSample::Azure => include_bytes!("../../../data/traces/azure-llm-sample.csv"),
            TraceSample::Mooncake => include_bytes!("../../../data/traces/mooncake-sample.jsonl"),
        }
    }

    /// Writes the file into `dir` (the step's dataset folder).
    pub fn write_into(self, dir: &Path) -> anyhow::Result<()> {
        let path = dir.join(self.file_name());
        std::fs::write(&path, self.bytes()).with_context(|| format!("writing {}", path.display()))
    }

    /// The file's requests, read by the load workflow's reader with output lengths checked
    /// against `ceiling` (the spec's `request.max_output_tokens`).
    pub fn entries(self, ceiling: u32) -> anyhow::Result<Vec<TraceEntry>> {
        let (entries, problems) = parse_trace(self.bytes(), self.format(), ceiling);
        anyhow::ensure!(
            problems.is_empty() && !entries.is_empty(),
            "{}: {}",
            self.file_name(),
            if problems.is_empty() {
                "holds no request".to_string()
            } else {
                problems.join("; ")
            }
        );
        Ok(entries)
    }
}

/// Each request's due offset at `scale`: its recorded offset × `scale`, rounded to the
/// nanosecond (docs/load.md, "Trace replay").
pub fn due_ns(entries: &[TraceEntry], scale: f64) -> Vec<u64> {
    entries
        .iter()
        .map(|e| (e.offset_ns as f64 * scale).round() as u64)
        .collect()
}

/// How dense a replay is, from its due offsets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Density {
    /// Requests in the file.
    pub requests: usize,
    /// Last due offset − first, ms.
    pub span_ms: f64,
    /// Gaps ÷ span: (requests − 1) ÷ span, per s; `None` for a span of 0.
    pub mean_per_s: Option<f64>,
    /// Most requests due in one window [t, t + 100 ms) starting at a due offset, ÷ 0.1 s.
    pub peak_per_s: f64,
}

impl Density {
    /// The density of `due_ns` (non-decreasing).
    pub fn of(due_ns: &[u64]) -> Density {
        let (first, last) = (
            due_ns.first().copied().unwrap_or(0),
            due_ns.last().copied().unwrap_or(0),
        );
        let span_ns = last.saturating_sub(first);
        let mut peak = 0usize;
        let mut end = 0usize;
        for (start, &at) in due_ns.iter().enumerate() {
            end = end.max(start);
            while due_ns
                .get(end)
                .is_some_and(|&t| t < at.saturating_add(PEAK_WINDOW_NS))
            {
                end += 1;
            }
            peak = peak.max(end - start);
        }
        Density {
            requests: due_ns.len(),
            span_ms: span_ns as f64 / 1e6,
            mean_per_s: (span_ns > 0)
                .then(|| due_ns.len().saturating_sub(1) as f64 / (span_ns as f64 / 1e9)),
            peak_per_s: peak as f64 / (PEAK_WINDOW_NS as f64 / 1e9),
        }
    }
}

/// What a trace step adds to an open loop's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceFigures {
    /// The sample's file name.
    pub file: &'static str,
    /// Its `format`.
    pub format: &'static str,
    /// The step's `time_scale`.
    pub time_scale: f64,
    /// How dense the replay was planned.
    #[serde(flatten)]
    pub density: Density,
    /// Every record is the file's request of its position: arrival offset to the nanosecond,
    /// item key, input and output length, in order, and as many records as requests.
    pub sequence_equal: bool,
    /// How many comparisons failed.
    pub mismatches: usize,
    /// The first of them, each naming the position and what differs.
    pub first_mismatches: Vec<String>,
    /// "met" when the send lag's p99 is within [`SEND_LAG_BOUND_MS`], else "not met".
    pub send_lag_target: &'static str,
}

impl TraceFigures {
    /// The figures of `sample` replayed at `scale`: `entries` its parsed requests, `records`
    /// the step's records in sequence order, `samples` the report's samples of the same
    /// (harness failures set apart), `traffic` the step's open-loop figures.
    pub fn of(
        sample: TraceSample,
        scale: f64,
        entries: &[TraceEntry],
        records: &[&TerminalRecord],
        samples: &[RequestSample],
        traffic: &Traffic,
    ) -> TraceFigures {
        let due = due_ns(entries, scale);
        let all = mismatches(entries, &due, records, samples);
        let met = traffic
            .send_lag
            .as_ref()
            .and_then(|l| l.p99_ms)
            .is_some_and(|p99| p99 <= SEND_LAG_BOUND_MS);
        TraceFigures {
            file: sample.file_name(),
            format: sample.format_name(),
            time_scale: scale,
            density: Density::of(&due),
            sequence_equal: all.is_empty(),
            mismatches: all.len(),
            first_mismatches: all.into_iter().take(LISTED_MISMATCHES).collect(),
            send_lag_target: if met { "met" } else { "not met" },
        }
    }
}

/// Where a replay differs from its file: one line per differing comparison (empty when the
/// replay is the file's). Record k (by sequence) must be request k: sequence k, item key
/// `line-N` (or `line-N/conversation-…`), scheduled at `due_ns[k]` (the record's ms read back
/// to the nanosecond); sample k (the report's, in the same order) must have the same scheduled
/// offset, the file's input length and usage completion tokens equal to its output length.
pub fn mismatches(
    entries: &[TraceEntry],
    due_ns: &[u64],
    records: &[&TerminalRecord],
    samples: &[RequestSample],
) -> Vec<String> {
    let mut out = Vec::new();
    if records.len() != entries.len() {
        out.push(format!(
            "{} records, the file has {} requests",
            records.len(),
            entries.len()
        ));
    }
    if samples.len() != records.len() {
        out.push(format!(
            "{} samples, {} records",
            samples.len(),
            records.len()
        ));
    }
    for (k, ((e, &due), r)) in entries.iter().zip(due_ns).zip(records).enumerate() {
        let at = format!("request {k} (line {})", e.line);
        if r.sequence != Some(k as u64) {
            out.push(format!("{at}: sequence {:?}", r.sequence));
        }
        let key = format!("line-{}", e.line);
        if r.item_id != key && !r.item_id.starts_with(&format!("{key}/")) {
            out.push(format!("{at}: item {}", r.item_id));
        }
        let scheduled_ns = r.scheduled_offset_ms.map(|ms| (ms * 1e6).round() as u64);
        if scheduled_ns != Some(due) {
            out.push(format!(
                "{at}: scheduled at {scheduled_ns:?} ns, due at {due} ns"
            ));
        }
        let Some(s) = samples.get(k) else {
            continue;
        };
        if s.scheduled_ms != r.scheduled_offset_ms {
            out.push(format!("{at}: its sample is another request's"));
        }
        if s.input_tokens != u64::from(e.input_tokens) {
            out.push(format!(
                "{at}: input {} tokens, the file's {}",
                s.input_tokens, e.input_tokens
            ));
        }
        if s.usage_completion_tokens != Some(u64::from(e.output_tokens)) {
            out.push(format!(
                "{at}: output {:?} tokens, the file's {}",
                s.usage_completion_tokens, e.output_tokens
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use openbench_common::record::Outcome;

    #[test]
    fn density_counts_gaps_over_the_span_and_the_fullest_100_ms() {
        // Due at 0, 50, 99.999999, 100, 250 ms: [0, 100) holds 3; [50, 150) holds 3
        // (50, 99.999999, 100); span 250 ms, 4 gaps: 16/s.
        let d = Density::of(&[0, 50_000_000, 99_999_999, 100_000_000, 250_000_000]);
        assert_eq!(d.requests, 5);
        assert_eq!(d.span_ms, 250.0);
        assert_eq!(d.mean_per_s, Some(16.0));
        assert_eq!(d.peak_per_s, 30.0);
        let one = Density::of(&[7]);
        assert_eq!(
            (one.span_ms, one.mean_per_s, one.peak_per_s),
            (0.0, None, 10.0)
        );
    }

    #[test]
    fn the_shipped_samples_scale_to_their_documented_density() {
        let azure = TraceSample::Azure.entries(64).unwrap();
        let mooncake = TraceSample::Mooncake.entries(64).unwrap();
        // Mooncake offsets are whole ms: ×0.1 gives due offsets of 0, 43.6, 50.3 ms, …
        assert_eq!(
            due_ns(&mooncake, DEFAULT_TIME_SCALE)[..3],
            [0, 43_600_000, 50_300_000]
        );
        let a = Density::of(&due_ns(&azure, DEFAULT_TIME_SCALE));
        let m = Density::of(&due_ns(&mooncake, DEFAULT_TIME_SCALE));
        assert_eq!((a.requests, m.requests), (40, 30));
        assert_eq!((a.peak_per_s, m.peak_per_s), (170.0, 150.0));
        assert_eq!(m.span_ms, 353.0);
    }

    fn record(k: u64, line: usize, scheduled_ms: f64) -> TerminalRecord {
        let mut r = TerminalRecord::new(String::new(), Outcome::Completed);
        r.sequence = Some(k);
        r.item_id = format!("line-{line}");
        r.scheduled_offset_ms = Some(scheduled_ms);
        r
    }

    fn sample(scheduled_ms: f64, input: u64, output: u64) -> RequestSample {
        let mut s = super::super::figures::tests::sample(Some(scheduled_ms), scheduled_ms, 1.0);
        s.input_tokens = input;
        s.answer_tokens = output;
        s.usage_completion_tokens = Some(output);
        s
    }

    fn entry(line: usize, offset_ns: u64, input: u32, output: u32) -> TraceEntry {
        TraceEntry {
            line,
            offset_ns,
            input_tokens: input,
            output_tokens: output,
            hash_ids: Vec::new(),
            conversation: None,
        }
    }

    #[test]
    fn a_replay_equal_to_its_file_has_no_mismatch_and_each_difference_is_named() {
        // Lines 2 and 3 at 0 and 1.234567891 s, replayed ×0.5: due at 0 and 617,283,946 ns
        // (617,283,945.5 rounded half away from zero).
        let entries = [entry(2, 0, 100, 8), entry(3, 1_234_567_891, 50, 4)];
        let due = due_ns(&entries, 0.5);
        assert_eq!(due, [0, 617_283_946]);
        let records = [record(0, 2, 0.0), record(1, 3, 617.283946)];
        let refs: Vec<&TerminalRecord> = records.iter().collect();
        let samples = [sample(0.0, 100, 8), sample(617.283946, 50, 4)];
        assert_eq!(
            mismatches(&entries, &due, &refs, &samples),
            Vec::<String>::new()
        );

        // One ns late, another line, a prompt one token short, an answer one token long.
        let late = [record(0, 2, 0.0), record(1, 4, 617.283947)];
        let refs: Vec<&TerminalRecord> = late.iter().collect();
        let off = [sample(0.0, 99, 8), sample(617.283947, 50, 5)];
        assert_eq!(
            mismatches(&entries, &due, &refs, &off),
            [
                "request 0 (line 2): input 99 tokens, the file's 100",
                "request 1 (line 3): item line-4",
                "request 1 (line 3): scheduled at Some(617283947) ns, due at 617283946 ns",
                "request 1 (line 3): output Some(5) tokens, the file's 4",
            ]
        );
        // A record missing.
        assert_eq!(
            mismatches(&entries, &due, &refs[..1], &samples[..1]),
            ["1 records, the file has 2 requests"]
        );
    }
}
