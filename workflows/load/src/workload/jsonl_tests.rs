use super::*;
use std::io::Write;

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[test]
fn openai_messages_lines_are_read_with_their_token_counts() {
    let f = file(concat!(
        r#"{"id": 1, "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello world"}]}"#,
        "\n\n",
        r#"{"messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}, {"type": "text", "text": " world"}]}]}"#,
        "\r\n",
    ));
    let prompts = read_prompts(f.path(), JsonlFormat::OpenaiMessages).unwrap();
    assert_eq!(prompts.len(), 2);
    // "hello world" is 2 o200k tokens (common tokenizer test), "be brief" 2 ("be", " brief").
    assert_eq!(prompts[0].system.as_deref(), Some("be brief"));
    assert_eq!((prompts[0].line, prompts[0].input_tokens), (1, 4));
    assert_eq!(
        (prompts[1].line, prompts[1].user.as_str()),
        (3, "hello world")
    );
    assert_eq!(
        (prompts[1].system.clone(), prompts[1].input_tokens),
        (None, 2)
    );
}

#[test]
fn sharegpt_takes_the_first_human_turn_and_its_reply() {
    let f = file(concat!(
        r#"{"id": "a", "conversations": [{"from": "human", "value": "hello world"}, {"from": "gpt", "value": "hello"}, {"from": "human", "value": "more"}]}"#,
        "\n",
        r#"{"conversations": [{"from": "system", "value": "be brief"}, {"from": "human", "value": "hi"}]}"#,
        "\n",
    ));
    let prompts = read_prompts(f.path(), JsonlFormat::Sharegpt).unwrap();
    assert_eq!(prompts[0].user, "hello world");
    assert_eq!(prompts[0].reference_output_tokens, Some(1));
    assert_eq!(prompts[1].system.as_deref(), Some("be brief"));
    assert_eq!(prompts[1].reference_output_tokens, None);
}

#[test]
fn every_broken_line_is_named_at_once() {
    let mut text = String::new();
    text.push_str(r#"{"messages": [{"role": "user", "content": "fine"}]}"#);
    text.push('\n');
    text.push_str("{not json\n");
    text.push_str(r#"{"prompt": "x"}"#);
    text.push('\n');
    text.push_str(r#"{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}"#);
    text.push('\n');
    text.push_str(r#"{"messages": [{"role": "system", "content": "s"}]}"#);
    text.push('\n');
    text.push_str(r#"{"messages": [{"role": "user", "content": 7}]}"#);
    text.push('\n');
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(b"\xff\xfe\n");
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), &bytes).unwrap();
    let err = read_prompts(f.path(), JsonlFormat::OpenaiMessages).unwrap_err();
    let PromptFileError::Invalid { problems, .. } = &err else {
        panic!("{err}");
    };
    let lines: Vec<&str> = problems
        .iter()
        .map(|p| p.split(':').next().unwrap())
        .collect();
    assert_eq!(
        lines,
        ["line 2", "line 3", "line 4", "line 5", "line 6", "line 7"]
    );
    assert!(problems[0].starts_with("line 2: not JSON"), "{problems:?}");
    assert_eq!(problems[1], "line 3: messages: missing or not a list");
    assert!(problems[2].starts_with("line 4: messages[1].role: \"assistant\" not allowed here"));
    assert_eq!(problems[3], "line 5: messages: no user message");
    assert_eq!(
        problems[4],
        "line 6: messages[0].content: missing, or not text"
    );
    assert!(problems[5].starts_with("line 7: not UTF-8"));
    let shown = err.to_string();
    assert!(shown.contains(&f.path().display().to_string()) && shown.contains("6 broken line(s)"));
}

#[test]
fn sharegpt_problems_and_missing_or_empty_files() {
    let (prompts, problems) = parse_prompts(
        concat!(
            r#"{"conversations": [{"from": "gpt", "value": "hi"}]}"#,
            "\n",
            r#"{"conversations": [{"from": "bot", "value": "hi"}]}"#,
            "\n",
            r#"{"conversations": [{"from": "human", "value": "  "}]}"#,
            "\n",
            r#"{"conversations": []}"#,
        )
        .as_bytes(),
        JsonlFormat::Sharegpt,
    );
    assert!(prompts.is_empty());
    assert_eq!(
        problems,
        [
            "line 1: conversations[0].from: \"gpt\" before the first human turn",
            "line 2: conversations[0].from: unknown speaker \"bot\"",
            "line 3: conversations: the first human turn is empty",
            "line 4: conversations: no human turn",
        ]
    );
    let missing = std::path::Path::new("/nonexistent/prompts.jsonl");
    let err = read_prompts(missing, JsonlFormat::Sharegpt)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("cannot read prompt file /nonexistent/prompts.jsonl"),
        "{err}"
    );
    let empty = file("\n\n");
    let err = read_prompts(empty.path(), JsonlFormat::Sharegpt)
        .unwrap_err()
        .to_string();
    assert!(err.ends_with("holds no prompt"), "{err}");
}
