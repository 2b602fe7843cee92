//! The HTTP request a provider gets: a JSON body built from the fixed contract, the adapter's data
//! and the planned messages, and headers built from the adapter and the probe's credentials.
//!
//! Never `stop`, never `seed` (METHODOLOGY §1). Adapters are data: no per-vendor code path.
//! This is the `openai-chat` body; [`crate::dialect`] builds the others and applies a request's
//! own output length to any of them. The headers serve every dialect.

use crate::credentials::Credentials;
use crate::error::ProbeError;
use openbench_common::request::ChatMessage;
use openbench_common::spec::{Auth, ProviderAdapter, RequestContract};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

/// The JSON body of one streaming chat completion.
pub fn build_body(
    adapter: &ProviderAdapter,
    contract: &RequestContract,
    messages: &[ChatMessage],
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(adapter.model));
    body.insert(
        "messages".into(),
        Value::Array(
            messages
                .iter()
                .map(crate::dialect::tool_loop::chat_message)
                .collect(),
        ),
    );
    insert_sampling(&mut body, adapter, contract);
    if !contract.response_format.is_empty() {
        body.insert(
            "response_format".into(),
            json!({"type": contract.response_format}),
        );
    }
    if !contract.reasoning_effort.is_empty() {
        body.insert("reasoning_effort".into(), json!(contract.reasoning_effort));
    }
    if adapter.include_usage {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    for (key, value) in &adapter.extra_body {
        body.insert(key.clone(), value.clone());
    }
    Value::Object(body)
}

/// The OpenAI-style sampling fields both chat and legacy completions send: `stream`, the
/// contract's temperature, top_p and penalties, and its completion ceiling under the adapter's
/// field name.
pub(crate) fn insert_sampling(
    body: &mut Map<String, Value>,
    adapter: &ProviderAdapter,
    contract: &RequestContract,
) {
    body.insert("stream".into(), json!(true));
    body.insert("temperature".into(), json!(contract.temperature));
    body.insert("top_p".into(), json!(contract.top_p));
    body.insert("presence_penalty".into(), json!(contract.presence_penalty));
    body.insert(
        "frequency_penalty".into(),
        json!(contract.frequency_penalty),
    );
    body.insert(
        adapter.max_tokens_field.as_str().into(),
        json!(contract.max_output_tokens),
    );
}

/// The request headers: auth from credentials (marked sensitive), the adapter's extra headers,
/// `Accept: text/event-stream` and a JSON content type. Errors name the provider and header,
/// never a value.
pub fn build_headers(
    adapter: &ProviderAdapter,
    credentials: &Credentials,
) -> Result<HeaderMap, ProbeError> {
    let bad = |message: String| ProbeError::Adapter {
        provider: adapter.key.clone(),
        message,
    };
    let secret = |env: &str| {
        credentials
            .get(env)
            .ok_or_else(|| bad(format!("auth: credential variable {env} is not set")))
    };
    let mut headers = HeaderMap::new();
    for (name, value) in &adapter.extra_headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| bad(format!("extra_headers.{name}: not a valid header name")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| bad(format!("extra_headers.{name}: not a valid header value")))?;
        headers.insert(header, value);
    }
    match &adapter.auth {
        Auth::None => {}
        Auth::Bearer { env } => {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", secret(env)?)).map_err(|_| {
                    bad(format!(
                        "auth: the value of {env} is not a valid header value"
                    ))
                })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        Auth::Headers { headers: map } => {
            for (name, env) in map {
                let header = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| bad(format!("auth.headers.{name}: not a valid header name")))?;
                let mut value = HeaderValue::from_str(secret(env)?).map_err(|_| {
                    bad(format!(
                        "auth.headers.{name}: the value of {env} is not a valid header value"
                    ))
                })?;
                value.set_sensitive(true);
                headers.insert(header, value);
            }
        }
    }
    for (name, value) in crate::dialect::dialect_headers(adapter.api) {
        if !headers.contains_key(*name) {
            headers.insert(*name, HeaderValue::from_static(value));
        }
    }
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(headers)
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
