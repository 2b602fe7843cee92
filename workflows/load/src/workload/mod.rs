//! Prompts for load steps: synthetic ones of exact o200k lengths (optionally N shared prefixes ×
//! M suffixes, to expose prefix caching), and prompt files in the OpenAI-messages and ShareGPT
//! shapes. Every draw comes from the spec's seed and the request's index, so the same spec gives
//! the same prompts in every run and every lane.
//!
//! The micro-single-task items (`kind: tasks`) are that workflow's dataset, loaded and scored by
//! it; nothing here rebuilds them.

use crate::spec::LengthDist;
use openbench_common::rng::Stream;

pub mod jsonl;
pub mod synthetic;
pub mod trace_prompt;

/// One request's messages and the output length it asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// System message, when the workload has one.
    pub system: Option<String>,
    /// User message.
    pub user: String,
    /// o200k tokens of the message texts (system + user; no chat-template overhead).
    pub input_tokens: u64,
    /// Completion ceiling to send (with `ignore_eos` where the provider supports it, so the
    /// answer runs to this length).
    pub max_output_tokens: u32,
}

impl LengthDist {
    /// One length drawn from `stream`: fixed; uniform over min..=max; normal rounded to the
    /// nearest integer and clamped to min..=max; or a uniformly chosen list entry. A validated
    /// distribution never gives 0.
    pub fn draw(&self, stream: &mut Stream) -> u32 {
        match self {
            LengthDist::Fixed { tokens } => *tokens,
            LengthDist::Uniform { min, max } => {
                let span = u64::from(max.saturating_sub(*min)) + 1;
                min + stream.below(span) as u32
            }
            LengthDist::Normal { mean, sd, min, max } => {
                let x = (mean + sd * stream.normal()).round();
                x.clamp(f64::from(*min), f64::from(*max)) as u32
            }
            LengthDist::List { values } => {
                let i = stream.below(values.len() as u64) as usize;
                values.get(i).copied().unwrap_or(1)
            }
        }
    }
}

/// The output length of request `index`, from the stream `(seed, "output", index)`; `None` (no
/// distribution) asks for `ceiling`, the contract's completion ceiling.
pub fn output_tokens(dist: Option<&LengthDist>, seed: u64, index: u64, ceiling: u32) -> u32 {
    match dist {
        Some(dist) => dist.draw(&mut Stream::derive(seed, &["output", &index.to_string()])),
        None => ceiling,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_bounds_and_follow_their_shape() {
        let mut s = Stream::derive(5, &["t"]);
        let uniform = LengthDist::Uniform { min: 10, max: 12 };
        let mut seen = [0u32; 3];
        for _ in 0..3000 {
            seen[(uniform.draw(&mut s) - 10) as usize] += 1;
        }
        // 1,000 expected each, sd ≈ 26: allow 4 sd.
        assert!(seen.iter().all(|&n| (896..=1104).contains(&n)), "{seen:?}");
        let normal = LengthDist::Normal {
            mean: 100.0,
            sd: 10.0,
            min: 95,
            max: 200,
        };
        let draws: Vec<u32> = (0..4000).map(|_| normal.draw(&mut s)).collect();
        assert!(draws.iter().all(|&d| (95..=200).contains(&d)));
        // Rounded values ≤ 95 clamp to 95: 100 + 10z < 95.5, z < −0.45, P = Φ(−0.45) ≈ 0.326;
        // the share's sd over 4,000 draws is ≈ 0.0074: allow 4 sd.
        let clamped = draws.iter().filter(|&&d| d == 95).count() as f64 / 4000.0;
        assert!((clamped - 0.326).abs() < 0.03, "{clamped}");
        let list = LengthDist::List { values: vec![7, 9] };
        assert!((0..100).all(|_| matches!(list.draw(&mut s), 7 | 9)));
        assert_eq!(LengthDist::Fixed { tokens: 3 }.draw(&mut s), 3);
    }

    #[test]
    fn output_lengths_are_per_index_and_default_to_the_ceiling() {
        let dist = LengthDist::Uniform { min: 1, max: 1000 };
        let a = output_tokens(Some(&dist), 9, 4, 256);
        assert_eq!(a, output_tokens(Some(&dist), 9, 4, 256));
        let others: Vec<u32> = (5..15)
            .map(|i| output_tokens(Some(&dist), 9, i, 256))
            .collect();
        assert!(others.iter().any(|&o| o != a));
        assert_eq!(output_tokens(None, 9, 4, 256), 256);
    }
}
