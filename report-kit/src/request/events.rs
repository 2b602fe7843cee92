//! Answer-bearing events per request, read from the events file one line at a time: the
//! report reads the whole file ([`answer_events`]), `watch` the lines as they are appended, so
//! both see the same events (and so the same ITL).

use super::ReadGroup;
use openbench_common::record::StreamEvent;
use openbench_common::tokenizer::count_tokens;
use openbench_common::workflow::WorkflowError;
use std::collections::BTreeMap;
use std::path::Path;

/// One request's answer-bearing events as the metrics read them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnswerStream {
    /// Each answer-bearing event's offset, ascending by event index.
    pub events_ms: Vec<f64>,
    /// The same events as read groups, with their tokens.
    pub groups: Vec<ReadGroup>,
}

/// Answer-bearing events of every request in the events file (ascending by event index; a
/// request executed twice keeps its last execution's events). Unreadable lines (a torn tail)
/// are skipped: the records, not the events, say what ran.
pub fn answer_events(path: &Path) -> Result<BTreeMap<String, AnswerStream>, WorkflowError> {
    let fail =
        |e: openbench_common::rundir::RunDirError| WorkflowError(format!("events {e}").into());
    let file = match openbench_common::rundir::open_read(path) {
        Ok(file) => file,
        Err(openbench_common::rundir::RunDirError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Ok(BTreeMap::new());
        }
        Err(e) => return Err(fail(e)),
    };
    // Streamed one bounded line at a time: the events file is the run's largest.
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut chunks = AnswerEvents::default();
    let mut line = Vec::new();
    let mut line_no = 0u64;
    loop {
        line.clear();
        let n =
            openbench_common::rundir::lines::read_line(&mut reader, &mut line, path, line_no + 1)
                .map_err(fail)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        chunks.line(String::from_utf8_lossy(line.trim_ascii_end()).as_ref());
    }
    Ok(chunks.into_map())
}

/// How close to a read group's first event a later answer event must come to be of the same
/// network read: 0.2 ms. The HTTP client hands a body over one HTTP/1.1 chunk (or HTTP/2 DATA
/// frame) per poll, so several events that arrived in one TCP segment are stamped apart by the
/// hand-over alone: 12 to 70 µs measured on a busy 2-core machine (three chunks in one write). A
/// server's own tokens come further apart than this (5,000 tokens/s in one stream is 0.2 ms a
/// token); a group spans at most this long, so even a faster server's steady tokens still give
/// per-token values of their true interval, two at a time.
pub const READ_COALESCE_MS: f64 = 0.2;

/// Answer-bearing events per request, taken one events line at a time: the report reads the
/// whole file through it ([`answer_events`]), `watch` the lines as they are appended, so both
/// see the same events (and so the same ITL).
#[derive(Debug, Clone, Default)]
pub struct AnswerEvents {
    /// Request id → event index → the event's offset and answer text when it carried some.
    by: BTreeMap<String, BTreeMap<u32, Option<(f64, String)>>>,
}

impl AnswerEvents {
    /// Takes one line of the events file; an unreadable one (a torn tail) is skipped. Event 0 of
    /// a request starts its events over (a re-execution replaces the earlier one's).
    pub fn line(&mut self, line: &str) {
        let Ok(event) = serde_json::from_str::<StreamEvent>(line) else {
            return;
        };
        let answer = (!event.answer.is_empty()).then_some((event.offset_ms, event.answer));
        let events = self.by.entry(event.request_id).or_default();
        if event.index == 0 {
            events.clear();
        }
        events.insert(event.index, answer);
    }

    /// The answer-bearing event offsets of `request_id` so far, ascending by event index.
    pub fn of(&self, request_id: &str) -> Vec<f64> {
        self.by
            .get(request_id)
            .map(|events| events.values().flatten().map(|(at, _)| *at).collect())
            .unwrap_or_default()
    }

    /// The read groups of `request_id` so far: consecutive answer-bearing events of one network
    /// read, each group with the o200k tokens of their joined text. An event belongs to the
    /// group before it when it came at most [`READ_COALESCE_MS`] after that group's first
    /// event (docs/load.md, "Read groups").
    pub fn groups(&self, request_id: &str) -> Vec<ReadGroup> {
        let Some(events) = self.by.get(request_id) else {
            return Vec::new();
        };
        let mut groups: Vec<(f64, String)> = Vec::new();
        for (at, text) in events.values().flatten() {
            match groups.last_mut() {
                Some((first, joined)) if *at - *first <= READ_COALESCE_MS => joined.push_str(text),
                _ => groups.push((*at, text.clone())),
            }
        }
        groups
            .into_iter()
            .map(|(at_ms, text)| ReadGroup {
                at_ms,
                tokens: count_tokens(&text).max(1),
            })
            .collect()
    }

    /// Every request's events.
    pub fn into_map(self) -> BTreeMap<String, AnswerStream> {
        self.by
            .keys()
            .map(|id| {
                let stream = AnswerStream {
                    events_ms: self.of(id),
                    groups: self.groups(id),
                };
                (id.clone(), stream)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, index: u32, at: f64, reasoning: &str, answer: &str) -> String {
        format!(
            "{{\"request_id\":\"{id}\",\"index\":{index},\"offset_ms\":{at},\
             \"classification\":\"answer\",\"reasoning\":\"{reasoning}\",\"answer\":\"{answer}\"}}"
        )
    }

    #[test]
    fn events_of_one_read_form_one_group_with_the_tokens_of_their_text() {
        let mut chunks = AnswerEvents::default();
        for l in [
            line("r", 0, 10.0, "", "Hello"),
            // One read at 25 ms: two answer events around a reasoning-only one.
            line("r", 1, 25.0, "", " world"),
            line("r", 2, 25.0, "hm", ""),
            line("r", 3, 25.0, "", " again"),
            line("r", 4, 40.0, "", "!"),
        ] {
            chunks.line(&l);
        }
        assert_eq!(chunks.of("r"), [10.0, 25.0, 25.0, 40.0]);
        // Handed over 0.07 and 0.19 ms after the group's first: the same read. 0.21 ms after
        // it: a read of its own.
        let mut near = AnswerEvents::default();
        for l in [
            line("n", 0, 10.0, "", "a"),
            line("n", 1, 30.0, "", " b"),
            line("n", 2, 30.07, "", " c"),
            line("n", 3, 30.19, "", " d"),
            line("n", 4, 30.4, "", " e"),
        ] {
            near.line(&l);
        }
        assert_eq!(
            near.groups("n"),
            [(10.0, 1), (30.0, 3), (30.4, 1)].map(|(at_ms, tokens)| ReadGroup { at_ms, tokens })
        );
        // o200k: "Hello" 1 token, " world again" 2, "!" 1.
        assert_eq!(
            chunks.groups("r"),
            [(10.0, 1), (25.0, 2), (40.0, 1)].map(|(at_ms, tokens)| ReadGroup { at_ms, tokens })
        );
        // Event 0 again: a re-execution replaces the earlier events.
        chunks.line(&line("r", 0, 7.0, "", "Hi"));
        assert_eq!(chunks.of("r"), [7.0]);
        let map = chunks.into_map();
        assert_eq!(
            map["r"].groups,
            [ReadGroup {
                at_ms: 7.0,
                tokens: 1
            }]
        );
    }
}
