//! The API dialects the simulator serves besides OpenAI chat: reading the messages out of each
//! request body, and rendering a draft's events in each dialect's stream (the same draft, so
//! the same answers and times, whatever the dialect).
//!
//! `anthropic-messages` (`/v1/messages`): `message_start` and a `ping` at the headers, then
//! content blocks (`thinking_delta`, `text_delta`), `message_delta` with the stop reason and
//! usage, `message_stop`; errors as `event: error` with a typed error. `openai-responses`
//! (`/v1/responses`): `response.created` and `response.in_progress` at the headers, output
//! items and text deltas, then `response.completed` (or `response.incomplete` for a length
//! stop); errors as `response.failed`. `openai-completions` (`/v1/completions`): chat's chunks
//! with `choices[].text` (and `reasoning_content` on the choice) instead of a delta.

use crate::draft::{Draft, Payload};
use crate::quirk::Quirk;
use crate::sse::Label;
use openbench_common::spec::Api;
use serde_json::{Value, json};

/// One rendered event: its label, optional `event:` name and `data`.
pub type Rendered = (Label, Option<&'static str>, String);

/// The `(role, text)` messages of a request body in `api`'s dialect; an error names the field.
pub fn messages(
    api: Api,
    body: &Value,
) -> Result<Vec<(String, String)>, (&'static str, &'static str)> {
    let pairs = |field: &'static str| {
        body.get(field)
            .and_then(Value::as_array)
            .ok_or((field, "missing or not an array"))
            .map(|items| {
                items
                    .iter()
                    .flat_map(crate::agent::item_pairs)
                    .collect::<Vec<_>>()
            })
    };
    let with_system = |system: Option<&Value>, rest: Vec<(String, String)>| {
        let mut out: Vec<(String, String)> = system
            .and_then(Value::as_str)
            .map(|s| ("system".to_string(), s.to_string()))
            .into_iter()
            .collect();
        out.extend(rest);
        out
    };
    match api {
        Api::OpenaiChat => pairs("messages"),
        Api::AnthropicMessages => Ok(with_system(body.get("system"), pairs("messages")?)),
        Api::OpenaiResponses => {
            let input = match body.get("input") {
                Some(Value::String(text)) => vec![("user".to_string(), text.clone())],
                _ => pairs("input")?,
            };
            Ok(with_system(body.get("instructions"), input))
        }
        Api::OpenaiCompletions => body
            .get("prompt")
            .and_then(Value::as_str)
            .map(prompt_messages)
            .ok_or(("prompt", "missing or not a string")),
    }
}

/// The messages of a legacy prompt rendered as the probe renders it (the system prompt, then
/// `User: …` / `Assistant: …` turns joined by blank lines, ending in `Assistant:`).
fn prompt_messages(prompt: &str) -> Vec<(String, String)> {
    let prompt = prompt.strip_suffix("Assistant:").unwrap_or(prompt);
    let mut out: Vec<(String, String)> = Vec::new();
    for part in prompt.split("\n\n") {
        let turn = [("User: ", "user"), ("Assistant: ", "assistant")]
            .into_iter()
            .find_map(|(tag, role)| part.strip_prefix(tag).map(|text| (role, text)));
        match (turn, out.last_mut()) {
            (Some((role, text)), _) => out.push((role.to_string(), text.to_string())),
            (None, Some(last)) => {
                last.1.push_str("\n\n");
                last.1.push_str(part);
            }
            (None, None) => out.push(("system".to_string(), part.to_string())),
        }
    }
    if let Some(last) = out.last_mut() {
        // The blank line before the final `Assistant:` was kept as an empty part.
        while last.1.ends_with("\n\n") {
            last.1.truncate(last.1.len() - 2);
        }
    }
    out
}

/// What a dialect's renderer remembers between events: the open content block, counts and
/// sequence numbers.
#[derive(Debug, Default)]
pub struct Tracker {
    /// The open content block: `Some(true)` reasoning, `Some(false)` answer (or tool call).
    pub(crate) open: Option<bool>,
    /// Index of the open (or next) block.
    pub(crate) index: u32,
    /// Reasoning and answer pieces sent (one token each).
    pub(crate) tokens: u64,
    /// Responses `sequence_number`.
    sequence: u64,
    /// The tool call's arguments sent so far (empty until it starts).
    pub(crate) tool_arguments: String,
    /// The tool call has started.
    pub(crate) tool_started: bool,
}

/// The events a stream opens with at the headers, before any drafted event.
pub fn opening(api: Api, draft: &Draft, t: &mut Tracker) -> Vec<Rendered> {
    match api {
        Api::AnthropicMessages => vec![
            (
                Label::Role,
                Some("message_start"),
                json!({"type": "message_start", "message": {
                    "id": format!("msg_{}", draft.id_hex), "type": "message", "role": "assistant",
                    "model": draft.model, "content": [], "stop_reason": null, "stop_sequence": null,
                    "usage": anthropic_input_usage(draft)}})
                .to_string(),
            ),
            (
                Label::Comment,
                Some("ping"),
                json!({"type": "ping"}).to_string(),
            ),
        ],
        Api::OpenaiResponses => ["response.created", "response.in_progress"]
            .into_iter()
            .map(|name| {
                let data = json!({"type": name, "sequence_number": t.next(),
                    "response": response_object(draft, "in_progress", None)});
                (Label::Role, Some(name), data.to_string())
            })
            .collect(),
        Api::OpenaiChat | Api::OpenaiCompletions => Vec::new(),
    }
}

impl Tracker {
    /// The next Responses `sequence_number`.
    pub(crate) fn next(&mut self) -> u64 {
        let n = self.sequence;
        self.sequence += 1;
        n
    }
}

/// A keep-alive between events: Anthropic's `ping` event, or `None` for a comment line.
pub fn keep_alive(api: Api, draft: &Draft) -> Option<Rendered> {
    (api == Api::AnthropicMessages || draft.has(Quirk::Ping)).then(|| {
        (
            Label::Comment,
            Some("ping"),
            json!({"type": "ping"}).to_string(),
        )
    })
}

/// `message_start`'s usage. Anthropic's `input_tokens` leaves the cache out: with the prefix
/// cache on, the read part is `cache_read_input_tokens`, the part this request wrote
/// `cache_creation_input_tokens`, and `input_tokens` the rest of the prompt.
fn anthropic_input_usage(draft: &Draft) -> Value {
    let cache = draft.cache.unwrap_or_default();
    let input = draft
        .prompt_tokens
        .saturating_sub(cache.cached_tokens + cache.created_tokens);
    json!({"input_tokens": input, "cache_creation_input_tokens": cache.created_tokens,
           "cache_read_input_tokens": cache.cached_tokens, "output_tokens": 1})
}

/// The Responses `response` object with `status` and, when finished, its usage.
pub(crate) fn response_object(draft: &Draft, status: &str, usage: Option<(u64, u64)>) -> Value {
    let mut response = json!({"id": format!("resp_{}", draft.id_hex), "object": "response",
        "created_at": draft.created, "status": status, "model": draft.model, "output": []});
    if let Some((input, output)) = usage {
        let cached = draft.cache.map_or(0, |c| c.cached_tokens);
        response["usage"] = json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input + output});
    }
    response
}

/// The events of one drafted payload in Anthropic's stream.
pub fn anthropic(_draft: &Draft, payload: &Payload, t: &mut Tracker) -> Vec<Rendered> {
    let message = "upstream model failure (simulated)";
    let mut out = Vec::new();
    match payload {
        Payload::Reasoning(piece) | Payload::Answer(piece) => {
            let thinking = matches!(payload, Payload::Reasoning(_));
            open_block(t, thinking, &mut out);
            t.tokens += 1;
            let (label, delta) = if thinking {
                (
                    Label::Reasoning,
                    json!({"type": "thinking_delta", "thinking": piece}),
                )
            } else {
                (Label::Answer, json!({"type": "text_delta", "text": piece}))
            };
            let data = json!({"type": "content_block_delta", "index": t.index, "delta": delta});
            out.push((label, Some("content_block_delta"), data.to_string()));
        }
        Payload::Finish(reason) => {
            close_block(t, &mut out);
            let stop = if *reason == "length" {
                "max_tokens"
            } else {
                "end_turn"
            };
            let data = json!({"type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": t.tokens}});
            out.push((Label::Finish, Some("message_delta"), data.to_string()));
        }
        Payload::Done => out.push((
            Label::Done,
            Some("message_stop"),
            json!({"type": "message_stop"}).to_string(),
        )),
        Payload::Role | Payload::Usage { .. } => {}
        Payload::Fault(Quirk::NonJsonData) => out.push(garbage()),
        Payload::Fault(quirk) => {
            let (kind, text) = if *quirk == Quirk::OverloadedError {
                ("overloaded_error", "Overloaded (simulated)")
            } else {
                ("api_error", message)
            };
            let data = json!({"type": "error", "error": {"type": kind, "message": text}});
            out.push((Label::Error, Some("error"), data.to_string()));
        }
    }
    out
}

fn open_block(t: &mut Tracker, thinking: bool, out: &mut Vec<Rendered>) {
    if t.open == Some(thinking) {
        return;
    }
    close_block(t, out);
    let block = if thinking {
        json!({"type": "thinking", "thinking": ""})
    } else {
        json!({"type": "text", "text": ""})
    };
    let data = json!({"type": "content_block_start", "index": t.index, "content_block": block});
    out.push((Label::Role, Some("content_block_start"), data.to_string()));
    t.open = Some(thinking);
}

/// Closes the open content block (`content_block_stop`), if any.
pub(crate) fn close_block(t: &mut Tracker, out: &mut Vec<Rendered>) {
    if t.open.take().is_some() {
        let data = json!({"type": "content_block_stop", "index": t.index});
        out.push((Label::Role, Some("content_block_stop"), data.to_string()));
        t.index += 1;
    }
}

fn garbage() -> Rendered {
    (
        Label::Garbage,
        None,
        "upstream connect error or disconnect/reset before headers".to_string(),
    )
}

/// The events of one drafted payload in the Responses stream.
pub fn responses(draft: &Draft, payload: &Payload, t: &mut Tracker) -> Vec<Rendered> {
    let mut out = Vec::new();
    let item = |t: &Tracker| format!("item_{}_{}", draft.id_hex, t.index);
    match payload {
        Payload::Reasoning(piece) | Payload::Answer(piece) => {
            let thinking = matches!(payload, Payload::Reasoning(_));
            if t.open != Some(thinking) {
                if t.open.take().is_some() {
                    t.index += 1;
                }
                let (kind, name) = if thinking {
                    ("reasoning", "response.output_item.added")
                } else {
                    ("message", "response.output_item.added")
                };
                let data = json!({"type": name, "sequence_number": t.next(), "output_index": t.index,
                    "item": {"id": item(t), "type": kind, "status": "in_progress"}});
                out.push((
                    Label::Role,
                    Some("response.output_item.added"),
                    data.to_string(),
                ));
                if !thinking {
                    let data = json!({"type": "response.content_part.added", "sequence_number": t.next(),
                        "item_id": item(t), "output_index": t.index, "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": []}});
                    out.push((
                        Label::Role,
                        Some("response.content_part.added"),
                        data.to_string(),
                    ));
                }
                t.open = Some(thinking);
            }
            t.tokens += 1;
            let (label, name) = if thinking {
                (Label::Reasoning, "response.reasoning_text.delta")
            } else {
                (Label::Answer, "response.output_text.delta")
            };
            let data = json!({"type": name, "sequence_number": t.next(), "item_id": item(t),
                "output_index": t.index, "content_index": 0, "delta": piece});
            out.push((label, Some(name), data.to_string()));
        }
        Payload::Finish(reason) => {
            if t.open == Some(false) {
                let data = json!({"type": "response.output_text.done", "sequence_number": t.next(),
                    "item_id": item(t), "output_index": t.index, "content_index": 0});
                out.push((
                    Label::Role,
                    Some("response.output_text.done"),
                    data.to_string(),
                ));
            }
            let usage = Some((draft.prompt_tokens, t.tokens));
            let (name, mut response) = if *reason == "length" {
                (
                    "response.incomplete",
                    response_object(draft, "incomplete", usage),
                )
            } else {
                (
                    "response.completed",
                    response_object(draft, "completed", usage),
                )
            };
            if *reason == "length" {
                response["incomplete_details"] = json!({"reason": "max_output_tokens"});
            }
            let data = json!({"type": name, "sequence_number": t.next(), "response": response});
            out.push((Label::Done, Some(name), data.to_string()));
        }
        Payload::Role | Payload::Usage { .. } | Payload::Done => {}
        Payload::Fault(Quirk::NonJsonData) => out.push(garbage()),
        Payload::Fault(quirk) => {
            let (code, text) = if *quirk == Quirk::OverloadedError {
                (
                    "server_is_overloaded",
                    "The server is overloaded (simulated)",
                )
            } else {
                ("server_error", "upstream model failure (simulated)")
            };
            let mut response = response_object(draft, "failed", None);
            response["error"] = json!({"code": code, "message": text});
            let data = json!({"type": "response.failed", "sequence_number": t.next(), "response": response});
            out.push((Label::Error, Some("response.failed"), data.to_string()));
        }
    }
    out
}

/// A legacy completions chunk: `text` (and `reasoning_content` when reasoning) on the choice.
pub fn completion_chunk(
    draft: &Draft,
    text: &str,
    reasoning: Option<&str>,
    finish_reason: Option<&str>,
) -> String {
    let mut choice =
        json!({"index": 0, "text": text, "logprobs": null, "finish_reason": finish_reason});
    if let Some(reasoning) = reasoning {
        choice["reasoning_content"] = json!(reasoning);
    }
    json!({"id": format!("cmpl-{}", draft.id_hex), "object": "text_completion",
        "created": draft.created, "model": draft.model, "choices": [choice]})
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_prompt_reads_back_as_its_messages() {
        let prompt = "Be brief.\n\nJSON only.\n\nUser: What is 2+2?\n\nShow work.\n\nAssistant:";
        assert_eq!(
            prompt_messages(prompt),
            vec![
                ("system".to_string(), "Be brief.\n\nJSON only.".to_string()),
                ("user".to_string(), "What is 2+2?\n\nShow work.".to_string()),
            ]
        );
    }
}
