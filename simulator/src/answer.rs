//! What the simulated model says: the answer (correct, wrong or malformed for a known prompt,
//! a fixed small object otherwise), its reasoning, and how both are cut into chunks.

use crate::profile::Profile;
use crate::rng::Draws;
use openbench_common::workflow::CannedAnswer;

/// The answer to a prompt the simulator has no canned answer for.
pub const GENERIC_ANSWER: &str = r#"{"answer":"simulated café"}"#;

/// The reasoning sentence; a profile repeats it to reach its drawn reasoning length.
pub const REASONING_SENTENCE: &str = "The user wants a JSON object. I will answer briefly. ";

/// Approximate o200k tokens in [`REASONING_SENTENCE`].
const TOKENS_PER_SENTENCE: f64 = 12.0;

/// Which kind of answer was drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind {
    /// The canned correct answer.
    Correct,
    /// The canned schema-valid wrong answer.
    Incorrect,
    /// A malformed variant of the correct answer.
    Malformed,
    /// No canned answer matched: [`GENERIC_ANSWER`].
    Generic,
}

/// Draws the answer text for a prompt.
pub fn choose(
    profile: &Profile,
    answers: &[CannedAnswer],
    user_prompt: &str,
    draws: &mut Draws,
) -> (AnswerKind, String) {
    let Some(canned) = answers.iter().find(|a| a.user_prompt == user_prompt) else {
        return (AnswerKind::Generic, GENERIC_ANSWER.to_string());
    };
    if draws.chance(profile.p_correct) {
        return (AnswerKind::Correct, canned.correct.clone());
    }
    if !draws.chance(profile.spec.malformed_share) {
        return (AnswerKind::Incorrect, canned.incorrect.clone());
    }
    (AnswerKind::Malformed, malformed(&canned.correct, draws))
}

/// A malformed variant of a JSON answer: fenced, missing its last key, or with trailing text.
fn malformed(correct: &str, draws: &mut Draws) -> String {
    match draws.int_in(0, 2) {
        0 => format!("```json\n{correct}\n```"),
        1 => match serde_json::from_str::<serde_json::Value>(correct) {
            Ok(serde_json::Value::Object(mut map)) if map.len() > 1 => {
                let last = map.keys().next_back().cloned().unwrap_or_default();
                map.remove(&last);
                serde_json::Value::Object(map).to_string()
            }
            _ => format!("{correct} {{}}"),
        },
        _ => format!("{correct}\nHope this helps!"),
    }
}

/// The reasoning text for a drawn number of tokens: the sentence repeated (at least once when
/// `tokens` > 0), without the trailing space.
pub fn reasoning_text(tokens: f64) -> String {
    if tokens <= 0.0 {
        return String::new();
    }
    let times = ((tokens / TOKENS_PER_SENTENCE).round() as usize).max(1);
    REASONING_SENTENCE.repeat(times).trim_end().to_string()
}

/// Cuts text into pieces of `lo..=hi` characters (never inside a character).
pub fn pieces(text: &str, lo: usize, hi: usize, draws: &mut Draws) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let take = draws.int_in(lo, hi).min(chars.len() - at);
        out.push(chars[at..at + take].iter().collect());
        at += take;
    }
    out
}

/// The first half of a text's characters (rounded down), for `finish-length`.
pub fn first_half(text: &str) -> String {
    let n = text.chars().count() / 2;
    text.chars().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile;

    fn canned() -> Vec<CannedAnswer> {
        vec![CannedAnswer {
            group: "ticket-triage".into(),
            user_prompt: "triage this".into(),
            correct: r#"{"category":"bug","priority":"p1"}"#.into(),
            incorrect: r#"{"category":"feature","priority":"p3"}"#.into(),
        }]
    }

    #[test]
    fn pieces_respect_bounds_and_rejoin() {
        let mut d = Draws::for_request(1, "x", b"y");
        let ps = pieces("naïve café ✓ résumé", 2, 5, &mut d);
        assert_eq!(ps.concat(), "naïve café ✓ résumé");
        assert!(
            ps[..ps.len() - 1]
                .iter()
                .all(|p| (2..=5).contains(&p.chars().count()))
        );
        let fixed = pieces(GENERIC_ANSWER, 4, 4, &mut d);
        assert_eq!(fixed.len(), 7); // 27 characters → 6 × 4 + 3
    }

    #[test]
    fn answer_mix_follows_profile() {
        let zai = profile::find("baseten").unwrap();
        let (mut correct, mut wrong, mut bad) = (0, 0, 0);
        for i in 0..4000u32 {
            let mut d = Draws::for_request(3, "baseten", &i.to_le_bytes());
            match choose(zai, &canned(), "triage this", &mut d) {
                (AnswerKind::Correct, text) => {
                    assert_eq!(text, r#"{"category":"bug","priority":"p1"}"#);
                    correct += 1
                }
                (AnswerKind::Incorrect, _) => wrong += 1,
                (AnswerKind::Malformed, text) => {
                    assert!(
                        serde_json::from_str::<serde_json::Value>(&text)
                            .map_or(true, |v| v.as_object().is_some_and(|m| m.len() == 1))
                    );
                    bad += 1
                }
                (AnswerKind::Generic, _) => panic!("prompt is canned"),
            }
        }
        // Baseten: p_correct = 0.9583; sd over 4000 = sqrt(.9583 × .0417 / 4000) = 0.00316.
        let rate = f64::from(correct) / 4000.0;
        assert!((rate - 0.9583).abs() < 4.0 * 0.00316, "{rate}");
        assert!(
            wrong > 0 && bad > wrong,
            "malformed share 0.6: wrong {wrong}, bad {bad}"
        );
        let mut d = Draws::for_request(3, "baseten", b"");
        assert_eq!(choose(zai, &canned(), "other", &mut d).1, GENERIC_ANSWER);
    }

    #[test]
    fn reasoning_and_half() {
        assert_eq!(reasoning_text(0.0), "");
        assert_eq!(reasoning_text(3.0), REASONING_SENTENCE.trim_end());
        assert_eq!(reasoning_text(36.0).matches("JSON").count(), 3);
        assert_eq!(first_half(GENERIC_ANSWER), r#"{"answer":"si"#);
    }
}
