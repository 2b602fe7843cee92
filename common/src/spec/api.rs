//! The API dialect a provider speaks (`api:` on a provider): which path the adapter adds to the
//! base URL, and which request body and event stream the probe builds and reads. The same open
//! model is sold through several APIs; the dialect is provider data, never a code path per vendor.

use serde::{Deserialize, Serialize};

/// One provider API dialect (docs/methodology.md maps each one's events onto TTFO, TTFA and E2E).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// OpenAI chat completions: `POST {base}/chat/completions`, `choices[].delta` chunks and
    /// `data: [DONE]`.
    #[default]
    OpenaiChat,
    /// Anthropic messages: `POST {base}/messages`, `x-api-key` and `anthropic-version` headers,
    /// named events from `message_start` to `message_stop`.
    AnthropicMessages,
    /// OpenAI responses: `POST {base}/responses`, `response.*` events ending in
    /// `response.completed`.
    OpenaiResponses,
    /// OpenAI legacy completions: `POST {base}/completions`, one `prompt` string rendered from
    /// the messages, `choices[].text` chunks and `data: [DONE]`.
    OpenaiCompletions,
}

impl Api {
    /// Every dialect, in listing order.
    pub const ALL: [Api; 4] = [
        Api::OpenaiChat,
        Api::AnthropicMessages,
        Api::OpenaiResponses,
        Api::OpenaiCompletions,
    ];

    /// The name a spec writes (`openai-chat`).
    pub fn as_str(self) -> &'static str {
        match self {
            Api::OpenaiChat => "openai-chat",
            Api::AnthropicMessages => "anthropic-messages",
            Api::OpenaiResponses => "openai-responses",
            Api::OpenaiCompletions => "openai-completions",
        }
    }

    /// The dialect a spec name stands for.
    pub fn parse(name: &str) -> Option<Api> {
        Api::ALL.into_iter().find(|api| api.as_str() == name)
    }

    /// True for the default (`openai-chat`): left out of the canonical spec, so specs written
    /// before `api:` existed hash as before.
    pub fn is_default(&self) -> bool {
        *self == Api::default()
    }

    /// True when the dialect can offer tools (every one but legacy completions).
    pub fn has_tools(self) -> bool {
        self != Api::OpenaiCompletions
    }

    /// The path the adapter adds to a base URL (`/chat/completions`).
    pub fn path(self) -> &'static str {
        match self {
            Api::OpenaiChat => "/chat/completions",
            Api::AnthropicMessages => "/messages",
            Api::OpenaiResponses => "/responses",
            Api::OpenaiCompletions => "/completions",
        }
    }

    /// The body fields this dialect's request contract owns besides the common ones
    /// (`CONTRACT_BODY_FIELDS`): an adapter's `extra_body` may not set them either.
    pub fn contract_fields(self) -> &'static [&'static str] {
        match self {
            Api::OpenaiChat => &[],
            Api::AnthropicMessages => &["system"],
            Api::OpenaiResponses => &["input", "instructions", "max_output_tokens", "text"],
            Api::OpenaiCompletions => &["prompt"],
        }
    }

    /// The POST URL of a base URL (`https://api.anthropic.com/v1` → `…/v1/messages`). A URL
    /// already ending in the path is kept, never doubled; a query (`?slots=2`, the simulator's
    /// capacity) stays after the path.
    pub fn post_url(self, base: &str) -> String {
        let (base, query) = match base.split_once('?') {
            Some((base, query)) => (base, Some(query)),
            None => (base, None),
        };
        let trimmed = base.trim_end_matches('/');
        let mut url = if trimmed.ends_with(self.path()) {
            trimmed.to_string()
        } else {
            format!("{trimmed}{}", self.path())
        };
        if let Some(query) = query {
            url.push('?');
            url.push_str(query);
        }
        url
    }
}

impl std::fmt::Display for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_urls_add_the_dialect_path_once_and_keep_a_query() {
        let base = "https://api.anthropic.com/v1/";
        assert_eq!(
            Api::AnthropicMessages.post_url(base),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            Api::OpenaiResponses.post_url("http://h/v1/responses"),
            "http://h/v1/responses"
        );
        assert_eq!(
            Api::OpenaiCompletions.post_url("http://h/profiles/p/v1?slots=2"),
            "http://h/profiles/p/v1/completions?slots=2"
        );
        assert_eq!(
            Api::OpenaiChat.post_url("http://h/v1"),
            "http://h/v1/chat/completions"
        );
    }

    #[test]
    fn a_spec_may_not_set_a_dialects_contract_field_in_extra_body() {
        let yaml = "providers:\n  - key: a\n    endpoint: https://x.test/v1\n    model: m\n    \
                    api: openai-responses\n    extra_body: {instructions: be nice}\n";
        let err = crate::spec::Spec::parse(std::path::Path::new("s.yaml"), yaml.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("providers[0] (a).extra_body.instructions: the contract owns this field"),
            "{err}"
        );
    }

    #[test]
    fn names_round_trip() {
        for api in Api::ALL {
            assert_eq!(Api::parse(api.as_str()), Some(api));
            let yaml = serde_json::to_string(&api).unwrap();
            assert_eq!(yaml, format!("\"{api}\""));
        }
        assert_eq!(Api::parse("openai"), None);
    }
}
