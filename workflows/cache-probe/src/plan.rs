//! The probe's timetable and prompts.
//!
//! A **trial** probes one gap: its **warm** request sends a new prefix, its **probe** request
//! sends the same prompt again `gap` seconds later, and its **fresh** request sends a prefix never
//! sent before, of the same length, `pair_offset_s` after the probe (the miss it is paired with).
//! Trials start `spacing_s` apart, gap after gap within a repeat, so every lane runs the same
//! timetable as one open-loop phase; no prefix is ever sent by two trials, so a probe's gap is
//! the time since its prefix's last use.

use crate::section::CacheProbeSection;
use openbench_common::request::{ChatMessage, OutputLength, Role};
use openbench_common::schedule::{LoadPosition, RequestContent, RequestSource};

/// The group every request of the workflow belongs to.
pub const GROUP: &str = "cache-probe";

/// What a request is within its trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SendKind {
    /// The prefix's first send.
    Warm,
    /// The same prompt again after the gap.
    Probe,
    /// A new prefix of the same length, paired with the probe.
    Fresh,
}

impl SendKind {
    /// Its word in item keys.
    pub fn as_str(self) -> &'static str {
        match self {
            SendKind::Warm => "warm",
            SendKind::Probe => "probe",
            SendKind::Fresh => "fresh",
        }
    }

    fn parse(text: &str) -> Option<SendKind> {
        [SendKind::Warm, SendKind::Probe, SendKind::Fresh]
            .into_iter()
            .find(|r| r.as_str() == text)
    }
}

/// One trial: which gap it probes and when it starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trial {
    /// 0-based repeat.
    pub repeat: u32,
    /// Index into `gaps_s`.
    pub gap_index: usize,
    /// The gap, seconds.
    pub gap_s: f64,
    /// Start (the warm send), seconds from the phase start.
    pub start_s: f64,
}

/// One send of the timetable.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Send {
    /// Release offset, ms from the phase start.
    pub at_ms: f64,
    /// Index into [`trials`].
    pub trial: usize,
    /// What it is.
    pub role: SendKind,
}

/// Every trial, repeat by repeat and gap by gap within one.
pub fn trials(section: &CacheProbeSection) -> Vec<Trial> {
    let mut out = Vec::new();
    for repeat in 0..section.repeats {
        for (gap_index, gap_s) in section.gaps_s.iter().enumerate() {
            let start_s = out.len() as f64 * section.spacing_s;
            out.push(Trial {
                repeat,
                gap_index,
                gap_s: *gap_s,
                start_s,
            });
        }
    }
    out
}

/// Every send, in release order (ties in trial, then role, order).
pub fn timetable(section: &CacheProbeSection) -> Vec<Send> {
    let mut sends = Vec::new();
    for (trial, t) in trials(section).iter().enumerate() {
        let probe_s = t.start_s + t.gap_s;
        for (role, at_s) in [
            (SendKind::Warm, t.start_s),
            (SendKind::Probe, probe_s),
            (SendKind::Fresh, probe_s + section.pair_offset_s),
        ] {
            sends.push(Send {
                at_ms: at_s * 1000.0,
                trial,
                role,
            });
        }
    }
    sends.sort_by(|a, b| {
        a.at_ms
            .total_cmp(&b.at_ms)
            .then(a.trial.cmp(&b.trial))
            .then(a.role.cmp(&b.role))
    });
    sends
}

/// The item key of a request (`t3-probe`): its trial and role, read back by the report.
pub fn item_key(trial: usize, role: SendKind) -> String {
    format!("t{trial}-{}", role.as_str())
}

/// The trial and role an item key names.
pub fn parse_item_key(key: &str) -> Option<(usize, SendKind)> {
    let (trial, role) = key.strip_prefix('t')?.split_once('-')?;
    Some((trial.parse().ok()?, SendKind::parse(role)?))
}

/// Builds each request of the timetable: the prompt is a tagged prefix of the corpus, repeated
/// to `prefix_tokens` × 4 characters, then a short question.
pub struct ProbeSource {
    sends: Vec<Send>,
    corpus: Vec<String>,
    run_id: String,
    prefix_chars: usize,
    max_output_tokens: u32,
}

/// The question after every prefix.
const QUESTION: &str =
    "\n\nReply with the JSON object {\"first_word\": <the first word of the text above>}.";

impl ProbeSource {
    /// The source of a run `run_id` over `corpus` (its words).
    pub fn new(section: &CacheProbeSection, corpus: &str, run_id: &str) -> ProbeSource {
        let mut words: Vec<String> = corpus.split_whitespace().map(str::to_string).collect();
        if words.is_empty() {
            words.push("cache".to_string());
        }
        ProbeSource {
            sends: timetable(section),
            corpus: words,
            run_id: run_id.to_string(),
            prefix_chars: section.prefix_tokens as usize * 4,
            max_output_tokens: section.max_output_tokens,
        }
    }

    /// The prefix of `trial` on `lane`: warm and probe share it, fresh has its own. A tag naming
    /// the run, the lane and the prefix comes first, so no two prefixes share a first token
    /// block — not across lanes, nor across runs at a provider that caches them all.
    pub fn prefix(&self, lane: &str, trial: usize, role: SendKind) -> String {
        let name = match role {
            SendKind::Warm | SendKind::Probe => format!("p{trial}"),
            SendKind::Fresh => format!("f{trial}"),
        };
        let mut text = format!("[{} {lane} {name}]", self.run_id);
        // The corpus from a place of its own for each prefix, so prefixes differ throughout.
        let start = (trial * 2 + usize::from(role == SendKind::Fresh)) * 7;
        let mut i = start;
        while text.chars().count() < self.prefix_chars {
            text.push(' ');
            text.push_str(&self.corpus[i % self.corpus.len()]);
            i += 1;
        }
        text
    }
}

impl RequestSource for ProbeSource {
    fn request(&self, at: &LoadPosition) -> RequestContent {
        let send = usize::try_from(at.sequence)
            .ok()
            .and_then(|i| self.sends.get(i))
            .copied();
        let (trial, role) = send.map_or((0, SendKind::Fresh), |s| (s.trial, s.role));
        let mut content = self.prefix(&at.lane, trial, role);
        content.push_str(QUESTION);
        RequestContent {
            group: GROUP.to_string(),
            item_key: item_key(trial, role),
            messages: vec![ChatMessage::text(Role::User, content)],
            output: Some(OutputLength {
                max_tokens: self.max_output_tokens,
                ignore_eos: false,
            }),
            tools: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section() -> CacheProbeSection {
        CacheProbeSection {
            prefix_tokens: 64,
            gaps_s: vec![1.0, 5.0],
            repeats: 2,
            spacing_s: 2.0,
            pair_offset_s: 0.5,
            max_output_tokens: 8,
            bootstrap_seed: 0,
        }
    }

    #[test]
    fn the_timetable_by_hand() {
        // Trials start 2 s apart: t0 (gap 1) at 0, t1 (gap 5) at 2, t2 (gap 1) at 4,
        // t3 (gap 5) at 6; probe at start + gap, fresh 0.5 s later.
        let sends: Vec<(f64, usize, SendKind)> = timetable(&section())
            .iter()
            .map(|s| (s.at_ms, s.trial, s.role))
            .collect();
        use SendKind::*;
        assert_eq!(
            sends,
            vec![
                (0.0, 0, Warm),
                (1000.0, 0, Probe),
                (1500.0, 0, Fresh),
                (2000.0, 1, Warm),
                (4000.0, 2, Warm),
                (5000.0, 2, Probe),
                (5500.0, 2, Fresh),
                (6000.0, 3, Warm),
                (7000.0, 1, Probe),
                (7500.0, 1, Fresh),
                (11000.0, 3, Probe),
                (11500.0, 3, Fresh),
            ]
        );
    }

    #[test]
    fn warm_and_probe_share_a_prefix_fresh_and_other_lanes_do_not() {
        let source = ProbeSource::new(&section(), "alpha bravo charlie delta echo", "run-1");
        let warm = source.prefix("zai", 3, SendKind::Warm);
        assert_eq!(warm, source.prefix("zai", 3, SendKind::Probe));
        assert!(warm.starts_with("[run-1 zai p3] "), "{warm}");
        assert!(warm.chars().count() >= 256, "{}", warm.len());
        let fresh = source.prefix("zai", 3, SendKind::Fresh);
        assert!(fresh.starts_with("[run-1 zai f3] "), "{fresh}");
        assert!(fresh.chars().count().abs_diff(warm.chars().count()) < 8);
        assert_ne!(source.prefix("modal", 3, SendKind::Warm), warm);
        assert_eq!(
            parse_item_key(&item_key(12, SendKind::Fresh)),
            Some((12, SendKind::Fresh))
        );
        assert_eq!(parse_item_key("t1-cold"), None);
    }
}
