//! A release in the reference Python runner's format loads unchanged, hashes as the reference
//! runner hashes it and selects the same 600 items in the same order.
//!
//! The expected values in `tests/fixtures/reference_release/expected.json` come from
//! `vectors.py` next to it (CPython 3.11: hashlib, json, `random.Random(seed).shuffle`), which
//! writes the same release with its own code; nothing here derives them from our code.

use openbench_common::workflow::Workflow;
use openbench_micro_single_task::MicroSingleTask;
use openbench_micro_single_task::dataset::{self, Family, Gold, ReleaseFormat};
use openbench_micro_single_task::plan::selection;
use serde_json::{Value, json};
use std::path::Path;

const SLUG: &str = "inference-micro-single-task";
const SCHEDULE: &str = "micro-single-task-paired-round-robin-sha256-v1";
const FAMILIES: [&str; 3] = [
    "meeting-notes-lookup",
    "ticket-triage",
    "contract-terms-extraction",
];

fn count(family: &str) -> usize {
    match family {
        "meeting-notes-lookup" => 203,
        "ticket-triage" => 211,
        _ => 207,
    }
}

fn template_file(family: &str) -> &'static str {
    match family {
        "meeting-notes-lookup" => "meeting-notes.system.txt",
        "ticket-triage" => "ticket-triage.system.txt",
        _ => "contract-terms.system.txt",
    }
}

fn template_bytes(family: &str) -> &'static str {
    match family {
        "meeting-notes-lookup" => {
            "Answer one question about the meeting notes.\nReply with JSON {\"answer\": string}.\n"
        }
        "ticket-triage" => {
            "Triage the [TARGET] ticket.\nReply with JSON {\"category\": …, \"priority\": …}.\n"
        }
        _ => "Extract the ten contract terms.\r\nReply with one JSON object.\r\n",
    }
}

/// The system prompt a row carries: the template as Python's read_text gives it, one `\n` off.
fn system_text(family: &str) -> String {
    let text = template_bytes(family).replace("\r\n", "\n");
    text.strip_suffix('\n').unwrap_or(&text).to_string()
}

fn item_id(family: &str, i: usize) -> String {
    let prefix = match family {
        "meeting-notes-lookup" => "mn",
        "ticket-triage" => "tt",
        _ => "ce",
    };
    format!("{prefix}-{}", (i * 7919) % 1009)
}

/// Row `i` of a family, key for key in the order `vectors.py` writes it.
fn row(family: &str, i: usize) -> Value {
    let (id, system) = (item_id(family, i), system_text(family));
    match family {
        "meeting-notes-lookup" => json!({
            "id": id, "use_case": family, "split": "private",
            "prompt": {"system": system,
                       "user": format!("Notes {i}: Åsa Lindqvist owns action {i}. Who owns action {i}?")},
            "output_schema": {"answer": "string"},
            "gold": {"type": "action_owner", "value": "Åsa Lindqvist"},
            "aliases": ["Åsa", "A. Lindqvist"],
            "tokens": {"system": 20, "user": 480 + i % 300, "input_total": 500 + i % 300},
        }),
        "ticket-triage" => {
            let categories = ["bug", "feature", "improvement", "customer_support"];
            let priorities = ["p0", "p1", "p2", "p3"];
            json!({
                "id": id, "use_case": family, "split": "private",
                "prompt": {"system": system,
                           "user": format!("[TARGET] Ticket {i}: export fails for customer {}.", i % 17)},
                "output_schema": {"category": "enum", "priority": "enum"},
                "gold": {"category": categories[i % 4], "priority": priorities[(i / 4) % 4]},
                "aliases": [],
                "tokens": {"system": 30, "user": 50 + i % 51},
            })
        }
        _ => {
            let agreements = [
                "saas_subscription",
                "software_license",
                "support_maintenance",
                "technology_services",
            ];
            let day = 1 + i % 28;
            let even = i.is_multiple_of(2);
            json!({
                "id": id, "use_case": family, "split": "private",
                "prompt": {"system": system, "user": format!("Agreement {i}, effective 2026-03-{day:02}.")},
                "output_schema": {
                    "agreement_type": "enum", "effective_date": "string",
                    "initial_term_end_date": "string", "auto_renews": "bool",
                    "renewal_term_months": "int | null", "non_renewal_notice_days": "int | null",
                    "payment_terms_days": "int | null", "termination_for_convenience": "bool",
                    "termination_notice_days": "int | null",
                    "security_incident_notice_hours": "int | null",
                },
                "gold": {
                    "agreement_type": agreements[i % 4],
                    "effective_date": format!("2026-03-{day:02}"),
                    "initial_term_end_date": format!("2027-03-{day:02}"),
                    "auto_renews": even,
                    "renewal_term_months": if even { json!(12) } else { Value::Null },
                    "non_renewal_notice_days": if even { json!(30 + i % 5 * 15) } else { Value::Null },
                    "payment_terms_days": if i.is_multiple_of(7) { Value::Null } else { json!(30) },
                    "termination_for_convenience": i.is_multiple_of(3),
                    "termination_notice_days": if i.is_multiple_of(3) { json!(60) } else { Value::Null },
                    "security_incident_notice_hours": if i.is_multiple_of(5) { Value::Null } else { json!(72) },
                },
                "aliases": [],
                "tokens": {"system": 25, "user": 500 + i % 400},
            })
        }
    }
}

fn write(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", parent.display()));
    }
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// Writes the release as the reference runner's users hold it: the dataset files unchanged,
/// the three prompt templates in `prompt_templates/`.
fn write_release(dir: &Path) {
    let use_cases: serde_json::Map<String, Value> = FAMILIES
        .iter()
        .map(|f| (f.to_string(), json!({"private_items": count(f)})))
        .collect();
    let manifest = json!({
        "dataset_id": "reference-format-test", "status": "frozen", "freeze_ready": true,
        "use_cases": use_cases,
    });
    write(
        &dir.join("manifest.json"),
        format!("{manifest}\n").as_bytes(),
    );
    for family in FAMILIES {
        write(
            &dir.join("prompt_templates").join(template_file(family)),
            template_bytes(family).as_bytes(),
        );
        let text: String = (1..=count(family))
            .map(|i| format!("{}\n", row(family, i)))
            .collect();
        write(&dir.join(format!("{family}.jsonl")), text.as_bytes());
    }
}

fn expected() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reference_release/expected.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_reference_release_hashes_and_selects_as_cpython_does() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    write_release(dir.path());
    let want = expected();

    let release =
        dataset::load_release(dir.path(), "manifest.json").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(release.format, ReleaseFormat::Reference);
    // Every file hash first (a generator difference shows here), then the release hash.
    let want_files: std::collections::BTreeMap<String, String> = want["file_hashes"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(release.file_hashes, want_files);
    assert_eq!(
        release.release_hash,
        want["release_hash"].as_str().unwrap_or("")
    );
    assert_eq!(release.rows().len(), 203 + 211 + 207);
    let first = release.row(&item_id("meeting-notes-lookup", 1));
    assert!(
        matches!(first.map(|r| &r.gold), Some(Gold::MeetingNotes { answer }) if answer == "Åsa Lindqvist")
    );
    assert_eq!(
        first.map(|r| r.prompt_tokens),
        Some(501),
        "tokens.input_total"
    );
    assert_eq!(
        release
            .family_rows(Family::ContractTermsExtraction)
            .next()
            .map(|r| r.system.as_str()),
        Some("Extract the ten contract terms.\nReply with one JSON object."),
        "the CRLF template reads as Python's read_text reads it"
    );

    // The runner's path: the workflow loads it, the coordinator selects 200 per family.
    let runner_view = MicroSingleTask
        .load_dataset(dir.path(), "manifest.json")
        .unwrap_or_else(|e| panic!("{e}"));
    // The simulator's canned answers come from the same gold.
    let canned = dataset::canned::canned_answers(&runner_view).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(canned.len(), 621);
    assert!(
        canned
            .iter()
            .any(|c| c.correct == r#"{"answer":"Åsa Lindqvist"}"#)
    );
    let families: Vec<String> = FAMILIES.iter().map(|f| f.to_string()).collect();
    let chosen = selection::select(&runner_view, SLUG, SCHEDULE, &families, 200)
        .unwrap_or_else(|e| panic!("{e}"));
    chosen.require(200).unwrap_or_else(|e| panic!("{e}"));
    let mut total = 0;
    for family in FAMILIES {
        let got = &chosen.families[family];
        let want = &want["families"][family];
        let strings = |key: &str| -> Vec<String> {
            want[key]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        assert_eq!(
            got.seed,
            want["seed"].as_str().unwrap_or(""),
            "{family} seed"
        );
        assert_eq!(
            got.full_family_order,
            strings("full_family_order"),
            "{family} order"
        );
        assert_eq!(
            got.selected_prefix,
            strings("selected_prefix"),
            "{family} prefix"
        );
        assert_eq!(
            got.selected_item_hashes,
            strings("selected_item_hashes"),
            "{family} item hashes"
        );
        total += got.selected_prefix.len();
    }
    assert_eq!(total, 600);
}

/// A field of row `line` (1-based) of a family file, rewritten, and the loader's answer.
fn refusal_after(edit: impl FnOnce(&Path)) -> String {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    write_release(dir.path());
    edit(dir.path());
    match dataset::load_release(dir.path(), "manifest.json") {
        Ok(_) => panic!("the edited release loaded"),
        Err(e) => e.to_string(),
    }
}

fn edit_row(dir: &Path, family: &str, line: usize, change: impl FnOnce(&mut Value)) {
    let path = dir.join(format!("{family}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut value: Value = serde_json::from_str(&lines[line - 1]).unwrap_or_else(|e| panic!("{e}"));
    change(&mut value);
    lines[line - 1] = value.to_string();
    write(&path, format!("{}\n", lines.join("\n")).as_bytes());
}

/// One edit of a written release.
type Edit = Box<dyn FnOnce(&Path)>;

#[test]
fn the_reference_loader_refuses_what_the_reference_runner_refuses_naming_file_line_and_field() {
    let cases: Vec<(&str, Edit)> = vec![
        (
            "meeting-notes-lookup.jsonl:3: prompt.system: differs from the release's prompt template",
            Box::new(|d: &Path| {
                edit_row(d, "meeting-notes-lookup", 3, |v| {
                    v["prompt"]["system"] = json!("Be brief.")
                })
            }),
        ),
        (
            "meeting-notes-lookup.jsonl:4: gold.type: must be a non-empty string",
            Box::new(|d: &Path| {
                edit_row(d, "meeting-notes-lookup", 4, |v| {
                    v["gold"] = json!({"value": "x"});
                })
            }),
        ),
        (
            "meeting-notes-lookup.jsonl:5: tokens.input_total: 1001 outside the band 500..=1000",
            Box::new(|d: &Path| {
                edit_row(d, "meeting-notes-lookup", 5, |v| {
                    v["tokens"]["input_total"] = json!(1001)
                })
            }),
        ),
        (
            "ticket-triage.jsonl:2: tokens.user: 49 outside the band 50..=100",
            Box::new(|d: &Path| {
                edit_row(d, "ticket-triage", 2, |v| v["tokens"]["user"] = json!(49))
            }),
        ),
        (
            "ticket-triage.jsonl:6: output_schema: must be",
            Box::new(|d: &Path| {
                edit_row(d, "ticket-triage", 6, |v| {
                    v["output_schema"]["priority"] = json!("string")
                })
            }),
        ),
        (
            "ticket-triage.jsonl:7: split: must be \"private\"",
            Box::new(|d: &Path| edit_row(d, "ticket-triage", 7, |v| v["split"] = json!("public"))),
        ),
        (
            "contract-terms-extraction.jsonl:8: gold: fields must be in the order",
            Box::new(|d: &Path| {
                edit_row(d, "contract-terms-extraction", 8, |v| {
                    let gold = v["gold"].as_object().cloned().unwrap_or_default();
                    let mut reordered = serde_json::Map::new();
                    for (k, x) in gold.iter().rev() {
                        reordered.insert(k.clone(), x.clone());
                    }
                    v["gold"] = Value::Object(reordered);
                })
            }),
        ),
        (
            "contract-terms-extraction.jsonl:9: gold.auto_renews: must be a JSON boolean",
            Box::new(|d: &Path| {
                edit_row(d, "contract-terms-extraction", 9, |v| {
                    v["gold"]["auto_renews"] = json!(1)
                })
            }),
        ),
        (
            "ticket-triage.jsonl: private_items: manifest.json declares 212 private items, the file holds 211",
            Box::new(|d: &Path| {
                let path = d.join("manifest.json");
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                write(
                    &path,
                    text.replace("\"private_items\":211", "\"private_items\":212")
                        .as_bytes(),
                );
            }),
        ),
        (
            "ticket-triage.jsonl:10: id: duplicate id",
            Box::new(|d: &Path| {
                edit_row(d, "ticket-triage", 10, |v| {
                    v["id"] = json!(item_id("meeting-notes-lookup", 1))
                })
            }),
        ),
    ];
    for (want, edit) in cases {
        let got = refusal_after(edit);
        assert!(got.contains(want), "want {want:?} in:\n{got}");
    }
}

#[test]
fn a_layout_file_renames_the_hash_keys_and_so_changes_the_release_hash() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    write_release(dir.path());
    let default =
        dataset::load_release(dir.path(), "manifest.json").unwrap_or_else(|e| panic!("{e}"));
    let layout = json!({
        "manifest_key": "/srv/bench/data/manifest.json",
        "dataset_key_prefix": "/srv/bench/data",
        "template_key_prefix": "prompts",
        "available_items": 621,
    });
    write(
        &dir.path().join(dataset::reference::LAYOUT_FILE),
        layout.to_string().as_bytes(),
    );
    let renamed =
        dataset::load_release(dir.path(), "manifest.json").unwrap_or_else(|e| panic!("{e}"));
    assert!(
        renamed
            .file_hashes
            .contains_key("/srv/bench/data/ticket-triage.jsonl")
    );
    assert!(
        renamed
            .file_hashes
            .contains_key("prompts/ticket-triage.system.txt")
    );
    assert_ne!(renamed.release_hash, default.release_hash);
    // The same bytes under new keys: the hash is sha256 of the sorted `key:hash` lines.
    let mut lines: Vec<String> = renamed
        .file_hashes
        .iter()
        .map(|(k, v)| format!("{k}:{v}"))
        .collect();
    lines.sort();
    assert_eq!(
        renamed.release_hash,
        openbench_common::hash::sha256_hex(lines.join("\n").as_bytes())
    );

    write(
        &dir.path().join(dataset::reference::LAYOUT_FILE),
        json!({"available_items": 700}).to_string().as_bytes(),
    );
    let err = dataset::load_release(dir.path(), "manifest.json")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("the layout expects 700 items in all, the release holds 621"),
        "{err}"
    );
}
