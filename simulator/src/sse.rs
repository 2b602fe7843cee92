//! Chunk JSON in the OpenAI streaming shape, and SSE framing of it (LF or CRLF, one or two
//! `data:` lines, comments, named events).

use serde::Serialize;
use serde_json::{Value, json};

/// What one write (or event) carries, as recorded in the write log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// `: keep-alive` comment.
    Comment,
    /// Role-only chunk.
    Role,
    /// Reasoning text.
    Reasoning,
    /// Answer text.
    Answer,
    /// `finish_reason` chunk.
    Finish,
    /// Usage-only chunk.
    Usage,
    /// `data: [DONE]`.
    Done,
    /// An error event or error object.
    Error,
    /// A non-JSON payload.
    Garbage,
    /// Several events in one write (`batched-events`).
    Batch,
    /// Part of an event (`one-byte-writes`, `utf8-split`).
    Fragment,
}

/// One streaming chunk's JSON, in the key order of the OpenAI streaming shape.
#[derive(Serialize)]
struct ChunkJson<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [ChoiceJson<'a>; 1],
}

/// A chunk's one choice.
#[derive(Serialize)]
struct ChoiceJson<'a> {
    index: u32,
    delta: &'a Value,
    finish_reason: Option<&'a str>,
}

/// Builds chunk JSON for one response: same id, created time and model on every chunk.
#[derive(Debug, Clone)]
pub struct Chunker {
    /// `chatcmpl-…` id.
    pub id: String,
    /// `created`, a fixed epoch second derived from the request seed.
    pub created: u64,
    /// The model echoed.
    pub model: String,
}

impl Chunker {
    /// A chunk with one choice. Written from borrowed fields, not built as a `json!` tree (a
    /// map and copies of the id and model for every write of every stream); the bytes are the
    /// same (`a_chunk_is_the_json_tree_it_replaced`).
    pub fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> String {
        let chunk = ChunkJson {
            id: &self.id,
            object: "chat.completion.chunk",
            created: self.created,
            model: &self.model,
            choices: [ChoiceJson {
                index: 0,
                delta: &delta,
                finish_reason,
            }],
        };
        serde_json::to_string(&chunk).unwrap_or_default()
    }

    /// A usage-only chunk (`choices: []`), with `prompt_tokens_details.cached_tokens` when the
    /// route's prefix cache reports one.
    pub fn usage(
        &self,
        prompt_tokens: u64,
        completion_tokens: u64,
        cached_tokens: Option<u64>,
    ) -> String {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        });
        if let Some(cached) = cached_tokens {
            chunk["usage"]["prompt_tokens_details"] = json!({"cached_tokens": cached});
        }
        chunk.to_string()
    }
}

/// Line-level framing options.
#[derive(Debug, Clone, Copy, Default)]
pub struct Framing {
    /// End lines with `\r\n`.
    pub crlf: bool,
    /// Spread a JSON payload over two `data:` lines (split after its first comma).
    pub multiline: bool,
}

impl Framing {
    fn eol(self) -> &'static str {
        if self.crlf { "\r\n" } else { "\n" }
    }

    /// One event: optional `event:` line, `data:` line(s), blank line.
    pub fn event(self, event: Option<&str>, data: &str) -> Vec<u8> {
        let eol = self.eol();
        let mut out = String::new();
        if let Some(name) = event {
            out.push_str(&format!("event: {name}{eol}"));
        }
        // JSON tolerates a newline between tokens; our first comma always follows the first value.
        match data.split_once(',') {
            Some((head, tail)) if self.multiline && data.starts_with('{') => {
                out.push_str(&format!("data: {head}{eol}data: ,{tail}{eol}"));
            }
            _ => out.push_str(&format!("data: {data}{eol}")),
        }
        out.push_str(eol);
        out.into_bytes()
    }

    /// A `: keep-alive` comment event.
    pub fn comment(self) -> Vec<u8> {
        let eol = self.eol();
        format!(": keep-alive{eol}{eol}").into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_variants_are_exact() {
        let c = Chunker {
            id: "chatcmpl-1".into(),
            created: 5,
            model: "m".into(),
        };
        let data = c.chunk(json!({"content": "hi"}), None);
        assert_eq!(
            data,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#
        );
        let plain = Framing::default();
        assert_eq!(plain.event(None, "[DONE]"), b"data: [DONE]\n\n");
        let crlf = Framing {
            crlf: true,
            multiline: true,
        };
        assert_eq!(
            String::from_utf8(crlf.event(Some("error"), r#"{"a":1,"b":2}"#)).unwrap(),
            "event: error\r\ndata: {\"a\":1\r\ndata: ,\"b\":2}\r\n\r\n"
        );
        assert_eq!(crlf.comment(), b": keep-alive\r\n\r\n");
        assert_eq!(
            c.usage(3, 4, None),
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#
        );
    }

    #[test]
    fn a_chunk_is_the_json_tree_it_replaced() {
        let c = Chunker {
            id: "chatcmpl-\"q\"\u{1}é".into(),
            created: u64::MAX,
            model: "zai-org/GLM-5.3-Flash \\ ✓".into(),
        };
        let deltas = [
            json!({"role": "assistant"}),
            json!({"content": "{\"answer\": \"x\"}\n"}),
            json!({"reasoning_content": "é", "content": null}),
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
            json!({}),
        ];
        for delta in deltas {
            for finish in [None, Some("stop"), Some("tool_calls")] {
                let tree = json!({
                    "id": c.id,
                    "object": "chat.completion.chunk",
                    "created": c.created,
                    "model": c.model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                })
                .to_string();
                assert_eq!(c.chunk(delta.clone(), finish), tree);
            }
        }
    }
}
