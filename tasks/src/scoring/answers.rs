//! Offline scoring of answer files (`openbench-inference score`): one JSON line per answer,
//! either `{"item_id", "answer_text"}` (gold looked up in the dataset) or self-contained
//! `{"item_id", "task_family", "gold", "aliases", "answer_text"}`.

use super::{Evaluation, Family, GoldRef, score_answer};
use serde::Deserialize;
use serde_json::Value;
use std::io::{BufRead, Write};

/// One input line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerLine {
    item_id: String,
    #[serde(default)]
    task_family: Option<String>,
    #[serde(default)]
    gold: Option<Value>,
    #[serde(default)]
    aliases: Option<Vec<String>>,
    answer_text: String,
}

/// Looks up an item's gold in a dataset: `Err` explains why there is none.
pub type GoldLookup<'a> = dyn FnMut(&str) -> Result<GoldRef, String> + 'a;

/// Scores one input line.
pub fn score_line(line: &str, lookup: &mut GoldLookup<'_>) -> Result<Evaluation, String> {
    let input: AnswerLine =
        serde_json::from_str(line).map_err(|e| format!("not an answer line: {e}"))?;
    let gold = match &input.gold {
        Some(gold) => {
            let name = input
                .task_family
                .as_deref()
                .ok_or("task_family: required with gold")?;
            let family =
                Family::parse(name).ok_or_else(|| format!("task_family: unknown {name:?}"))?;
            GoldRef::from_json(family, gold, input.aliases.as_deref().unwrap_or(&[]))?
        }
        None => {
            let gold = lookup(&input.item_id)?;
            if let Some(name) = input
                .task_family
                .as_ref()
                .filter(|n| n.as_str() != gold.family().as_str())
            {
                return Err(format!(
                    "task_family: {name:?}, but item {:?} is a {} item",
                    input.item_id,
                    gold.family().as_str()
                ));
            }
            gold
        }
    };
    let scored = score_answer(&gold, &input.answer_text);
    Ok(Evaluation::from_scored(
        &input.item_id,
        gold.family(),
        &scored,
    ))
}

/// Counts from one scoring pass (the `Workflow` trait's, returned by `score_answers`).
pub use openbench_common::workflow::ScoreCounts;

/// Scores every line of `input`, writing one evaluation per good line to `out` and one message
/// per bad line (`<source>:<line>: …`) to `errors`; a line that is not UTF-8 is a bad line too.
/// Blank lines are skipped.
pub fn score_stream(
    source: &str,
    input: impl BufRead,
    out: &mut dyn Write,
    errors: &mut dyn Write,
    lookup: &mut GoldLookup<'_>,
) -> std::io::Result<ScoreCounts> {
    let mut counts = ScoreCounts::default();
    for (i, bytes) in input.split(b'\n').enumerate() {
        let bytes = bytes?;
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(&bytes);
        let scored = std::str::from_utf8(bytes)
            .map_err(|e| format!("not valid UTF-8 (at byte {})", e.valid_up_to()))
            .and_then(|line| {
                if line.trim().is_empty() {
                    Ok(None)
                } else {
                    score_line(line, lookup).map(Some)
                }
            });
        match scored {
            Ok(None) => {}
            Ok(Some(evaluation)) => {
                serde_json::to_writer(&mut *out, &evaluation).map_err(std::io::Error::other)?;
                out.write_all(b"\n")?;
                counts.scored += 1;
            }
            Err(message) => {
                writeln!(errors, "{source}:{}: {message}", i + 1)?;
                counts.bad_lines += 1;
            }
        }
    }
    Ok(counts)
}
