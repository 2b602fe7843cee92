//! The fast path of [`super::classify_event`]: the shape nearly every streamed chunk has
//! (`chat.completion.chunk`: id, object, created, model, one choice with a delta of role,
//! content or reasoning text, and a finish reason), read into borrowed typed fields instead of a
//! `serde_json::Value` tree (the `Value` path allocated every key and string and hashed every key
//! into an ordered map; it was the largest item of our own code in the pipeline's profile).
//!
//! It accepts a payload only when every key, at every level, is one it names and every value has
//! the one strict type it expects (strings parsed and unescaped in full, integers in range,
//! `null` where only `null` is expected). So whatever it accepts the `Value` path parses too, and
//! it gives the same [`Chunk`]: `classify_tests.rs` and the `chunk_classifier` fuzz target compare
//! the two paths. Anything else (errors, usage, timings, content blocks, `reasoning_details`,
//! unknown or repeated keys, other types) returns `None` and takes the `Value` path.

use super::{Chunk, DeltaShape};
use serde::Deserialize;
use std::borrow::Cow;

/// A string, borrowed from the payload unless it had escapes.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

impl Text<'_> {
    fn non_empty(&self) -> Option<&str> {
        Some(self.0.as_ref()).filter(|t| !t.is_empty())
    }
}

/// The top level. Fields read only to check their type are kept by name and never used.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Common<'a> {
    #[serde(borrow)]
    id: Option<Text<'a>>,
    #[serde(borrow)]
    object: Option<Text<'a>>,
    created: Option<u64>,
    #[serde(borrow)]
    model: Option<Text<'a>>,
    #[serde(borrow)]
    system_fingerprint: Option<Text<'a>>,
    #[serde(borrow)]
    service_tier: Option<Text<'a>>,
    /// Only `null`: a usage object takes the `Value` path.
    usage: Option<()>,
    #[serde(borrow)]
    choices: Option<FirstChoice<'a>>,
}

/// A `choices` array: every element read as a [`Choice`] (so it is accepted exactly when a
/// `Vec<Choice>` would be), only the first kept (the only one classified). No vector is
/// allocated: this runs once per streamed event.
struct FirstChoice<'a>(Option<Choice<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Elements<'a>(std::marker::PhantomData<Choice<'a>>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Elements<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<S: serde::de::SeqAccess<'de>>(
                self,
                mut seq: S,
            ) -> Result<Self::Value, S::Error> {
                let first = seq.next_element::<Choice<'a>>()?;
                while seq.next_element::<Choice<'a>>()?.is_some() {}
                Ok(FirstChoice(first))
            }
        }
        deserializer.deserialize_seq(Elements(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Choice<'a> {
    index: Option<u64>,
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    #[serde(borrow)]
    finish_reason: Option<Text<'a>>,
    /// Only `null`.
    logprobs: Option<()>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Delta<'a> {
    #[serde(borrow)]
    role: Option<Text<'a>>,
    #[serde(borrow)]
    content: Option<Text<'a>>,
    #[serde(borrow)]
    reasoning_content: Option<Text<'a>>,
    #[serde(borrow)]
    reasoning: Option<Text<'a>>,
    /// Only `null`.
    refusal: Option<()>,
}

/// The chunk `data` carries, when it has the common shape; `None` sends it down the `Value` path.
pub(super) fn classify_common(data: &str) -> Option<Chunk> {
    let common: Common = serde_json::from_str(data).ok()?;
    if common.object.as_ref().is_some_and(|o| o.0 == "error") {
        return None;
    }
    let choice = common.choices.as_ref().and_then(|c| c.0.as_ref());
    let delta = choice.and_then(|c| c.delta.as_ref());
    let mut chunk = Chunk::of(openbench_common::record::Classification::Metadata);
    chunk.model = common
        .model
        .as_ref()
        .and_then(Text::non_empty)
        .map(str::to_string);
    chunk.finish_reason = choice
        .and_then(|c| c.finish_reason.as_ref())
        .and_then(Text::non_empty)
        .map(str::to_string);
    let shape = match delta {
        None => DeltaShape::NotAnObject,
        Some(delta) => {
            chunk.reasoning = [&delta.reasoning_content, &delta.reasoning]
                .into_iter()
                .find_map(|t| t.as_ref().and_then(Text::non_empty))
                .unwrap_or_default()
                .to_string();
            chunk.answer = delta
                .content
                .as_ref()
                .map(|t| t.0.to_string())
                .unwrap_or_default();
            DeltaShape::Object {
                role: delta.role.is_some(),
            }
        }
    };
    chunk.classification = super::classification(&chunk, choice.is_some(), shape);
    Some(chunk)
}
