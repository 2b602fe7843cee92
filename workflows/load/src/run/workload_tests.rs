//! A trace step's requests as the runner asks for them: each the file's request of its index,
//! with the file's lengths, and Mooncake's shared blocks rebuilt token for token.

use super::*;
use crate::spec::TraceFormat;
use crate::trace::{BLOCK_TOKENS, read_trace};
use std::path::Path;

fn mooncake_sample() -> Arc<Trace> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces/mooncake-sample.jsonl");
    Arc::new(Trace {
        path: "mooncake-sample.jsonl".into(),
        format: TraceFormat::MooncakeJsonl,
        entries: read_trace(&path, TraceFormat::MooncakeJsonl, 64).unwrap(),
    })
}

/// The trace source of step 2 over `regions` regions (lane r is region r), seed 9.
fn source(trace: &Arc<Trace>, regions: usize) -> StepSource {
    let workload = Arc::new(Workload::Tasks {
        items: Vec::new(),
        ceiling: 64,
    });
    StepSource::open(2, regions, workload)
        .with_lanes((0..regions).collect(), vec![true; regions])
        .with_trace(Some(trace.clone()), 9)
}

/// Request k of the step: release k is region k mod K's (k div K)-th.
fn request(source: &StepSource, regions: usize, k: usize) -> RequestContent {
    source.request(&LoadPosition {
        phase: 2,
        lane: format!("p@{}", k % regions),
        lane_index: k % regions,
        slot: 0,
        sequence: (k / regions) as u64,
    })
}

fn encode(text: &str) -> Vec<u32> {
    tiktoken_rs::o200k_base_singleton().encode_ordinary(text)
}

#[test]
fn request_k_has_the_files_kth_lengths_whatever_the_regions() {
    let trace = mooncake_sample();
    for regions in [1, 3] {
        let source = source(&trace, regions);
        for (k, entry) in trace.entries.iter().enumerate() {
            let content = request(&source, regions, k);
            assert_eq!(content.group, "trace");
            assert_eq!(content.item_key, format!("line-{}", entry.line));
            let [message] = content.messages.as_slice() else {
                panic!("one user message");
            };
            // Counted here with the tokenizer, independently of the builder.
            assert_eq!(encode(&message.content).len(), entry.input_tokens as usize);
            let output = content.output.unwrap();
            assert_eq!(
                (output.max_tokens, output.ignore_eos),
                (entry.output_tokens, true)
            );
        }
    }
}

#[test]
fn shared_hash_ids_give_byte_identical_prefixes_of_512_tokens_a_block() {
    let trace = mooncake_sample();
    let source = source(&trace, 1);
    let mut pairs_checked = 0;
    for (a, ea) in trace.entries.iter().enumerate() {
        for (b, eb) in trace.entries.iter().enumerate().skip(a + 1) {
            let shared = ea
                .hash_ids
                .iter()
                .zip(&eb.hash_ids)
                .take_while(|(x, y)| x == y)
                .count();
            let ta = encode(&request(&source, 1, a).messages[0].content);
            let tb = encode(&request(&source, 1, b).messages[0].content);
            let n = shared * BLOCK_TOKENS as usize;
            if shared == 0 {
                assert_ne!(ta[..8], tb[..8], "lines {} and {}", ea.line, eb.line);
                continue;
            }
            // Both prompts run past their shared blocks in the sample (inputs ≥ 600 tokens).
            assert!(ta.len() > n && tb.len() > n);
            assert_eq!(ta[..n], tb[..n], "lines {} and {}", ea.line, eb.line);
            let text_a = &request(&source, 1, a).messages[0].content;
            let text_b = &request(&source, 1, b).messages[0].content;
            let prefix = tiktoken_rs::o200k_base_singleton()
                .decode(&ta[..n])
                .unwrap();
            assert!(text_a.starts_with(&prefix) && text_b.starts_with(&prefix));
            // The next block differs (different ids), so the token after the prefix does too
            // (word draws repeat 1 in ~200: compare the next 8 tokens).
            let end = (n + 8).min(ta.len()).min(tb.len());
            assert_ne!(ta[n..end], tb[n..end], "lines {} and {}", ea.line, eb.line);
            pairs_checked += 1;
        }
    }
    assert!(pairs_checked >= 5, "{pairs_checked}");
}
