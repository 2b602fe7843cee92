#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The dataset contract, loader, generator and extractor, against real files on disk.

use openbench_common::hash::sha256_hex;
use openbench_common::workflow::Workflow;
use openbench_micro_single_task::MicroSingleTask;
use openbench_micro_single_task::dataset::generate::{self, DEFAULT_SEED, token_band};
use openbench_micro_single_task::dataset::{
    Family, Gold, canned, extract, load_release, release_hash, validate_strict,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn repo_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(name)
}

/// Writes the in-memory sample into `dir`, applying `edit` to each family file's text first,
/// and re-pins the manifest hashes so only the edited rows are wrong.
fn write_sample(dir: &Path, edit: impl Fn(&str, String) -> String) {
    let generated = generate::build(DEFAULT_SEED, true).unwrap();
    let mut manifest: Value = serde_json::from_str(&generated.files[3].1).unwrap();
    let mut hashes = Vec::new();
    for (name, text) in &generated.files[..3] {
        let text = edit(name, text.clone());
        let hash = sha256_hex(text.as_bytes());
        let family = name.trim_end_matches(".jsonl");
        manifest["families"][family]["sha256"] = Value::String(hash.clone());
        hashes.push((name.clone(), hash));
        std::fs::write(dir.join(name), text).unwrap();
    }
    manifest["release_hash"] = Value::String(release_hash(
        hashes.iter().map(|(p, h)| (p.as_str(), h.as_str())),
    ));
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
}

fn replace_line(text: &str, line: usize, f: impl Fn(&mut Value)) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut v: Value = serde_json::from_str(&lines[line - 1]).unwrap();
    f(&mut v);
    lines[line - 1] = v.to_string();
    lines.join("\n") + "\n"
}

#[test]
fn release_hash_of_a_two_file_dataset_matches_a_hand_computation() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("b")).unwrap();
    std::fs::write(dir.path().join("b/a.jsonl"), "{\"x\":1}\n").unwrap();
    std::fs::write(dir.path().join("a.jsonl"), "{\"y\":2}\n").unwrap();
    let ha = sha256_hex(std::fs::read(dir.path().join("b/a.jsonl")).unwrap());
    let hb = sha256_hex(std::fs::read(dir.path().join("a.jsonl")).unwrap());
    // python3: hashlib.sha256(b'{"x":1}\n').hexdigest()
    assert_eq!(
        ha,
        "bb157861a164e35cdde9d726b0af9ce2765a8f530c35d9e45732b94ee65e9557"
    );
    // python3: sha256("\n".join(sorted(path + ":" + hash)))
    // = sha256("a.jsonl:1aab…06\nb/a.jsonl:bb15…57"), sorted by path, no trailing newline.
    assert_eq!(
        release_hash([("b/a.jsonl", ha.as_str()), ("a.jsonl", hb.as_str())]),
        "1cc97f3f3c6441687ebe82c8c6a23cc139bbd7a0210bc660fa7c9b771ce02039"
    );
}

#[test]
fn loader_reports_every_broken_line_with_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    write_sample(dir.path(), |name, text| match name {
        "meeting-notes-lookup.jsonl" => {
            let t = replace_line(&text, 2, |v| v["aliases"] = serde_json::json!(["ok", 7]));
            let t = replace_line(&t, 3, |v| v["id"] = Value::String("pub-mn-001".into()));
            replace_line(&t, 5, |v| {
                v["use_case"] = Value::String("ticket-triage".into())
            })
        }
        "ticket-triage.jsonl" => {
            let t = replace_line(&text, 2, |v| {
                v["gold"]["priority"] = Value::String("P1".into())
            });
            let mut lines: Vec<&str> = t.lines().collect();
            lines[3] = "{not json";
            lines.join("\n") + "\n"
        }
        _ => {
            let t = replace_line(&text, 1, |v| {
                v["gold"]["effective_date"] = Value::String("2027-02-30".into())
            });
            let t = replace_line(&t, 4, |v| {
                v["gold"]["payment_terms_days"] = serde_json::json!(30.0)
            });
            replace_line(&t, 6, |v| {
                v["gold"].as_object_mut().unwrap().remove("auto_renews");
            })
        }
    });
    let err = load_release(dir.path(), "manifest.json").unwrap_err();
    let shown: Vec<String> = err.problems().iter().map(|p| p.to_string()).collect();
    let expect = [
        "meeting-notes-lookup.jsonl:2: aliases[1]:",
        "meeting-notes-lookup.jsonl:3: id: duplicate id \"pub-mn-001\", first at meeting-notes-lookup.jsonl:1",
        "meeting-notes-lookup.jsonl:5: use_case: belongs to another family's file",
        "ticket-triage.jsonl:2: gold.priority: must be one of p0, p1, p2, p3; found \"P1\"",
        "ticket-triage.jsonl:4: -: not valid JSON",
        "contract-terms-extraction.jsonl:1: gold.effective_date: must be a real YYYY-MM-DD date, found \"2027-02-30\"",
        "contract-terms-extraction.jsonl:4: gold.payment_terms_days:",
        "contract-terms-extraction.jsonl:6: gold.auto_renews: missing",
    ];
    for e in expect {
        assert!(
            shown.iter().any(|s| s.starts_with(e)),
            "missing {e:?} in {shown:#?}"
        );
    }
    // Rows that failed are also missing from the counts, which are reported per file.
    assert!(shown.iter().any(|s| s.starts_with(
        "ticket-triage.jsonl: rows: row count disagrees with manifest.json: expected 6, actual 4"
    )));
    assert!(err.to_string().contains("problem(s)"));
}

#[test]
fn a_file_whose_hash_disagrees_with_the_manifest_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_sample(dir.path(), |_, text| text);
    let release = load_release(dir.path(), "manifest.json").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(release.rows().len(), 13 + 6 + 10);
    let path = dir.path().join("ticket-triage.jsonl");
    let original = std::fs::read_to_string(&path).unwrap();
    let changed = original.replacen("Triage", "triage", 1);
    std::fs::write(&path, &changed).unwrap();
    // sha256sum of data/micro-single-task-public-sample/ticket-triage.jsonl (the sample the
    // generator writes), and python3's hashlib.sha256 of it with the first "Triage" lowered.
    let expected = "ff126879c37c2fdbb3cde0018c9b1c102ff644a8b52ef238ef5b6352144c874e";
    let actual = "06c534bd7491b3312648a8e6e9b9b8f961d0584bce25d635ec49cbf474b88148";
    let err = load_release(dir.path(), "manifest.json").unwrap_err();
    let shown: Vec<String> = err.problems().iter().map(|p| p.to_string()).collect();
    assert_eq!(
        shown,
        vec![format!(
            "ticket-triage.jsonl: sha256: hash disagrees with manifest.json: expected {expected}, actual {actual}"
        )]
    );
}

#[test]
fn regeneration_is_byte_identical_and_equals_the_committed_corpus() {
    for (sample, name) in [
        (false, "micro-single-task"),
        (true, "micro-single-task-public-sample"),
    ] {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let ga = generate::generate(a.path(), DEFAULT_SEED, sample).unwrap();
        generate::generate(b.path(), DEFAULT_SEED, sample).unwrap();
        let committed = repo_data(name);
        for (file, _) in &ga.files {
            let bytes_a = std::fs::read(a.path().join(file)).unwrap();
            assert_eq!(
                bytes_a,
                std::fs::read(b.path().join(file)).unwrap(),
                "{file}"
            );
            assert!(
                bytes_a == std::fs::read(committed.join(file)).unwrap(),
                "data/{name}/{file} is not the generator's output: regenerate it"
            );
        }
    }
    // Another seed gives another corpus.
    let other = generate::build(DEFAULT_SEED + 1, true).unwrap();
    let base = generate::build(DEFAULT_SEED, true).unwrap();
    assert_ne!(other.manifest.release_hash, base.manifest.release_hash);
}

#[test]
fn committed_release_validates_strictly_with_counts_and_bands() {
    let release = validate_strict(&repo_data("micro-single-task"), "manifest.json").unwrap();
    assert!(release.is_frozen());
    let counts: Vec<usize> = Family::ALL
        .iter()
        .map(|f| release.family_rows(*f).count())
        .collect();
    assert_eq!(counts, vec![237, 244, 240]);
    for row in release.rows() {
        let band = token_band(row.family);
        assert!(row.prompt_tokens >= band.min && row.prompt_tokens <= band.max);
        assert_eq!(row.split, "private");
        // Every row re-checked by the independent extractor.
        extract::recheck(&row.gold, &row.aliases, &row.user).unwrap();
    }
    // Some contract integers are null, some contracts were amended, both date styles occur.
    let contracts: Vec<_> = release
        .family_rows(Family::ContractTermsExtraction)
        .collect();
    let nulls = contracts
        .iter()
        .filter(
            |r| matches!(&r.gold, Gold::Contract(c) if c.security_incident_notice_hours.is_none()),
        )
        .count();
    assert!(nulls > 20 && nulls < 140, "{nulls} null security hours");
    assert!(
        contracts
            .iter()
            .filter(|r| r.user.contains("AMENDMENT"))
            .count()
            > 40
    );

    let sample = validate_strict(
        &repo_data("micro-single-task-public-sample"),
        "manifest.json",
    )
    .unwrap();
    assert!(!sample.is_frozen());
    assert_eq!(sample.manifest.status, "sample");
    let counts: Vec<usize> = Family::ALL
        .iter()
        .map(|f| sample.family_rows(*f).count())
        .collect();
    assert_eq!(counts, vec![13, 6, 10]);
    assert!(
        sample
            .rows()
            .iter()
            .all(|r| r.id.starts_with("pub-") && r.split == "public")
    );
}

#[test]
fn the_extractor_rejects_a_gold_that_disagrees_with_the_text() {
    let sample = generate::build(DEFAULT_SEED, true).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in &sample.files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let release = load_release(dir.path(), "manifest.json").unwrap();
    for row in release.rows() {
        let wrong = match &row.gold {
            Gold::MeetingNotes { answer } => Gold::MeetingNotes {
                answer: format!("{answer} Jr"),
            },
            Gold::TicketTriage(t) => {
                let mut t = *t;
                t.priority = if t.priority.as_str() == "p3" {
                    openbench_micro_single_task::dataset::Priority::P2
                } else {
                    openbench_micro_single_task::dataset::Priority::P3
                };
                Gold::TicketTriage(t)
            }
            Gold::Contract(c) => {
                let mut c = c.clone();
                c.payment_terms_days = Some(c.payment_terms_days.unwrap_or(0) + 1);
                Gold::Contract(c)
            }
        };
        let refusal = extract::recheck(&wrong, &row.aliases, &row.user)
            .err()
            .unwrap_or_else(|| panic!("{}: a wrong gold passed", row.id));
        let says = match row.gold {
            Gold::MeetingNotes { .. } => "notes say ",
            Gold::TicketTriage(_) => "ticket reads as ",
            Gold::Contract(_) => "contract reads as ",
        };
        assert!(refusal.starts_with(says), "{}: {refusal}", row.id);
    }
    // An ambiguous alias is refused too.
    let row = release
        .family_rows(Family::MeetingNotesLookup)
        .find(|r| r.aliases.len() == 2 && !r.aliases[0].contains('.'))
        .expect("an owner question with a first-name alias");
    assert_eq!(
        extract::recheck(&row.gold, &["Nobody".to_string()], &row.user),
        Err("alias \"Nobody\" matches 0 attendees".to_string())
    );
}

#[test]
fn workflow_load_dataset_and_canned_answers() {
    let dir = repo_data("micro-single-task-public-sample");
    let wf = MicroSingleTask;
    let release = wf.load_dataset(&dir, "manifest.json").unwrap();
    assert_eq!(release.items.len(), 3);
    // The item hash is sha256 of the canonical JSON of the row as parsed from its line, here
    // computed with python3: hashlib.sha256(json.dumps(row, sort_keys=True,
    // separators=(",", ":"), ensure_ascii=False).encode()).hexdigest().
    let item = &release.items["ticket-triage"][0];
    assert_eq!(item.item_id, "pub-tt-001");
    assert_eq!(
        item.item_hash,
        "5fb4d81c5d6407f514ae29925769263d11679dce0a8901d4519c47457ce328a9"
    );

    let canned = canned::canned_answers(&release).unwrap();
    assert_eq!(canned.len(), 29);
    for answer in &canned {
        let correct: Value = serde_json::from_str(&answer.correct).unwrap();
        let wrong: Value = serde_json::from_str(&answer.incorrect).unwrap();
        assert_ne!(correct, wrong);
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&correct), keys(&wrong));
        assert!(!answer.correct.contains(": "), "compact JSON");
    }
    let mn = canned
        .iter()
        .find(|c| c.group == "meeting-notes-lookup")
        .unwrap();
    assert!(mn.correct.starts_with("{\"answer\":"));
    // A changed file is refused when canned answers are built from it.
    let tmp = tempfile::tempdir().unwrap();
    write_sample(tmp.path(), |_, t| t);
    let mut loaded = wf.load_dataset(tmp.path(), "manifest.json").unwrap();
    std::fs::write(tmp.path().join("ticket-triage.jsonl"), "{}\n").unwrap();
    let err = canned::canned_answers(&loaded).unwrap_err().to_string();
    assert!(
        err.contains("ticket-triage.jsonl") && err.contains("sha256"),
        "{err}"
    );
    loaded.file_hashes.clear();
    assert!(canned::canned_answers(&loaded).unwrap().is_empty());
}
