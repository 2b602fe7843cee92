use super::*;
use openbench_common::rng::Stream;

fn parse(text: &str, format: TraceFormat) -> (Vec<TraceEntry>, Vec<String>) {
    parse_trace(text.as_bytes(), format, 64)
}

#[test]
fn azure_rows_give_offsets_from_the_first_timestamp_to_the_nanosecond() {
    let text = "TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:46.7000000,396,9

2023-11-16 18:15:47,1,1
2023-11-17 00:00:00.000000001,20,64
";
    let (entries, problems) = parse(text, TraceFormat::AzureCsv);
    assert_eq!(problems, Vec::<String>::new());
    // 46.7 − 46.68059 s = 19.41 ms; 47 − 46.68059 = 319.41 ms; midnight is 5 h 44 min 13.31941 s
    // after the first, plus 1 ns.
    let got: Vec<(usize, u64, u32, u32)> = entries
        .iter()
        .map(|e| (e.line, e.offset_ns, e.input_tokens, e.output_tokens))
        .collect();
    assert_eq!(
        got,
        [
            (2, 0, 374, 44),
            (3, 19_410_000, 396, 9),
            (5, 319_410_000, 1, 1),
            (6, 20_653_319_410_001, 20, 64),
        ]
    );
    assert!(
        entries
            .iter()
            .all(|e| e.hash_ids.is_empty() && e.conversation.is_none())
    );
}

#[test]
fn a_conversation_column_is_kept_wherever_it_stands() {
    let text = "ConversationId,TIMESTAMP,ContextTokens,GeneratedTokens
c-7,2024-05-10 00:00:00.0000000,10,2
,2024-05-10 00:00:01.5000000,11,3
";
    let (entries, problems) = parse(text, TraceFormat::AzureCsv);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(entries[0].conversation.as_deref(), Some("c-7"));
    assert_eq!(entries[1].conversation, None);
    assert_eq!(entries[1].offset_ns, 1_500_000_000);
    let jsonl = r#"{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [], "session_id": "s1"}
{"timestamp": 2, "input_length": 5, "output_length": 1, "hash_ids": [], "conversation_id": 42}"#;
    let (entries, problems) = parse(jsonl, TraceFormat::MooncakeJsonl);
    assert!(problems.is_empty(), "{problems:?}");
    let ids: Vec<Option<&str>> = entries.iter().map(|e| e.conversation.as_deref()).collect();
    assert_eq!(ids, [Some("s1"), Some("42")]);
}

#[test]
fn mooncake_lines_keep_their_blocks_and_millisecond_offsets() {
    let text = r#"{"timestamp": 0, "input_length": 6755, "output_length": 50, "hash_ids": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]}
{"timestamp": 3052, "input_length": 2287, "output_length": 31, "hash_ids": [0, 42, 43, 44, 45]}
{"timestamp": 3052.5, "input_length": 1, "output_length": 1, "hash_ids": [46]}"#;
    let (entries, problems) = parse(text, TraceFormat::MooncakeJsonl);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(entries[1].offset_ns, 3_052_000_000);
    assert_eq!(entries[2].offset_ns, 3_052_500_000);
    assert_eq!(entries[1].hash_ids, [0, 42, 43, 44, 45]);
    assert_eq!(
        (entries[0].input_tokens, entries[0].output_tokens),
        (6755, 50)
    );
}

#[test]
fn every_broken_line_is_named_at_once() {
    let text = "TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.0,10,5
2023-11-16 18:15:46,ten,5
2023-11-16 18:15:47.0,10,0
2023-11-16 18:15:47.0,10,65
16/11/2023 18:15:48,10,5
2023-11-16 18:15:45.0,10,5
2023-11-16 18:15:49.0,10
";
    let (_, problems) = parse(text, TraceFormat::AzureCsv);
    let lines: Vec<&str> = problems
        .iter()
        .map(|p| p.split(':').next().unwrap())
        .collect();
    assert_eq!(
        lines,
        ["line 3", "line 4", "line 5", "line 6", "line 8", "line 7"],
        "{problems:#?}"
    );
    assert!(
        problems[1].contains("output length 0 is outside 1..=64"),
        "{}",
        problems[1]
    );
    assert!(
        problems[5].contains("before the line above's"),
        "{}",
        problems[5]
    );
    let (_, problems) = parse("time,in,out\n", TraceFormat::AzureCsv);
    assert!(problems[0].starts_with("line 1: header"), "{problems:?}");
    let (_, problems) = parse(
        "{\"timestamp\": 1, \"input_length\": 3}\nnot json\n",
        TraceFormat::MooncakeJsonl,
    );
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with("line 1: output_length"),
        "{problems:?}"
    );
}

#[test]
fn a_trace_file_is_read_through_the_bounded_reader_and_named_when_broken() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.csv");
    std::fs::write(&path, "TIMESTAMP,ContextTokens,GeneratedTokens\n").unwrap();
    let err = read_trace(&path, TraceFormat::AzureCsv, 64).unwrap_err();
    assert_eq!(err, ["holds no request"]);
    let err = read_trace(dir.path(), TraceFormat::AzureCsv, 64).unwrap_err();
    assert!(err[0].starts_with("cannot read trace"), "{err:?}");
    let lines: String = (0..30)
        .map(|i| format!("2023-11-16 18:15:{i:02},0,1\n"))
        .collect();
    std::fs::write(
        &path,
        format!("TIMESTAMP,ContextTokens,GeneratedTokens\n{lines}"),
    )
    .unwrap();
    let err = read_trace(&path, TraceFormat::AzureCsv, 64).unwrap_err();
    assert_eq!(err.len(), MAX_LISTED_PROBLEMS + 1);
    assert_eq!(err[MAX_LISTED_PROBLEMS], "… and 10 more broken line(s)");
}

/// The shipped samples (`data/traces/`), as generated here from a fixed seed: an Azure CSV and
/// a Mooncake JSONL with shared 512-token blocks.
fn samples() -> [(&'static str, String); 2] {
    [
        ("azure-llm-sample.csv", azure_sample()),
        ("mooncake-sample.jsonl", mooncake_sample()),
    ]
}

/// 40 requests from 2023-11-16 18:15:46.6805900 with exponential gaps of mean 100 ms (100 ns
/// ticks, 7 digits, as the public files), 20–400 context tokens, 4–32 generated.
fn azure_sample() -> String {
    let mut s = Stream::derive(2023, &["azure-sample"]);
    let mut text = String::from("TIMESTAMP,ContextTokens,GeneratedTokens\n");
    let start = time::macros::datetime!(2023-11-16 18:15:46.6805900);
    let mut ticks: i64 = 0;
    for _ in 0..40 {
        let at = start + time::Duration::nanoseconds(ticks * 100);
        text.push_str(&format!(
            "{}-{:02}-{:02} {:02}:{:02}:{:02}.{:07},{},{}\n",
            at.year(),
            at.month() as u8,
            at.day(),
            at.hour(),
            at.minute(),
            at.second(),
            at.nanosecond() / 100,
            20 + s.below(381),
            4 + s.below(29),
        ));
        ticks += (s.exponential() * 0.1 * 1e7).round() as i64;
    }
    text
}

/// 30 requests at whole milliseconds (gaps of mean 150 ms), 600–2,000 input tokens in
/// ⌈input/512⌉ blocks; each request after the first shares, half the time, the leading blocks
/// (one to all but its last) of an earlier one, as conversations and shared system prompts do.
fn mooncake_sample() -> String {
    let mut s = Stream::derive(2025, &["mooncake-sample"]);
    let mut text = String::new();
    let mut earlier: Vec<Vec<u64>> = Vec::new();
    let mut next_id = 0u64;
    let mut at_ms = 0u64;
    for _ in 0..30 {
        let input = 600 + s.below(1401);
        let blocks = input.div_ceil(512) as usize;
        let mut ids: Vec<u64> = Vec::new();
        if !earlier.is_empty() && s.below(2) == 0 {
            let from = &earlier[s.below(earlier.len() as u64) as usize];
            let shared = 1 + s.below(from.len().min(blocks).saturating_sub(1).max(1) as u64);
            ids.extend(from.iter().take(shared as usize));
        }
        while ids.len() < blocks {
            ids.push(next_id);
            next_id += 1;
        }
        let list: Vec<String> = ids.iter().map(u64::to_string).collect();
        text.push_str(&format!(
            "{{\"timestamp\": {at_ms}, \"input_length\": {input}, \"output_length\": {}, \"hash_ids\": [{}]}}\n",
            4 + s.below(29),
            list.join(", ")
        ));
        earlier.push(ids);
        at_ms += (s.exponential() * 150.0).round() as u64;
    }
    text
}

fn samples_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces")
}

#[test]
fn the_shipped_samples_are_what_the_generator_writes_and_parse_whole() {
    // OPENBENCH_WRITE_TRACE_SAMPLES=1 writes them anew.
    let rewrite = std::env::var_os("OPENBENCH_WRITE_TRACE_SAMPLES").is_some();
    for (name, text) in samples() {
        let path = samples_dir().join(name);
        if rewrite {
            std::fs::write(&path, &text).unwrap();
        }
        let shipped = std::fs::read_to_string(&path).unwrap();
        assert_eq!(shipped, text, "{name} differs from its generator");
    }
    let azure = read_trace(
        &samples_dir().join("azure-llm-sample.csv"),
        TraceFormat::AzureCsv,
        64,
    )
    .unwrap();
    assert_eq!(azure.len(), 40);
    let mooncake = read_trace(
        &samples_dir().join("mooncake-sample.jsonl"),
        TraceFormat::MooncakeJsonl,
        64,
    )
    .unwrap();
    assert_eq!(mooncake.len(), 30);
    // Some blocks are shared, so the prefix test has something to check.
    let firsts: std::collections::BTreeSet<u64> = mooncake.iter().map(|e| e.hash_ids[0]).collect();
    assert!(firsts.len() < mooncake.len());
}
