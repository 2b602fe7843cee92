//! The same stream, framed in each API dialect's own events (issue 39 item 4: the probe's oracle
//! tests run for every dialect). A [`Script`] is written once per test in dialect-free words
//! (start, reasoning, answer, finish, usage, done, an in-stream error, sleeps) and becomes, per
//! dialect, the bytes that dialect's servers send, together with the classification the probe
//! must give each event. The framings follow the recorded-format fixtures in
//! `probe/tests/fixtures/dialects`.
//!
//! Where a dialect has no such event, the script says so by leaving it out, never by faking it:
//! legacy completions send no role chunk; Anthropic and Responses carry usage on other events
//! (`message_start` + `message_delta`; `response.completed`), so `usage` writes nothing there;
//! a Responses stream's finish *is* its terminal event, so `done` writes nothing there.

use super::{Step, sse_head};
use openbench_common::record::{Classification, ErrorType};
use openbench_common::spec::Api;
use serde_json::{Value, json};

/// The model every scripted stream names.
pub const MODEL: &str = "zai-org/GLM-5.3-Flash";

/// Prompt, completion and cached token counts every scripted usage reports (Anthropic: input 15
/// + cache read 16 at `message_start`, output 12 at `message_delta`; total 43 where the dialect
/// reports one).
pub const USAGE: (u64, u64, u64) = (31, 12, 16);

/// How a scripted stream stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The model's own end (`stop`, `end_turn`, `response.completed`).
    End,
    /// The completion ceiling (`length`, `max_tokens`, `response.incomplete`).
    Length,
}

/// A response body in one dialect's framing and the classification of each event in it.
#[derive(Debug, Clone)]
pub struct Script {
    /// The dialect the events are framed in.
    pub api: Api,
    steps: Vec<Step>,
    classes: Vec<Classification>,
}

impl Script {
    /// A 200 SSE response in `api`'s framing, no event yet.
    pub fn new(api: Api) -> Script {
        Script {
            api,
            steps: vec![sse_head()],
            classes: Vec::new(),
        }
    }

    /// One event: `event: name` (when the dialect names its events) and `data: payload`, as one
    /// HTTP chunk, which the probe must classify as `class`.
    pub fn event(mut self, name: Option<&str>, payload: &str, class: Classification) -> Script {
        let text = match name {
            Some(name) => format!("event: {name}\ndata: {payload}\n\n"),
            None => format!("data: {payload}\n\n"),
        };
        self.steps.push(Step::Chunk(text.into_bytes()));
        self.classes.push(class);
        self
    }

    fn typed(self, payload: Value, class: Classification) -> Script {
        let name = payload["type"].as_str().map(str::to_string);
        self.event(name.as_deref(), &payload.to_string(), class)
    }

    fn data(self, payload: Value, class: Classification) -> Script {
        self.event(None, &payload.to_string(), class)
    }

    /// Any step (a sleep, a gate, a close, raw bytes), with no event of its own.
    pub fn step(mut self, step: Step) -> Script {
        self.steps.push(step);
        self
    }

    /// A pause of `ms` milliseconds.
    pub fn sleep(self, ms: u64) -> Script {
        self.step(Step::Sleep(ms))
    }

    /// The stream's opening: chat's role-only chunk; Anthropic's `message_start` (with the input
    /// usage) and its text block's `content_block_start`; Responses' `response.created`; nothing
    /// in legacy completions, which have no role chunk.
    pub fn start(self) -> Script {
        let (_, _, cached) = USAGE;
        match self.api {
            Api::OpenaiChat => self.data(
                json!({"id": "c1", "object": "chat.completion.chunk", "model": MODEL,
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": null},
                    "finish_reason": null}]}),
                Classification::Role,
            ),
            Api::AnthropicMessages => self
                .typed(
                    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                        "role": "assistant", "model": MODEL, "content": [], "stop_reason": null,
                        "usage": {"input_tokens": USAGE.0 - cached,
                            "cache_read_input_tokens": cached, "output_tokens": 1}}}),
                    Classification::Role,
                )
                .typed(
                    json!({"type": "content_block_start", "index": 0,
                        "content_block": {"type": "text", "text": ""}}),
                    Classification::Metadata,
                ),
            Api::OpenaiResponses => self.typed(
                json!({"type": "response.created", "response": {"id": "resp_1",
                    "object": "response", "status": "in_progress", "model": MODEL,
                    "output": []}}),
                Classification::Metadata,
            ),
            Api::OpenaiCompletions => self,
        }
    }

    /// Reasoning text: chat's `delta.reasoning_content`, Anthropic's `thinking_delta`,
    /// Responses' `response.reasoning_text.delta`; legacy completions have no reasoning in
    /// OpenAI's API, and this is the `reasoning_content` on the choice that servers splitting
    /// reasoning add (the reader takes it).
    pub fn reasoning(self, text: &str) -> Script {
        let class = Classification::Reasoning;
        match self.api {
            Api::OpenaiChat => self.data(
                json!({"model": MODEL, "choices": [{"index": 0,
                    "delta": {"reasoning_content": text}}]}),
                class,
            ),
            Api::AnthropicMessages => self.typed(
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": text}}),
                class,
            ),
            Api::OpenaiResponses => self.typed(
                json!({"type": "response.reasoning_text.delta", "item_id": "rs_1",
                    "output_index": 0, "content_index": 0, "delta": text}),
                class,
            ),
            Api::OpenaiCompletions => self.data(
                json!({"model": MODEL, "choices": [{"index": 0, "text": "",
                    "reasoning_content": text, "finish_reason": null}]}),
                class,
            ),
        }
    }

    /// Visible answer text.
    pub fn answer(self, text: &str) -> Script {
        let class = Classification::Answer;
        match self.api {
            Api::OpenaiChat => self.data(
                json!({"id": "c1", "model": MODEL, "choices": [{"index": 0,
                    "delta": {"content": text}, "finish_reason": null}]}),
                class,
            ),
            Api::AnthropicMessages => self.typed(
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": text}}),
                class,
            ),
            Api::OpenaiResponses => self.typed(
                json!({"type": "response.output_text.delta", "item_id": "msg_1",
                    "output_index": 1, "content_index": 0, "delta": text}),
                class,
            ),
            Api::OpenaiCompletions => self.data(
                json!({"id": "cmpl-1", "object": "text_completion", "model": MODEL,
                    "choices": [{"index": 0, "text": text, "logprobs": null,
                    "finish_reason": null}]}),
                class,
            ),
        }
    }

    /// The stop: chat's and completions' final `finish_reason`; Anthropic's
    /// `content_block_stop` then `message_delta` (stop reason and output usage); Responses'
    /// terminal `response.completed` (with the usage) or `response.incomplete`.
    pub fn finish(self, stop: Stop) -> Script {
        let (prompt, completion, cached) = USAGE;
        let reason = match stop {
            Stop::End => "stop",
            Stop::Length => "length",
        };
        match self.api {
            Api::OpenaiChat => self.data(
                json!({"id": "c1", "model": MODEL, "choices": [{"index": 0, "delta": {},
                    "finish_reason": reason}]}),
                Classification::Finish,
            ),
            Api::OpenaiCompletions => self.data(
                json!({"id": "cmpl-1", "model": MODEL, "choices": [{"index": 0, "text": "",
                    "finish_reason": reason}]}),
                Classification::Finish,
            ),
            Api::AnthropicMessages => {
                let stop_reason = if stop == Stop::End {
                    "end_turn"
                } else {
                    "max_tokens"
                };
                self.typed(
                    json!({"type": "content_block_stop", "index": 0}),
                    Classification::Metadata,
                )
                .typed(
                    json!({"type": "message_delta",
                        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                        "usage": {"output_tokens": completion}}),
                    Classification::Finish,
                )
            }
            Api::OpenaiResponses => {
                let usage = json!({"input_tokens": prompt,
                    "input_tokens_details": {"cached_tokens": cached},
                    "output_tokens": completion, "total_tokens": prompt + completion});
                let payload = match stop {
                    Stop::End => json!({"type": "response.completed", "response": {
                        "id": "resp_1", "status": "completed", "model": MODEL, "output": [],
                        "usage": usage}}),
                    Stop::Length => json!({"type": "response.incomplete", "response": {
                        "id": "resp_1", "status": "incomplete", "model": MODEL, "output": [],
                        "incomplete_details": {"reason": "max_output_tokens"},
                        "usage": usage}}),
                };
                self.typed(payload, Classification::Done)
            }
        }
    }

    /// The usage-only chunk of chat and completions (`include_usage`); the others report usage
    /// on their start and finish events, so nothing is written.
    pub fn usage(self) -> Script {
        let (prompt, completion, cached) = USAGE;
        match self.api {
            Api::OpenaiChat | Api::OpenaiCompletions => self.data(
                json!({"id": "c1", "model": MODEL, "choices": [], "usage": {
                    "prompt_tokens": prompt, "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                    "prompt_tokens_details": {"cached_tokens": cached}}}),
                Classification::Usage,
            ),
            Api::AnthropicMessages | Api::OpenaiResponses => self,
        }
    }

    /// llama.cpp's `timings` object on the last event written: it sends them on the usage chunk
    /// (chat, completions) and on `response.completed`; its Anthropic stream carries none, so
    /// nothing is added there.
    pub fn timings(mut self, timings: &Value) -> Script {
        if self.api == Api::AnthropicMessages {
            return self;
        }
        let Some(Step::Chunk(bytes)) = self.steps.last_mut() else {
            panic!("{}: no event to put timings on", self.api);
        };
        let text = String::from_utf8(bytes.clone()).unwrap();
        let (head, payload) = text.split_once("data: ").unwrap();
        let mut value: Value = serde_json::from_str(payload.trim_end()).unwrap();
        value["timings"] = timings.clone();
        *bytes = format!("{head}data: {value}\n\n").into_bytes();
        self
    }

    /// The end of the stream: `data: [DONE]`, Anthropic's `message_stop`; nothing for
    /// Responses, whose finish is its terminal event.
    pub fn done(self) -> Script {
        match self.api {
            Api::OpenaiChat | Api::OpenaiCompletions => {
                self.event(None, "[DONE]", Classification::Done)
            }
            Api::AnthropicMessages => {
                self.typed(json!({"type": "message_stop"}), Classification::Done)
            }
            Api::OpenaiResponses => self,
        }
    }

    /// A provider error inside the stream: chat's and completions' `error` object, Anthropic's
    /// `event: error` with an `api_error`, Responses' `error` event with code `server_error`.
    pub fn error(self, message: &str) -> Script {
        let class = Classification::Error;
        match self.api {
            Api::OpenaiChat | Api::OpenaiCompletions => self.data(
                json!({"error": {"message": message, "type": "server_error"}}),
                class,
            ),
            Api::AnthropicMessages => self.typed(
                json!({"type": "error", "error": {"type": "api_error", "message": message}}),
                class,
            ),
            Api::OpenaiResponses => self.typed(
                json!({"type": "error", "code": "server_error", "message": message}),
                class,
            ),
        }
    }

    /// The ending chunk (the connection stays open), and the steps to serve.
    pub fn end(self) -> Vec<Step> {
        self.step(Step::End).steps
    }

    /// The steps so far (the caller ends the body itself, with a close say).
    pub fn steps(&self) -> Vec<Step> {
        self.steps.clone()
    }

    /// The classification of each event, in order.
    pub fn classes(&self) -> Vec<Classification> {
        self.classes.clone()
    }

    /// The index of the first event of `class`.
    pub fn first(&self, class: Classification) -> usize {
        self.classes
            .iter()
            .position(|c| *c == class)
            .unwrap_or_else(|| panic!("{}: no {class:?} event", self.api))
    }
}

/// The error type and message prefix an in-stream [`Script::error`] ends with: chat's error
/// object is a `stream_error`; Anthropic's `api_error` (documented as HTTP 500) and Responses'
/// `server_error` are the class of their status, `http_5xx`. A named `event: error` is quoted
/// with its name.
pub fn error_ending(api: Api) -> (ErrorType, &'static str) {
    match api {
        Api::OpenaiChat | Api::OpenaiCompletions => (ErrorType::StreamError, ""),
        Api::AnthropicMessages | Api::OpenaiResponses => (ErrorType::Http5xx, "event: error: "),
    }
}
