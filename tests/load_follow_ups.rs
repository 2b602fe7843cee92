//! Conversations on the task families against the embedded simulator (`answer_from_gold`):
//! turn 0 is the task's item, scored as before; every later turn asks a follow-up about the
//! same document whose gold the test reads from the dataset file itself (never from the code
//! under test) and checks each record's verdict against.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod load_workflow_support;

use load_workflow_support::*;
use openbench_common::record::{Outcome, TerminalRecord};
use openbench_load::report::compute::compute;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const FAMILIES: [&str; 3] = [
    "meeting-notes-lookup",
    "ticket-triage",
    "contract-terms-extraction",
];

/// A release in `tmp` holding the first `rows[i]` rows of family `FAMILIES[i]` of the shipped
/// one (items are cycled in family order, so a short run of the whole release would reach
/// contracts only), with its hashes rebuilt here.
fn release(tmp: &Path, rows: [usize; 3]) -> PathBuf {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/micro-single-task");
    let data = tmp.join("release");
    std::fs::create_dir_all(&data).unwrap();
    let mut manifest: Value =
        serde_json::from_slice(&std::fs::read(shipped.join("manifest.json")).unwrap()).unwrap();
    for (family, n) in FAMILIES.iter().zip(rows) {
        let file = format!("{family}.jsonl");
        let text = std::fs::read_to_string(shipped.join(&file)).unwrap();
        let kept: Vec<&str> = text.lines().take(n).collect();
        let text = format!("{}\n", kept.join("\n"));
        let entry = &mut manifest["families"][*family];
        entry["rows"] = n.into();
        entry["private_items"] = n.into();
        entry["sha256"] = openbench_common::hash::sha256_hex(text.as_bytes()).into();
        std::fs::write(data.join(&file), text).unwrap();
    }
    // The release hash (METHODOLOGY §7): sha256 of the sorted `path:sha256` lines.
    let mut files: Vec<String> = manifest["families"]
        .as_object()
        .unwrap()
        .values()
        .map(|f| {
            format!(
                "{}:{}",
                f["file"].as_str().unwrap(),
                f["sha256"].as_str().unwrap()
            )
        })
        .collect();
    files.sort();
    manifest["release_hash"] =
        openbench_common::hash::sha256_hex(files.join("\n").as_bytes()).into();
    std::fs::write(data.join("manifest.json"), manifest.to_string()).unwrap();
    data
}

/// The text between the first `start` in `text` and the next `end`.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).unwrap() + start.len();
    let to = from + text[from..].find(end).unwrap();
    &text[from..to]
}

/// The right answers of an item's odd and even follow-ups, read from its document:
/// a note's `Notes taken by:` and `Facilitator:` lines; a ticket thread's first
/// `resolved as C/P` label and the `[TARGET]` ticket's `From:` name; a contract's Provider
/// and Customer.
fn golds(family: &str, user: &str) -> (Value, Value) {
    let line = |name: &str| {
        user.lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap()
            .trim()
            .to_string()
    };
    match family {
        "meeting-notes-lookup" => (
            json!({"answer": line("Notes taken by:")}),
            json!({"answer": line("Facilitator:")}),
        ),
        "ticket-triage" => {
            let label = between(user, "resolved as ", "\n");
            let (category, priority) = label.split_once('/').unwrap();
            let target = &user[user.find("[TARGET] Ticket").unwrap()..];
            (
                json!({"category": category, "priority": priority}),
                json!({"answer": between(target, "\nFrom: ", ",")}),
            )
        }
        _ => (
            json!({"answer": between(user, "is made between ", ", a ")}),
            json!({"answer": between(user, "(\"Provider\"), and ", " (\"Customer\")")}),
        ),
    }
}

/// Every record of the run.
fn records(dir: &Path) -> Vec<TerminalRecord> {
    openbench_common::rundir::counting_records(&dir.join(openbench_common::rundir::FULL_RESULTS))
        .unwrap()
        .into_values()
        .collect()
}

/// Each family's follow-ups, by hand: odd turns ask one fact of the document, even turns
/// another, each scored exactly (the simulator answers from the follow-ups' canned golds, and
/// a question shared by two items gets the first one's answer, so both verdicts occur).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_familys_follow_ups_are_scored_exactly_against_their_document() {
    let tmp = tempfile::tempdir().unwrap();
    let data = release(tmp.path(), [40, 8, 8]);
    let load = "  seed: 6
  phases: {warmup_s: 0, measure: {duration_s: 2}, cooldown_s: 0}
  steps:
    - {model: closed, concurrency: 2, conversation: {turns: {dist: fixed, tokens: 3}}}
  workload: {kind: tasks}";
    let spec = write_spec(tmp.path(), &provider("b", "sim://plain"), load, "");
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace(
            "dataset: {source: ., manifest: none}",
            &format!(
                "dataset: {{source: '{}', manifest: manifest.json}}",
                data.display()
            ),
        )
        .replace(
            "simulator: {time_scale: 1.0, seed: 7}",
            "simulator: {time_scale: 0.05, seed: 7, answer_from_gold: true}",
        );
    std::fs::write(&spec, text).unwrap();
    // The golds by item id, straight from the release's files.
    let mut gold: BTreeMap<String, (&str, (Value, Value))> = BTreeMap::new();
    for family in FAMILIES {
        let rows = std::fs::read_to_string(data.join(format!("{family}.jsonl"))).unwrap();
        for row in rows.lines() {
            let v: Value = serde_json::from_str(row).unwrap();
            let user = v["prompt"]["user"].as_str().unwrap();
            gold.insert(
                v["id"].as_str().unwrap().to_string(),
                (family, golds(family, user)),
            );
        }
    }
    let (dir, results) = run(&spec).await;
    let samples = &results.steps[0].samples;
    // Per family: (follow-ups, right); per turn: (right, scored) in the window [0, 2000) ms.
    let mut per_family: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut per_turn: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    for r in records(&dir) {
        let Some((key, turn)) = r.item_id.split_once("/turn-") else {
            continue;
        };
        let turn: u64 = turn.parse().unwrap();
        let (family, (odd, even)) = &gold[key];
        let expected_answer = if turn % 2 == 1 { odd } else { even };
        let answer: Option<Value> = serde_json::from_str(&r.answer_text).ok();
        let expected = r.outcome == Outcome::Completed && answer.as_ref() == Some(expected_answer);
        let sample = samples
            .iter()
            .find(|s| s.lane == r.lane && s.sent_ms == r.sent_offset_ms.unwrap())
            .unwrap();
        assert_eq!(
            sample.correct,
            Some(expected),
            "{}: {} (gold {expected_answer})",
            r.item_id,
            r.answer_text
        );
        let at = per_family.entry(family).or_default();
        at.0 += 1;
        at.1 += usize::from(expected);
        if r.sent_offset_ms.unwrap() < 2000.0 {
            let at = per_turn.entry(turn).or_default();
            at.0 += usize::from(expected);
            at.1 += 1;
        }
    }
    eprintln!("follow-ups (asked, right) per family: {per_family:?}");
    for family in FAMILIES {
        let (asked, right) = per_family.get(family).copied().unwrap_or_default();
        assert!(asked >= 2 && right >= 1, "{family}: {right} of {asked}");
    }
    let (asked, right) = per_family
        .values()
        .fold((0, 0), |(a, r), (x, y)| (a + x, r + y));
    assert!(right < asked, "{right} of {asked}");
    // The report's task success per follow-up turn: right ÷ scored, by hand.
    let metrics = compute(&results);
    for row in metrics.steps[0].turns.iter().filter(|t| t.turn > 0) {
        let (r, n) = per_turn[&row.turn];
        assert_eq!(
            row.task_success,
            Some(r as f64 / n as f64),
            "turn {}",
            row.turn
        );
    }
}
