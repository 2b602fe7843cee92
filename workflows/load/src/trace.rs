//! Trace files: the arrivals and lengths of recorded production traffic, replayed by a `trace`
//! step (docs/load.md, "Trace replay").
//!
//! - **Azure LLM inference traces** (2023 and 2024, `format: azure_csv`): CSV with the header
//!   `TIMESTAMP,ContextTokens,GeneratedTokens`; each timestamp a datetime
//!   `YYYY-MM-DD HH:MM:SS[.fraction]` (the public files carry 100 ns ticks, 7 digits).
//! - **Mooncake / FAST'25 traces** (`format: mooncake_jsonl`): one JSON object a line with
//!   `timestamp` (ms since the first request), `input_length`, `output_length` and `hash_ids`,
//!   the ids of the prompt's 512-token blocks: two requests sharing an id share that block of
//!   prompt text exactly.
//!
//! Either may carry a conversation id (a CSV column `ConversationId`, `conversation_id` or
//! `session_id`; a JSON field `conversation_id` or `session_id`): it is kept with the request.
//! Each request's offset is its timestamp minus the first one's, so timestamps must not go
//! backwards. Every broken line is reported at once, each with its 1-based line number.

use crate::spec::validate::MAX_INPUT_TOKENS;
use crate::spec::{LoadModel, LoadSection, TraceFormat};
use openbench_common::input_file;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Tokens of one Mooncake prompt block (`hash_ids` entry).
pub const BLOCK_TOKENS: u32 = 512;

/// Most broken lines one refusal lists (the rest are counted).
const MAX_LISTED_PROBLEMS: usize = 20;

/// Column names a CSV trace's conversation id may have (compared ignoring case).
const CONVERSATION_COLUMNS: [&str; 3] = ["conversationid", "conversation_id", "session_id"];

/// One recorded request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEntry {
    /// 1-based line of the file.
    pub line: usize,
    /// Its recorded offset from the trace's first request, nanoseconds (before `time_scale`).
    pub offset_ns: u64,
    /// Prompt length in tokens (we build it in o200k tokens).
    pub input_tokens: u32,
    /// Output length in tokens (sent as the request's ceiling).
    pub output_tokens: u32,
    /// Mooncake: ids of the prompt's 512-token blocks, in order (empty for Azure).
    pub hash_ids: Vec<u64>,
    /// The conversation the request belongs to, when the file says.
    pub conversation: Option<String>,
}

/// A trace file, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// The path as the spec wrote it.
    pub path: String,
    /// Its shape.
    pub format: TraceFormat,
    /// Its requests in file order (offsets non-decreasing).
    pub entries: Vec<TraceEntry>,
}

/// The traces of a section, by the index of their step in `load.steps`.
pub type Traces = BTreeMap<usize, Arc<Trace>>;

/// Every `trace` step's file, read from `dir` (the dataset's folder, as for a prompt file) with
/// output lengths checked against the contract's `ceiling`; or every problem, each naming the
/// step's field, the file and the line.
pub fn read_traces(section: &LoadSection, dir: &Path, ceiling: u32) -> Result<Traces, Vec<String>> {
    let mut traces = Traces::new();
    let mut problems = Vec::new();
    for (index, model) in section.steps.iter().enumerate() {
        let LoadModel::Trace { path, format, .. } = model else {
            continue;
        };
        let full = dir.join(path);
        let at = format!("load.steps[{index}].path: {}", full.display());
        match read_trace(&full, *format, ceiling) {
            Ok(entries) => {
                traces.insert(
                    index,
                    Arc::new(Trace {
                        path: path.clone(),
                        format: *format,
                        entries,
                    }),
                );
            }
            Err(lines) => problems.extend(lines.into_iter().map(|l| format!("{at}: {l}"))),
        }
    }
    if problems.is_empty() {
        Ok(traces)
    } else {
        Err(problems)
    }
}

/// The paths of a section's trace files as written, by step index.
pub fn trace_paths(section: &LoadSection) -> Vec<String> {
    section
        .steps
        .iter()
        .filter_map(|model| match model {
            LoadModel::Trace { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect()
}

/// The requests of the trace at `path` (a regular file of at most
/// [`input_file::PROMPT_FILE_BYTES`]), or its problems (`line N: …`, or why it cannot be read).
pub fn read_trace(
    path: &Path,
    format: TraceFormat,
    ceiling: u32,
) -> Result<Vec<TraceEntry>, Vec<String>> {
    let bytes = input_file::read_regular(path, input_file::PROMPT_FILE_BYTES)
        .map_err(|e| vec![format!("cannot read trace: {e}")])?;
    let (entries, mut problems) = parse_trace(&bytes, format, ceiling);
    if problems.is_empty() && entries.is_empty() {
        problems.push("holds no request".into());
    }
    if problems.len() > MAX_LISTED_PROBLEMS {
        let more = problems.len() - MAX_LISTED_PROBLEMS;
        problems.truncate(MAX_LISTED_PROBLEMS);
        problems.push(format!("… and {more} more broken line(s)"));
    }
    if problems.is_empty() {
        Ok(entries)
    } else {
        Err(problems)
    }
}

/// A parsed line before offsets: its timestamp in ns on the file's own scale.
struct Row {
    at_ns: i128,
    input: u64,
    output: u64,
    hash_ids: Vec<u64>,
    conversation: Option<String>,
}

/// The requests of a trace's bytes and one `line N: …` per broken line.
pub fn parse_trace(
    bytes: &[u8],
    format: TraceFormat,
    ceiling: u32,
) -> (Vec<TraceEntry>, Vec<String>) {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t.strip_prefix('\u{feff}').unwrap_or(t),
        Err(e) => return (Vec::new(), vec![format!("not UTF-8 ({e})")]),
    };
    let mut problems = Vec::new();
    let mut rows: Vec<(usize, Row)> = Vec::new();
    let mut header: Option<CsvHeader> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let raw = raw.trim();
        if raw.is_empty() {
            continue;
        }
        let parsed = match format {
            TraceFormat::MooncakeJsonl => mooncake_row(raw),
            TraceFormat::AzureCsv => match &header {
                None => {
                    match CsvHeader::of(raw) {
                        Ok(h) => header = Some(h),
                        Err(why) => {
                            problems.push(format!("line {line}: {why}"));
                            return (Vec::new(), problems);
                        }
                    }
                    continue;
                }
                Some(h) => h.row(raw),
            },
        };
        match parsed.and_then(|row| lengths_problem(&row, ceiling).map(|()| row)) {
            Ok(row) => rows.push((line, row)),
            Err(why) => problems.push(format!("line {line}: {why}")),
        }
    }
    let first = rows.first().map_or(0, |(_, r)| r.at_ns);
    let mut before = first;
    let mut entries = Vec::with_capacity(rows.len());
    for (line, row) in rows {
        if row.at_ns < before {
            problems.push(format!(
                "line {line}: timestamp is {:.3} ms before the line above's (a trace must be in time order)",
                (before - row.at_ns) as f64 / 1e6
            ));
            continue;
        }
        before = row.at_ns;
        entries.push(TraceEntry {
            line,
            offset_ns: u64::try_from(row.at_ns - first).unwrap_or(u64::MAX),
            input_tokens: row.input as u32,
            output_tokens: row.output as u32,
            hash_ids: row.hash_ids,
            conversation: row.conversation,
        });
    }
    (entries, problems)
}

/// Lengths a request can be sent with: a prompt of 1..=[`MAX_INPUT_TOKENS`] and an output of
/// 1..=the contract's ceiling.
fn lengths_problem(row: &Row, ceiling: u32) -> Result<(), String> {
    if row.input == 0 || row.input > u64::from(MAX_INPUT_TOKENS) {
        return Err(format!(
            "input length {} is outside 1..={MAX_INPUT_TOKENS}",
            row.input
        ));
    }
    if row.output == 0 || row.output > u64::from(ceiling) {
        return Err(format!(
            "output length {} is outside 1..={ceiling} (request.max_output_tokens)",
            row.output
        ));
    }
    Ok(())
}

fn mooncake_row(raw: &str) -> Result<Row, String> {
    let value: Value = serde_json::from_str(raw).map_err(|e| format!("not JSON ({e})"))?;
    let ms = value
        .get("timestamp")
        .and_then(Value::as_f64)
        .filter(|t| t.is_finite() && *t >= 0.0)
        .ok_or("timestamp: missing, or not a number of milliseconds ≥ 0")?;
    let count = |field: &str| {
        value
            .get(field)
            .and_then(Value::as_u64)
            .ok_or(format!("{field}: missing, or not a whole number"))
    };
    let input = count("input_length")?;
    let output = count("output_length")?;
    let hash_ids = value
        .get("hash_ids")
        .and_then(Value::as_array)
        .ok_or("hash_ids: missing, or not a list")?
        .iter()
        .enumerate()
        .map(|(i, id)| {
            id.as_u64()
                .ok_or(format!("hash_ids[{i}]: not a whole number"))
        })
        .collect::<Result<Vec<u64>, String>>()?;
    let conversation = ["conversation_id", "session_id"]
        .iter()
        .find_map(|f| value.get(*f))
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    Ok(Row {
        at_ns: (ms * 1e6).round() as i128,
        input,
        output,
        hash_ids,
        conversation,
    })
}

/// Where an Azure CSV's columns are.
struct CsvHeader {
    timestamp: usize,
    context: usize,
    generated: usize,
    conversation: Option<usize>,
    columns: usize,
}

impl CsvHeader {
    fn of(raw: &str) -> Result<CsvHeader, String> {
        let names: Vec<String> = raw.split(',').map(|c| unquote(c).to_lowercase()).collect();
        let find = |name: &str| {
            names
                .iter()
                .position(|n| n == &name.to_lowercase())
                .ok_or(format!(
                    "header {raw:?} lacks column {name} (an Azure trace's header is TIMESTAMP,ContextTokens,GeneratedTokens)"
                ))
        };
        Ok(CsvHeader {
            timestamp: find("TIMESTAMP")?,
            context: find("ContextTokens")?,
            generated: find("GeneratedTokens")?,
            conversation: names
                .iter()
                .position(|n| CONVERSATION_COLUMNS.contains(&n.as_str())),
            columns: names.len(),
        })
    }

    fn row(&self, raw: &str) -> Result<Row, String> {
        let cells: Vec<&str> = raw.split(',').map(unquote).collect();
        if cells.len() != self.columns {
            return Err(format!(
                "{} columns, the header has {}",
                cells.len(),
                self.columns
            ));
        }
        let count = |at: usize, name: &str| {
            cells[at]
                .parse::<u64>()
                .map_err(|_| format!("{name}: {:?} is not a whole number", cells[at]))
        };
        Ok(Row {
            at_ns: datetime_ns(cells[self.timestamp])?,
            input: count(self.context, "ContextTokens")?,
            output: count(self.generated, "GeneratedTokens")?,
            hash_ids: Vec::new(),
            conversation: self
                .conversation
                .map(|at| cells[at].to_string())
                .filter(|c| !c.is_empty()),
        })
    }
}

fn unquote(cell: &str) -> &str {
    let cell = cell.trim();
    cell.strip_prefix('"')
        .and_then(|c| c.strip_suffix('"'))
        .unwrap_or(cell)
}

/// Nanoseconds since the Unix epoch of `YYYY-MM-DD HH:MM:SS[.fraction]` (1 to 9 digits), read
/// as UTC.
fn datetime_ns(text: &str) -> Result<i128, String> {
    let format = time::macros::format_description!(
        "[year]-[month]-[day] [hour]:[minute]:[second][optional [.[subsecond]]]"
    );
    time::PrimitiveDateTime::parse(text, format)
        .map(|t| t.assume_utc().unix_timestamp_nanos())
        .map_err(|e| format!("TIMESTAMP: {text:?} is not YYYY-MM-DD HH:MM:SS[.fraction] ({e})"))
}

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
