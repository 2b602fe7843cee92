//! The prompt of one trace request: exactly its recorded input length in o200k tokens, and, for a
//! Mooncake trace, its `hash_ids` blocks rebuilt so requests that share a block id share that
//! block's text byte for byte.
//!
//! Block id b is the 512 words drawn from the stream (seed, `trace-block`, b) (one o200k token
//! each, as synthetic prompts are built); the prompt is its blocks in order, joined by single
//! spaces, then words of its own from (seed, `trace-tail`, line) when the recorded length runs
//! past its blocks, cut to the recorded length (a last partial block keeps its first words). With
//! single-token words separated by spaces, the first 512·j tokens of two prompts sharing their
//! first j ids are the same tokens. An Azure trace has no blocks: every prompt is its own words.

use super::synthetic::words;
use crate::trace::{BLOCK_TOKENS, TraceEntry};
use openbench_common::rng::Stream;

/// The user text of `entry`: exactly `entry.input_tokens` o200k tokens.
pub fn trace_text(entry: &TraceEntry, seed: u64) -> String {
    let mut left = entry.input_tokens;
    let mut parts: Vec<String> = Vec::new();
    for id in &entry.hash_ids {
        if left == 0 {
            break;
        }
        let take = left.min(BLOCK_TOKENS);
        let block = words(
            &mut Stream::derive(seed, &["trace-block", &id.to_string()]),
            BLOCK_TOKENS,
        );
        parts.push(first_words(&block, take).to_string());
        left -= take;
    }
    if left > 0 {
        let tail = &mut Stream::derive(seed, &["trace-tail", &entry.line.to_string()]);
        parts.push(words(tail, left));
    }
    parts.join(" ")
}

/// The first `n` space-separated words of `text`.
fn first_words(text: &str, n: u32) -> &str {
    match text.match_indices(' ').nth(n.saturating_sub(1) as usize) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openbench_common::tokenizer::count_tokens;

    fn entry(line: usize, input_tokens: u32, hash_ids: Vec<u64>) -> TraceEntry {
        TraceEntry {
            line,
            offset_ns: 0,
            input_tokens,
            output_tokens: 1,
            hash_ids,
            conversation: None,
        }
    }

    #[test]
    fn first_words_cuts_at_the_nth_space() {
        assert_eq!(first_words("a b c", 2), "a b");
        assert_eq!(first_words("a b c", 3), "a b c");
        assert_eq!(first_words("a b c", 9), "a b c");
    }

    #[test]
    fn lengths_are_exact_with_partial_blocks_and_tails() {
        for (input, ids) in [
            (1, vec![]),
            (700, vec![]),
            (512, vec![4]),
            (600, vec![4, 5]),
            (1024, vec![4, 5]),
            (1100, vec![4, 5]),
            (3, vec![4, 5]),
        ] {
            let text = trace_text(&entry(9, input, ids.clone()), 1);
            assert_eq!(count_tokens(&text), u64::from(input), "{input} {ids:?}");
        }
    }
}
