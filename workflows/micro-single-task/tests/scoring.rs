#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Every scoring rule of METHODOLOGY §5 and its traps, on hand-written answers.

use openbench_micro_single_task::scoring::answers::score_stream;
use openbench_micro_single_task::scoring::{
    EvalClass, Family, GoldRef, is_schema_valid, normalize, score_answer,
};
use serde_json::{Value, json};

fn meeting(value: &str, aliases: &[&str]) -> GoldRef {
    GoldRef::MeetingNotes {
        value: value.into(),
        aliases: aliases.iter().map(|a| a.to_string()).collect(),
    }
}

fn ticket() -> GoldRef {
    GoldRef::TicketTriage {
        category: "bug".into(),
        priority: "p1".into(),
    }
}

fn contract_json() -> Value {
    json!({
        "agreement_type": "saas_subscription",
        "effective_date": "2027-02-28",
        "initial_term_end_date": "2028-02-29",
        "auto_renews": true,
        "renewal_term_months": 12,
        "non_renewal_notice_days": 30,
        "payment_terms_days": 45,
        "termination_for_convenience": false,
        "termination_notice_days": null,
        "security_incident_notice_hours": 72
    })
}

fn contract() -> GoldRef {
    GoldRef::from_json(Family::ContractTermsExtraction, &contract_json(), &[]).unwrap()
}

/// (classification, error_type) of an answer.
fn verdict(gold: &GoldRef, answer: &str) -> (EvalClass, Option<&'static str>) {
    let s = score_answer(gold, answer);
    (s.classification, s.error_type.map(|e| e.as_str()))
}

#[test]
fn normalisation_trims_collapses_and_case_folds() {
    assert_eq!(normalize("  Hello \t\n  World  "), "hello world");
    // Full case folding: ß → ss, ﬁ → fi, final sigma → σ.
    assert_eq!(normalize("STRASSE"), normalize("straße"));
    assert_eq!(normalize("ﬁle"), "file");
    assert_eq!(normalize("ΟΔΟΣ"), normalize("οδος"));
    // Non-breaking space and ideographic space are whitespace too.
    assert_eq!(normalize("a\u{a0}\u{3000}b"), "a b");
}

#[test]
fn meeting_notes_match_gold_or_alias_after_normalisation() {
    let gold = meeting("Maria Schmidt", &["M. Schmidt", "Straße 5"]);
    use EvalClass::*;
    assert_eq!(
        verdict(&gold, r#"{"answer": "Maria Schmidt"}"#),
        (ValidResult, None)
    );
    assert_eq!(
        verdict(&gold, r#"{"answer": "  maria   SCHMIDT "}"#),
        (ValidResult, None)
    );
    assert_eq!(
        verdict(&gold, r#"{"answer": "m. schmidt"}"#),
        (ValidResult, None)
    );
    assert_eq!(
        verdict(&gold, r#"{"answer": "STRASSE 5"}"#),
        (ValidResult, None)
    );
    // Internal whitespace matters only as "one space": "MariaSchmidt" is a different answer.
    assert_eq!(
        verdict(&gold, r#"{"answer": "MariaSchmidt"}"#),
        (IncorrectResult, None)
    );
    assert_eq!(
        verdict(&gold, r#"{"answer": "Maria"}"#),
        (IncorrectResult, None)
    );
    // Surrounding whitespace around the JSON value is allowed.
    assert_eq!(
        verdict(&gold, "\n {\"answer\": \"Maria Schmidt\"} \n"),
        (ValidResult, None)
    );
}

#[test]
fn meeting_notes_schema_is_exact() {
    let gold = meeting("42", &[]);
    use EvalClass::*;
    assert_eq!(
        verdict(&gold, r#"{"answer": 42}"#),
        (InvalidResult, Some("schema_type"))
    );
    assert_eq!(
        verdict(&gold, r#"{}"#),
        (InvalidResult, Some("schema_missing_key"))
    );
    assert_eq!(
        verdict(&gold, r#"{"answer": "42", "note": "x"}"#),
        (InvalidResult, Some("schema_extra_key"))
    );
    assert_eq!(
        verdict(&gold, r#"["42"]"#),
        (InvalidResult, Some("schema_type"))
    );
    assert_eq!(
        verdict(&gold, r#""42""#),
        (InvalidResult, Some("schema_type"))
    );
    assert_eq!(verdict(&gold, ""), (InvalidResult, Some("empty_answer")));
}

#[test]
fn strict_json_traps() {
    let gold = meeting("Oslo", &[]);
    use EvalClass::*;
    assert_eq!(
        verdict(&gold, "```json\n{\"answer\": \"Oslo\"}\n```"),
        (InvalidResult, Some("invalid_json"))
    );
    assert_eq!(
        verdict(&gold, r#"{"answer": "Oslo", "answer": "Oslo"}"#),
        (InvalidResult, Some("duplicate_key"))
    );
    assert_eq!(
        verdict(&gold, r#"{"answer": "Oslo"}{"answer": "Oslo"}"#),
        (InvalidResult, Some("trailing_value"))
    );
    assert_eq!(
        verdict(&gold, r#"{"answer": "Oslo"} trailing"#),
        (InvalidResult, Some("trailing_value"))
    );
    assert_eq!(
        verdict(
            &contract(),
            &contract_json().to_string().replace("72", "NaN")
        ),
        (InvalidResult, Some("invalid_json"))
    );
    assert_eq!(
        verdict(&gold, r#"{"answer": "Oslo",}"#),
        (InvalidResult, Some("invalid_json"))
    );
}

#[test]
fn ticket_triage_is_exact_and_lowercase() {
    let gold = ticket();
    use EvalClass::*;
    assert_eq!(
        verdict(&gold, r#"{"category": "bug", "priority": "p1"}"#),
        (ValidResult, None)
    );
    assert_eq!(
        verdict(&gold, r#"{"priority": "p1", "category": "bug"}"#),
        (ValidResult, None)
    );
    assert_eq!(
        verdict(&gold, r#"{"category": "Bug", "priority": "p1"}"#),
        (InvalidResult, Some("schema_enum"))
    );
    assert_eq!(
        verdict(&gold, r#"{"category": "bug", "priority": "P1"}"#),
        (InvalidResult, Some("schema_enum"))
    );
    assert_eq!(
        verdict(&gold, r#"{"category": "bug", "priority": 1}"#),
        (InvalidResult, Some("schema_type"))
    );
    assert_eq!(
        verdict(&gold, r#"{"category": "feature", "priority": "p1"}"#),
        (IncorrectResult, None)
    );
    let s = score_answer(&gold, r#"{"category": "feature", "priority": "p1"}"#);
    assert_eq!(s.field_correct, vec![false, true]);
    assert_eq!(s.correct_field_count(), 1);
    assert_eq!(
        verdict(&gold, r#"{"category": "bug"}"#),
        (InvalidResult, Some("schema_missing_key"))
    );
    assert_eq!(
        verdict(
            &gold,
            r#"{"category": "bug", "priority": "p1", "reason": ""}"#
        ),
        (InvalidResult, Some("schema_extra_key"))
    );
}

fn with(field: &str, value: Value) -> String {
    let mut v = contract_json();
    v[field] = value;
    v.to_string()
}

#[test]
fn contract_fields_are_typed() {
    let gold = contract();
    use EvalClass::*;
    assert_eq!(
        verdict(&gold, &contract_json().to_string()),
        (ValidResult, None)
    );
    // 30.0 is not a JSON integer.
    assert_eq!(
        verdict(&gold, &contract_json().to_string().replace(":45", ":45.0")),
        (InvalidResult, Some("schema_type"))
    );
    // 1 is not true.
    assert_eq!(
        verdict(&gold, &with("auto_renews", json!(1))),
        (InvalidResult, Some("schema_type"))
    );
    assert_eq!(
        verdict(&gold, &with("auto_renews", json!("true"))),
        (InvalidResult, Some("schema_type"))
    );
    // Dates must be real.
    assert_eq!(
        verdict(&gold, &with("effective_date", json!("2027-02-30"))),
        (InvalidResult, Some("invalid_date"))
    );
    assert_eq!(
        verdict(&gold, &with("effective_date", json!("2027-2-28"))),
        (InvalidResult, Some("invalid_date"))
    );
    assert_eq!(
        verdict(&gold, &with("agreement_type", json!("SaaS_subscription"))),
        (InvalidResult, Some("schema_enum"))
    );
    // null is allowed for the integer fields, and a wrong null is just wrong.
    assert_eq!(
        verdict(&gold, &with("renewal_term_months", Value::Null)),
        (IncorrectResult, None)
    );
    assert_eq!(
        verdict(&gold, &with("termination_notice_days", json!("30"))),
        (InvalidResult, Some("schema_type"))
    );
    let mut missing = contract_json();
    missing
        .as_object_mut()
        .unwrap()
        .remove("payment_terms_days");
    assert_eq!(
        verdict(&gold, &missing.to_string()),
        (InvalidResult, Some("schema_missing_key"))
    );
}

#[test]
fn contract_field_diagnostics_count_each_field() {
    let gold = contract();
    // Two wrong values (auto_renews, payment_terms_days): 8 of 10 fields right.
    let mut v = contract_json();
    v["auto_renews"] = json!(false);
    v["payment_terms_days"] = json!(30);
    let s = score_answer(&gold, &v.to_string());
    assert_eq!(s.classification, EvalClass::IncorrectResult);
    assert_eq!(s.correct_field_count(), 8);
    assert_eq!(
        s.field_correct,
        vec![true, true, true, false, true, true, false, true, true, true]
    );
    // A schema error in one field keeps the other fields' diagnostics: 9 of 10.
    let s = score_answer(&gold, &with("effective_date", json!("2027-02-30")));
    assert_eq!(s.correct_field_count(), 9);
    assert!(!s.schema_valid && !s.correct);
}

#[test]
fn schema_validity_is_the_smoke_criterion() {
    assert!(is_schema_valid(
        Family::TicketTriage,
        r#"{"category":"bug","priority":"p3"}"#
    ));
    assert!(!is_schema_valid(
        Family::TicketTriage,
        r#"{"category":"Bug","priority":"p3"}"#
    ));
    assert!(is_schema_valid(
        Family::MeetingNotesLookup,
        r#"{"answer":"anything"}"#
    ));
    assert!(!is_schema_valid(
        Family::MeetingNotesLookup,
        r#"{"answer":"a"} x"#
    ));
}

#[test]
fn score_stream_reports_bad_lines_and_scores_the_rest() {
    let input = [
        // 1: self-contained meeting-notes line, alias hit.
        r#"{"item_id":"mn-1","task_family":"meeting-notes-lookup","gold":{"value":"Oslo"},"aliases":["oslo, norway"],"answer_text":"{\"answer\":\"OSLO,  Norway\"}"}"#,
        // 2: not JSON.
        "{oops",
        // 3: self-contained ticket line, wrong priority.
        r#"{"item_id":"tt-1","task_family":"ticket-triage","gold":{"category":"bug","priority":"p1"},"answer_text":"{\"category\":\"bug\",\"priority\":\"p2\"}"}"#,
        // 4: gold looked up in the dataset: unknown item.
        r#"{"item_id":"nope","answer_text":"{}"}"#,
        // 5: dataset lookup that succeeds.
        r#"{"item_id":"tt-2","answer_text":"{\"category\":\"bug\",\"priority\":\"p1\"}"}"#,
    ]
    .join("\n");
    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut lookup = |id: &str| {
        if id == "tt-2" {
            Ok(ticket())
        } else {
            Err(format!("item_id {id:?} is not in the dataset"))
        }
    };
    let counts = score_stream(
        "answers.jsonl",
        input.as_bytes(),
        &mut out,
        &mut err,
        &mut lookup,
    )
    .unwrap();
    assert_eq!((counts.scored, counts.bad_lines), (3, 2));
    let err = String::from_utf8(err).unwrap();
    assert!(err.contains("answers.jsonl:2: not an answer line"), "{err}");
    assert!(err.contains("answers.jsonl:4: item_id \"nope\""), "{err}");
    let lines: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[0],
        json!({"item_id":"mn-1","task_family":"meeting-notes-lookup","classification":"valid_result",
               "error_type":null,"schema_valid":true,"correct":true,"correct_field_count":1,
               "field_correct":{"answer":true}})
    );
    assert_eq!(lines[1]["classification"], "incorrect_result");
    assert_eq!(
        lines[1]["field_correct"],
        json!({"category": true, "priority": false})
    );
    assert_eq!(lines[2]["classification"], "valid_result");
}

#[test]
fn workflow_smoke_criterion_needs_completed_non_empty_schema_valid() {
    use openbench_common::record::{Outcome, TerminalRecord};
    use openbench_common::rundir::{Plan, PlanKind, PlannedLane, PlannedRound};
    use openbench_common::schedule::{PairedRounds, Phase, Schedule};
    use openbench_common::workflow::{DatasetRelease, Workflow};
    use openbench_micro_single_task::MicroSingleTask;
    use openbench_micro_single_task::plan::rounds::DatasetPrompts;
    use std::collections::BTreeMap;
    use std::sync::Arc;
    // One round of one lane, its request `req-1`.
    let plan = Plan {
        plan_version: 1,
        kind: PlanKind::Smoke,
        attempt: 1,
        benchmark_slug: String::new(),
        schedule_version: String::new(),
        dataset_release_hash: String::new(),
        families: vec!["ticket-triage".into()],
        lanes: Vec::new(),
        items_per_family: 1,
        repeats: None,
        rounds: vec![PlannedRound {
            round_index: 0,
            round_id: "round-0".into(),
            task_family: "ticket-triage".into(),
            item_id: "tt-1".into(),
            item_hash: String::new(),
            requests: vec![PlannedLane {
                lane: "p".into(),
                provider: "p".into(),
                region: "local".into(),
                request_id: "req-1".into(),
            }]
            .into(),
        }],
    };
    let dataset = DatasetRelease {
        dir: "d".into(),
        release_hash: String::new(),
        file_hashes: BTreeMap::new(),
        items: BTreeMap::new(),
    };
    let schedule = Schedule {
        version: String::new(),
        attempt: 1,
        phases: vec![Phase::PairedRounds(PairedRounds {
            plan: Arc::new(plan),
            prompts: Arc::new(DatasetPrompts::new(Arc::new(dataset))),
        })],
    };
    let failures = |r: &TerminalRecord| {
        MicroSingleTask.smoke_failures(&schedule, &BTreeMap::from([("req-1".into(), r.clone())]))
    };
    let mut r = TerminalRecord::new(String::new(), Outcome::Completed);
    r.http_status = Some(200);
    r.task_family = "ticket-triage".into();
    r.answer_text = r#"{"category":"feature","priority":"p0"}"#.into();
    assert_eq!(failures(&r), Vec::<String>::new());
    r.answer_text = r#"{"category":"Feature","priority":"p0"}"#.into();
    assert_eq!(
        failures(&r),
        ["p × ticket-triage: answer is not schema-valid"]
    );
    r.answer_text = "   ".into();
    assert_eq!(failures(&r), ["p × ticket-triage: empty answer"]);
    r.answer_text = r#"{"category":"feature","priority":"p0"}"#.into();
    r.outcome = Outcome::StreamError;
    assert_eq!(failures(&r), ["p × ticket-triage: StreamError"]);
    r.outcome = Outcome::Completed;
    r.http_status = Some(503);
    assert_eq!(failures(&r), ["p × ticket-triage: HTTP status Some(503)"]);
    r.http_status = Some(200);
    r.task_family = "unknown".into();
    assert_eq!(
        failures(&r),
        ["p × ticket-triage: answer is not schema-valid"]
    );
    let none = MicroSingleTask.smoke_failures(&schedule, &BTreeMap::new());
    assert_eq!(none, ["p × ticket-triage: no terminal record"]);
}

#[test]
fn negative_zero_is_the_integer_zero_and_year_0000_is_no_date() {
    use EvalClass::*;
    let answer = contract_json()
        .to_string()
        .replace("\"renewal_term_months\":12", "\"renewal_term_months\":-0");
    assert!(answer.contains(":-0,"), "{answer}");
    // Against gold 12 it is a wrong integer, not a type error.
    assert_eq!(verdict(&contract(), &answer), (IncorrectResult, None));
    // Against gold 0 it is right.
    let mut gold_zero = contract_json();
    gold_zero["renewal_term_months"] = json!(0);
    let gold_zero = GoldRef::from_json(Family::ContractTermsExtraction, &gold_zero, &[]).unwrap();
    assert_eq!(verdict(&gold_zero, &answer), (ValidResult, None));
    // -0.0 has a fraction: not a JSON integer.
    let float = answer.replace(":-0,", ":-0.0,");
    assert_eq!(
        verdict(&gold_zero, &float),
        (InvalidResult, Some("schema_type"))
    );
    assert_eq!(
        verdict(&contract(), &with("effective_date", json!("0000-02-28"))),
        (InvalidResult, Some("invalid_date"))
    );
}

#[test]
fn score_stream_names_invalid_utf8_lines_and_goes_on() {
    let good = r#"{"item_id":"tt-1","task_family":"ticket-triage","gold":{"category":"bug","priority":"p1"},"answer_text":"{\"category\":\"bug\",\"priority\":\"p1\"}"}"#;
    let mut input = Vec::new();
    input.extend_from_slice(good.as_bytes());
    input.extend_from_slice(b"\n{\"item_id\":\"\xff\"}\r\n");
    input.extend_from_slice(good.as_bytes());
    input.extend_from_slice(b"\n");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut lookup = |id: &str| Err(format!("no dataset for {id}"));
    let counts = score_stream(
        "answers.jsonl",
        input.as_slice(),
        &mut out,
        &mut err,
        &mut lookup,
    )
    .unwrap();
    assert_eq!((counts.scored, counts.bad_lines), (2, 1));
    assert_eq!(
        String::from_utf8(err).unwrap(),
        "answers.jsonl:2: not valid UTF-8 (at byte 12)\n"
    );
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), 2);
}
