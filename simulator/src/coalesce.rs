//! Merging writes that a time-scaled run would send closer together than timers can resolve.
//!
//! At `time_scale` 0.015 a 60 tokens/s stream wants a write every 0.25 ms; tokio's timer wheel
//! and per-write overhead cannot keep that pace, and every profile would come out at the same
//! ~800 writes/s. So in time-scaled mode, consecutive output writes closer than a real
//! millisecond or two are sent as one write at the time of the *last* of them. The timings the
//! benchmark measures survive exactly: the first output write (TTFO) and the first answer write
//! (TTFA) are never merged into anything earlier, and a merged group is sent at its last member's
//! time, so the last answer text (E2E) arrives when the plan says. Only the number of network
//! reads changes. Exact-schedule mode (the timing test) is never coalesced.

use crate::render::Write;
use crate::sse::Label;

/// Merges output writes (reasoning, answer, and keep-alive comments between them) that come less
/// than `min_gap_ms` (simulated ms) after the previously sent write. The first output write and
/// the first answer write always start a write of their own.
pub fn coalesce(writes: Vec<Write>, min_gap_ms: f64) -> Vec<Write> {
    let mut out: Vec<Write> = Vec::with_capacity(writes.len());
    let mut pending: Option<Write> = None;
    let mut last_sent = f64::NEG_INFINITY;
    let mut seen_output = false;
    let mut seen_answer = false;
    for write in writes {
        let is_output = matches!(write.label, Label::Reasoning | Label::Answer);
        let first_answer = write.label == Label::Answer && !seen_answer;
        let mergeable = seen_output
            && !first_answer
            && write.min_gap_ms == 0.0
            && matches!(
                write.label,
                Label::Reasoning | Label::Answer | Label::Comment
            );
        seen_output |= is_output;
        seen_answer |= write.label == Label::Answer;
        if !mergeable {
            if let Some(p) = pending.take() {
                out.push(p);
            }
            last_sent = write.at_ms;
            out.push(write);
            continue;
        }
        let group = match pending.take() {
            Some(mut p) => {
                p.bytes.extend_from_slice(&write.bytes);
                p.at_ms = write.at_ms;
                p.tokens += write.tokens;
                if write.label == Label::Answer {
                    p.label = Label::Answer;
                }
                p
            }
            None => write,
        };
        if group.at_ms - last_sent >= min_gap_ms {
            last_sent = group.at_ms;
            out.push(group);
        } else {
            pending = Some(group);
        }
    }
    if let Some(p) = pending {
        out.push(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(at_ms: f64, label: Label, text: &str) -> Write {
        Write {
            at_ms,
            min_gap_ms: 0.0,
            bytes: text.as_bytes().to_vec(),
            label,
            tokens: u32::from(matches!(label, Label::Reasoning | Label::Answer)),
        }
    }

    #[test]
    fn keeps_first_output_first_answer_and_last_answer_times() {
        let writes = vec![
            w(0.0, Label::Role, "R"),
            w(10.0, Label::Reasoning, "r1"),
            w(10.5, Label::Reasoning, "r2"),
            w(11.0, Label::Reasoning, "r3"),
            w(20.0, Label::Answer, "a1"),
            w(20.2, Label::Answer, "a2"),
            w(20.4, Label::Comment, ":"),
            w(20.6, Label::Answer, "a3"),
            w(30.0, Label::Answer, "a4"),
            w(30.1, Label::Answer, "a5"),
            w(31.0, Label::Finish, "F"),
        ];
        let out = coalesce(writes, 5.0);
        let got: Vec<(f64, String)> = out
            .iter()
            .map(|w| (w.at_ms, String::from_utf8_lossy(&w.bytes).into_owned()))
            .collect();
        // r1 stands alone (first output); r2+r3 merge (11.0 − 10.0 < 5) and are flushed by the
        // first answer, which stands alone at 20.0; a2..a3 merge (20.6 − 20.0 < 5), then a4
        // arrives 10 ms after the last send and carries the group: sent at 30.0; a5 (0.1 later)
        // pends and is flushed by the finish chunk at its own time 30.1.
        let want: Vec<(f64, String)> = vec![
            (0.0, "R".into()),
            (10.0, "r1".into()),
            (11.0, "r2r3".into()),
            (20.0, "a1".into()),
            (30.0, "a2:a3a4".into()),
            (30.1, "a5".into()),
            (31.0, "F".into()),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn leaves_split_writes_alone() {
        let mut split = w(5.0, Label::Answer, "b");
        split.min_gap_ms = 1.0;
        let writes = vec![
            w(1.0, Label::Answer, "a"),
            split,
            w(5.1, Label::Answer, "c"),
        ];
        let out = coalesce(writes, 100.0);
        assert_eq!(out.len(), 3);
        assert_eq!(out[1].min_gap_ms, 1.0);
    }
}
