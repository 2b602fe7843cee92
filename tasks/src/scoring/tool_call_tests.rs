use super::*;
use openbench_common::record::Outcome;
use openbench_common::tool::ToolCall;

fn gold() -> GoldRef {
    GoldRef::TicketTriage {
        category: "bug".into(),
        priority: "p1".into(),
    }
}

/// A completed ticket-triage record that offered `triage` and carried `calls`.
fn record(calls: &[(&str, &str)], error: Option<ToolCallError>) -> TerminalRecord {
    let mut r = TerminalRecord::new(String::new(), Outcome::Completed);
    r.task_family = "ticket-triage".into();
    r.offered_tool = Some("triage".into());
    r.tool_call_error = error;
    r.tool_calls = calls
        .iter()
        .map(|(name, arguments)| ToolCall {
            id: "call_1".into(),
            name: (*name).into(),
            arguments: (*arguments).into(),
        })
        .collect();
    r
}

fn verdict(r: &TerminalRecord) -> (EvalClass, Option<EvalErrorType>) {
    let s = score_record(&gold(), r);
    (s.classification, s.error_type)
}

const RIGHT: &str = r#"{"category": "bug", "priority": "p1"}"#;

#[test]
fn the_one_call_of_the_offered_tool_is_scored_as_the_answer() {
    let r = record(&[("triage", RIGHT)], None);
    assert_eq!(verdict(&r), (EvalClass::ValidResult, None));
    let wrong = record(
        &[("triage", r#"{"category": "bug", "priority": "p2"}"#)],
        None,
    );
    assert_eq!(verdict(&wrong), (EvalClass::IncorrectResult, None));
    // Typed: "p1" as a number is a schema error, not a near miss.
    let typed = record(&[("triage", r#"{"category": "bug", "priority": 1}"#)], None);
    assert_eq!(
        verdict(&typed),
        (EvalClass::InvalidResult, Some(EvalErrorType::SchemaType))
    );
    let extra = record(
        &[(
            "triage",
            r#"{"category": "bug", "priority": "p1", "why": "x"}"#,
        )],
        None,
    );
    assert_eq!(
        verdict(&extra),
        (
            EvalClass::InvalidResult,
            Some(EvalErrorType::SchemaExtraKey)
        )
    );
}

#[test]
fn a_missing_wrong_extra_or_broken_call_is_its_own_invalid_class() {
    let invalid = |e| (EvalClass::InvalidResult, Some(e));
    let mut text = record(&[], None);
    text.answer_text = RIGHT.into();
    assert_eq!(verdict(&text), invalid(EvalErrorType::NoToolCall));
    assert_eq!(
        verdict(&record(&[("answer_question", RIGHT)], None)),
        invalid(EvalErrorType::WrongToolCall)
    );
    assert_eq!(
        verdict(&record(&[("triage", RIGHT), ("triage", RIGHT)], None)),
        invalid(EvalErrorType::WrongToolCall)
    );
    assert_eq!(
        verdict(&record(
            &[("triage", "{'category': 'bug'}")],
            Some(ToolCallError::MalformedToolCall)
        )),
        invalid(EvalErrorType::MalformedToolCall)
    );
    assert_eq!(
        verdict(&record(
            &[("triage", r#"{"category": "b"#)],
            Some(ToolCallError::TruncatedToolCall)
        )),
        invalid(EvalErrorType::TruncatedToolCall)
    );
}

#[test]
fn without_an_offered_tool_the_answer_text_is_scored() {
    let mut r = record(&[], None);
    r.offered_tool = None;
    r.answer_text = RIGHT.into();
    assert_eq!(verdict(&r), (EvalClass::ValidResult, None));
}

#[test]
fn ticket_triage_is_a_triage_call_of_category_and_priority() {
    let tool = tool_for(Family::TicketTriage);
    assert_eq!(tool.name, "triage");
    assert_eq!(tool.choice, ToolChoice::Forced);
    assert_eq!(tool.parameters["required"], json!(["category", "priority"]));
    assert_eq!(
        tool.parameters["properties"]["priority"]["enum"],
        json!(["p0", "p1", "p2", "p3"])
    );
}
