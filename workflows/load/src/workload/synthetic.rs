//! Synthetic prompts of exact o200k lengths.
//!
//! A prompt of n tokens is n words from a fixed list, joined by single spaces. o200k's
//! pre-tokenizer cuts such text at every space before a letter, so each word (with its leading
//! space) is encoded on its own; the list keeps only words that are one token both with and
//! without a leading space. The count is then n by construction, and every prompt is checked
//! with the one tokenizer of the workspace before it is used.
//!
//! With a shared prefix, prompt k is prefix (k mod N) followed by suffix (k div N) mod M of that
//! prefix: the N·M distinct prompts cycle, each prefix recurring every N requests.

use super::{Prompt, output_tokens};
use crate::spec::{LengthDist, SharedPrefix};
use openbench_common::rng::Stream;
use openbench_common::tokenizer::count_tokens;
use std::sync::OnceLock;

/// Common English words; those that are not a single o200k token are dropped at first use.
const WORDS: &[&str] = &[
    "time",
    "year",
    "people",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "government",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
    "car",
    "city",
    "community",
    "name",
    "president",
    "team",
    "minute",
    "idea",
    "kid",
    "body",
    "information",
    "back",
    "parent",
    "face",
    "others",
    "level",
    "office",
    "door",
    "health",
    "person",
    "art",
    "war",
    "history",
    "party",
    "result",
    "change",
    "morning",
    "reason",
    "research",
    "girl",
    "guy",
    "moment",
    "air",
    "teacher",
    "force",
    "education",
    "foot",
    "boy",
    "age",
    "policy",
    "process",
    "music",
    "market",
    "sense",
    "nation",
    "plan",
    "college",
    "interest",
    "death",
    "experience",
    "effect",
    "class",
    "control",
    "care",
    "field",
    "development",
    "role",
    "effort",
    "rate",
    "heart",
    "drug",
    "show",
    "leader",
    "light",
    "voice",
    "wife",
    "police",
    "mind",
    "price",
    "report",
    "decision",
    "son",
    "view",
    "relationship",
    "town",
    "road",
    "arm",
    "difference",
    "value",
    "building",
    "action",
    "model",
    "season",
    "society",
    "tax",
    "director",
    "position",
    "player",
    "record",
    "paper",
    "space",
    "ground",
    "form",
    "event",
    "official",
    "matter",
    "center",
    "couple",
    "site",
    "project",
    "activity",
    "star",
    "table",
    "need",
    "court",
    "oil",
    "situation",
    "cost",
    "industry",
    "figure",
    "street",
    "image",
    "phone",
    "data",
    "picture",
    "practice",
    "piece",
    "land",
    "product",
    "doctor",
    "wall",
    "patient",
    "worker",
    "news",
    "test",
    "movie",
    "north",
    "love",
    "support",
    "technology",
    "step",
    "baby",
    "computer",
    "type",
    "attention",
    "film",
    "tree",
    "source",
    "organization",
    "hair",
    "window",
    "evidence",
    "population",
    "site",
    "table",
    "garden",
    "river",
    "simple",
    "green",
    "quick",
    "small",
    "large",
    "early",
    "young",
    "important",
    "public",
    "bad",
    "same",
    "able",
    "open",
    "happy",
    "clear",
    "full",
    "special",
    "strong",
];

/// The words that are exactly one o200k token with and without a leading space, in list order.
fn vocabulary() -> &'static [&'static str] {
    static VOCAB: OnceLock<Vec<&'static str>> = OnceLock::new();
    VOCAB.get_or_init(|| {
        let mut seen = std::collections::BTreeSet::new();
        WORDS
            .iter()
            .copied()
            .filter(|w| seen.insert(*w))
            .filter(|w| count_tokens(w) == 1 && count_tokens(&format!(" {w}")) == 1)
            .collect()
    })
}

/// How many of a run's first prompts are re-counted with the tokenizer ([`Synthetic::prompt`]).
pub const RECOUNTED_PROMPTS: u64 = 8;

/// A synthetic prompt whose length is not what was asked (a tokenizer change would do it).
#[derive(Debug, thiserror::Error)]
#[error("synthetic prompt {index}: asked for {asked} o200k tokens, built {built}")]
pub struct LengthMismatch {
    /// Request index.
    pub index: u64,
    /// Tokens asked for.
    pub asked: u64,
    /// Tokens the text has.
    pub built: u64,
}

/// `n` words drawn from `stream`, joined by spaces: exactly `n` o200k tokens.
pub fn words(stream: &mut Stream, n: u32) -> String {
    let vocab = vocabulary();
    let mut text = String::with_capacity(n as usize * 8);
    for i in 0..n {
        if i > 0 {
            text.push(' ');
        }
        text.push_str(vocab[stream.below(vocab.len() as u64) as usize]);
    }
    text
}

/// A synthetic workload: its distributions, optional shared prefix and seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Synthetic {
    /// Input length (the suffix length with a shared prefix).
    pub input_tokens: LengthDist,
    /// Output length.
    pub output_tokens: LengthDist,
    /// N prefixes × M suffixes.
    pub shared_prefix: Option<SharedPrefix>,
    /// The spec's seed.
    pub seed: u64,
}

impl Synthetic {
    /// Prompt `index` of the run, of exactly the length drawn (the first
    /// [`RECOUNTED_PROMPTS`] re-counted with the tokenizer).
    pub fn prompt(&self, index: u64) -> Result<Prompt, LengthMismatch> {
        let (user, asked) = match self.shared_prefix {
            None => {
                let mut s = Stream::derive(self.seed, &["prompt", &index.to_string()]);
                let n = self.input_tokens.draw(&mut s);
                (words(&mut s, n), u64::from(n))
            }
            Some(p) => {
                let prefixes = u64::from(p.prefixes.max(1));
                let suffixes = u64::from(p.suffixes_per_prefix.max(1));
                let i = (index % prefixes).to_string();
                let j = ((index / prefixes) % suffixes).to_string();
                let mut s = Stream::derive(self.seed, &["prefix", &i]);
                let prefix = words(&mut s, p.prefix_tokens);
                let mut s = Stream::derive(self.seed, &["suffix", &i, &j]);
                let n = self.input_tokens.draw(&mut s);
                let suffix = words(&mut s, n);
                (
                    format!("{prefix} {suffix}"),
                    u64::from(p.prefix_tokens) + u64::from(n),
                )
            }
        };
        // Exact by construction: every word is one token alone and after a space, and o200k's
        // pre-tokenizer cuts space-joined lowercase words into one piece each, which BPE never
        // merges across. Re-counting every prompt cost more than the probe's own token counts
        // (16 µs for 20 words), so only the first few of a run are, as a guard against a
        // tokenizer that cuts differently.
        if index < RECOUNTED_PROMPTS {
            let built = count_tokens(&user);
            if built != asked {
                return Err(LengthMismatch {
                    index,
                    asked,
                    built,
                });
            }
        }
        Ok(Prompt {
            system: None,
            user,
            input_tokens: asked,
            max_output_tokens: output_tokens(Some(&self.output_tokens), self.seed, index, 0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synthetic(input: LengthDist, shared_prefix: Option<SharedPrefix>) -> Synthetic {
        Synthetic {
            input_tokens: input,
            output_tokens: LengthDist::Fixed { tokens: 64 },
            shared_prefix,
            seed: 42,
        }
    }

    #[test]
    fn the_vocabulary_is_large_and_single_token() {
        let vocab = vocabulary();
        assert!(vocab.len() >= 200, "{}", vocab.len());
        // A few checked by hand with tiktoken (o200k_base): " water" and "water" are one token.
        assert!(vocab.contains(&"water"));
        // A concatenation of every word counts exactly one token per word.
        let all = vocab.join(" ");
        assert_eq!(count_tokens(&all), vocab.len() as u64);
        // What makes every prompt exact without counting it: lowercase letters only, so the
        // pre-tokenizer cuts a space-joined prompt at its spaces.
        assert!(
            vocab
                .iter()
                .all(|w| w.bytes().all(|b| b.is_ascii_lowercase()))
        );
    }

    #[test]
    fn prompts_have_the_exact_length_asked_and_replay_from_the_seed() {
        let w = synthetic(LengthDist::Uniform { min: 1, max: 3000 }, None);
        for index in 0..40 {
            let p = w.prompt(index).unwrap();
            // Re-counted here with the tokenizer, independently of the builder's own check.
            assert_eq!(count_tokens(&p.user), p.input_tokens);
            assert_eq!(p.max_output_tokens, 64);
            assert_eq!(w.prompt(index).unwrap(), p);
        }
        let fixed = synthetic(LengthDist::Fixed { tokens: 1000 }, None);
        let p = fixed.prompt(3).unwrap();
        assert_eq!((count_tokens(&p.user), p.input_tokens), (1000, 1000));
        assert_ne!(fixed.prompt(4).unwrap().user, p.user);
        let other_seed = Synthetic {
            seed: 43,
            ..fixed.clone()
        };
        assert_ne!(other_seed.prompt(3).unwrap().user, p.user);
    }

    #[test]
    fn shared_prefixes_cycle_n_by_m() {
        // N = 3 prefixes of 50 tokens × M = 2 suffixes of 20: prompts 0..6 are distinct; prompt
        // k and k + 3 share a prefix; prompt k + 6 repeats prompt k.
        let p = SharedPrefix {
            prefixes: 3,
            suffixes_per_prefix: 2,
            prefix_tokens: 50,
        };
        let w = synthetic(LengthDist::Fixed { tokens: 20 }, Some(p));
        let prompts: Vec<Prompt> = (0..9).map(|k| w.prompt(k).unwrap()).collect();
        let prefix_of = |k: usize| {
            prompts[k]
                .user
                .split(' ')
                .take(50)
                .collect::<Vec<_>>()
                .join(" ")
        };
        for k in 0..3 {
            assert_eq!(prefix_of(k), prefix_of(k + 3));
            assert_ne!(prompts[k].user, prompts[k + 3].user);
            assert_eq!(prompts[k].user, prompts[k + 6].user);
            assert_ne!(prefix_of(k), prefix_of((k + 1) % 3));
        }
        for prompt in &prompts {
            assert_eq!(count_tokens(&prompt.user), 70);
            assert_eq!(prompt.input_tokens, 70);
            // The prefix alone is exactly its 50 tokens too (what a prefix cache would hold).
            assert_eq!(
                count_tokens(
                    &prompt
                        .user
                        .split(' ')
                        .take(50)
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                50
            );
        }
    }
}
