//! Prompt files, one JSON object per line, in the two common shapes:
//!
//! - **OpenAI messages**: `{"messages": [{"role": "system", "content": …}, {"role": "user",
//!   "content": …}]}`: an optional system message first, then exactly one user message (the
//!   request contract sends one system and one user message). `content` is a string or a list of
//!   `{"type": "text", "text": …}` blocks.
//! - **ShareGPT**: `{"conversations": [{"from": "human", "value": …}, {"from": "gpt", "value":
//!   …}, …]}`: an optional leading `system` turn, the first `human` (or `user`) turn is the
//!   prompt, and the reply after it, when there is one, is kept as the reference output.
//!
//! Other fields on a line are ignored (datasets carry ids and metadata). Blank lines are skipped.
//! Every broken line is reported, each with its 1-based line number, all at once.

use super::Prompt;
use crate::spec::JsonlFormat;
use openbench_common::input_file;
use openbench_common::tokenizer::count_tokens;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One prompt read from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePrompt {
    /// 1-based line number.
    pub line: usize,
    /// System message, when given.
    pub system: Option<String>,
    /// User message.
    pub user: String,
    /// o200k tokens of the system and user texts.
    pub input_tokens: u64,
    /// o200k tokens of the reference reply (ShareGPT, when the conversation has one).
    pub reference_output_tokens: Option<u64>,
}

impl FilePrompt {
    /// The request prompt of this line, asking for `max_output_tokens` (drawn with
    /// [`super::output_tokens`]).
    pub fn to_prompt(&self, max_output_tokens: u32) -> Prompt {
        Prompt {
            system: self.system.clone(),
            user: self.user.clone(),
            input_tokens: self.input_tokens,
            max_output_tokens,
        }
    }
}

/// Why a prompt file was refused.
#[derive(Debug, thiserror::Error)]
pub enum PromptFileError {
    /// The file could not be read.
    #[error("cannot read prompt file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// One or more lines are broken; every one is listed.
    #[error("prompt file {path} has {} broken line(s):\n  - {}", problems.len(), problems.join("\n  - "))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// `line N: what is wrong`, one per problem.
        problems: Vec<String>,
    },
    /// The file holds no prompt at all.
    #[error("prompt file {path} holds no prompt")]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// The bytes of a prompt file: only a regular file of at most
/// [`input_file::PROMPT_FILE_BYTES`] (a FIFO, a device or a larger file is refused at once).
pub fn read_prompt_file(path: &Path) -> std::io::Result<Vec<u8>> {
    input_file::read_regular(path, input_file::PROMPT_FILE_BYTES)
}

/// Reads every prompt of `path` in `format`, refusing the file if any line is broken.
pub fn read_prompts(path: &Path, format: JsonlFormat) -> Result<Vec<FilePrompt>, PromptFileError> {
    let bytes = read_prompt_file(path).map_err(|source| PromptFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let (prompts, problems) = parse_prompts(&bytes, format);
    if !problems.is_empty() {
        return Err(PromptFileError::Invalid {
            path: path.to_path_buf(),
            problems,
        });
    }
    if prompts.is_empty() {
        return Err(PromptFileError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(prompts)
}

/// The prompts of a file's bytes, and one `line N: …` problem per broken line.
pub fn parse_prompts(bytes: &[u8], format: JsonlFormat) -> (Vec<FilePrompt>, Vec<String>) {
    let mut prompts = Vec::new();
    let mut problems = Vec::new();
    for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let line = i + 1;
        if raw.len() as u64 > input_file::PROMPT_BYTES {
            problems.push(format!(
                "line {line}: {} bytes, over the {}-byte limit for one prompt",
                raw.len(),
                input_file::PROMPT_BYTES
            ));
            continue;
        }
        let text = match std::str::from_utf8(raw) {
            Ok(t) => t.strip_prefix('\u{feff}').unwrap_or(t).trim(),
            Err(e) => {
                problems.push(format!("line {line}: not UTF-8 ({e})"));
                continue;
            }
        };
        if text.is_empty() {
            continue;
        }
        let parsed = serde_json::from_str::<Value>(text)
            .map_err(|e| format!("not JSON ({e})"))
            .and_then(|value| match format {
                JsonlFormat::OpenaiMessages => openai_messages(&value),
                JsonlFormat::Sharegpt => sharegpt(&value),
            });
        match parsed {
            Ok((system, user, reference)) => {
                let input_tokens = count_tokens(&user) + system.as_deref().map_or(0, count_tokens);
                prompts.push(FilePrompt {
                    line,
                    system,
                    user,
                    input_tokens,
                    reference_output_tokens: reference.as_deref().map(count_tokens),
                });
            }
            Err(why) => problems.push(format!("line {line}: {why}")),
        }
    }
    (prompts, problems)
}

/// (system, user, reference reply) of one line.
type Parsed = (Option<String>, String, Option<String>);

fn openai_messages(value: &Value) -> Result<Parsed, String> {
    let messages = value
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("messages: missing or not a list")?;
    let mut system = None;
    let mut user = None;
    for (i, m) in messages.iter().enumerate() {
        let role = m
            .get("role")
            .and_then(Value::as_str)
            .ok_or(format!("messages[{i}].role: missing or not a string"))?;
        let content = m
            .get("content")
            .and_then(text_of)
            .ok_or(format!("messages[{i}].content: missing, or not text"))?;
        match (role, i, &user) {
            ("system", 0, _) => system = Some(content),
            ("user", _, None) => user = Some(content),
            _ => {
                return Err(format!(
                    "messages[{i}].role: {role:?} not allowed here: one optional system message, then one user message"
                ));
            }
        }
    }
    let user = user.ok_or("messages: no user message")?;
    if user.trim().is_empty() {
        return Err("messages: the user message is empty".into());
    }
    Ok((system, user, None))
}

/// A message `content`: a string, or the concatenated `text` of a list of text blocks.
fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Option<Vec<&str>>>()
            .map(|parts| parts.concat()),
        _ => None,
    }
}

fn sharegpt(value: &Value) -> Result<Parsed, String> {
    let turns = value
        .get("conversations")
        .and_then(Value::as_array)
        .ok_or("conversations: missing or not a list")?;
    let mut system = None;
    let mut user: Option<String> = None;
    for (i, turn) in turns.iter().enumerate() {
        let from = turn
            .get("from")
            .and_then(Value::as_str)
            .ok_or(format!("conversations[{i}].from: missing or not a string"))?;
        let text = turn
            .get("value")
            .and_then(Value::as_str)
            .ok_or(format!("conversations[{i}].value: missing or not a string"))?;
        match (from, &user) {
            ("system", None) if i == 0 => system = Some(text.to_string()),
            ("human" | "user", None) => user = Some(text.to_string()),
            ("gpt" | "assistant" | "chatgpt", Some(u)) => {
                return finish(system, u.clone(), Some(text.to_string()));
            }
            ("human" | "user" | "gpt" | "assistant" | "chatgpt" | "system", _) => {
                if user.is_some() {
                    break;
                }
                return Err(format!(
                    "conversations[{i}].from: {from:?} before the first human turn"
                ));
            }
            _ => return Err(format!("conversations[{i}].from: unknown speaker {from:?}")),
        }
    }
    match user {
        Some(u) => finish(system, u, None),
        None => Err("conversations: no human turn".into()),
    }
}

fn finish(system: Option<String>, user: String, reply: Option<String>) -> Result<Parsed, String> {
    if user.trim().is_empty() {
        return Err("conversations: the first human turn is empty".into());
    }
    Ok((system, user, reply))
}

#[cfg(test)]
#[path = "jsonl_tests.rs"]
mod tests;
