//! The probe's span of one request, in the OpenTelemetry GenAI client conventions: `chat {model}`,
//! kind CLIENT, a child of the caller's round span (the remote parent from the gRPC metadata).
//! Request attributes are set when the span opens; everything measured is copied from the
//! terminal record when the request ends, so the span carries exactly the record's values. Names
//! live in [`crate::semconv`].

use crate::semconv as sc;
use openbench_common::record::{Execution, Outcome, TerminalRecord};
use openbench_common::request::PlannedRequest;
use openbench_common::spec::{ProviderAdapter, RequestContract};
use opentelemetry::trace::{Status, TraceContextExt};
use opentelemetry::{KeyValue, StringValue, Value};
use std::time::{Duration, SystemTime};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// What every span of one provider shares: its model, endpoint and the request contract.
#[derive(Debug, Clone)]
pub struct SpanTemplate {
    model: String,
    server_address: Option<String>,
    server_port: Option<u16>,
    max_tokens: u32,
    temperature: f64,
    top_p: f64,
}

impl SpanTemplate {
    /// The template of `adapter`'s requests under `contract`.
    pub fn new(adapter: &ProviderAdapter, contract: &RequestContract) -> Self {
        let url = reqwest::Url::parse(&adapter.endpoint).ok();
        Self {
            model: adapter.model.clone(),
            server_address: url.as_ref().and_then(|u| u.host_str().map(String::from)),
            server_port: url.as_ref().and_then(|u| u.port_or_known_default()),
            max_tokens: contract.max_output_tokens,
            temperature: contract.temperature,
            top_p: contract.top_p,
        }
    }
}

/// What the environment asks of the spans: names (`OTEL_SEMCONV_STABILITY_OPT_IN`) and whether
/// prompt and answer text may be recorded (off unless explicitly turned on).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpanPolicy {
    /// Emit only the latest experimental names (no `gen_ai.system`).
    pub latest_only: bool,
    /// Record `gen_ai.input.messages` and `gen_ai.output.messages`.
    pub capture_content: bool,
}

impl SpanPolicy {
    /// The policy the process environment sets.
    pub fn from_env() -> Self {
        Self {
            latest_only: sc::latest_experimental_only(
                std::env::var(sc::STABILITY_OPT_IN_VAR).ok().as_deref(),
            ),
            capture_content: sc::capture_content(
                std::env::var(sc::CAPTURE_CONTENT_VAR).ok().as_deref(),
            ),
        }
    }
}

/// Opens the span of `planned`, a child of `parent` when that carries a valid span context.
pub fn request_span(
    template: &SpanTemplate,
    planned: &PlannedRequest,
    parent: opentelemetry::Context,
    policy: SpanPolicy,
) -> tracing::Span {
    let parent_span = parent.span().span_context().clone();
    let trace_id = if parent_span.is_valid() {
        parent_span.trace_id().to_string()
    } else {
        String::new()
    };
    let span = tracing::info_span!(
        "chat",
        otel.name = %format!("{} {}", sc::OPERATION_CHAT, template.model),
        otel.kind = "client",
        request_id = %planned.identity.request_id,
        provider = %planned.identity.provider,
        lane = %planned.identity.lane,
        trace_id = %trace_id,
    );
    // No subscriber wants the span (no OTLP export, a log level below info): every attribute
    // below would be built only to be dropped.
    if span.is_disabled() {
        return span;
    }
    if parent_span.is_valid() {
        // Fails only when no OpenTelemetry layer is installed; the trace_id field remains.
        let _ = span.set_parent(parent);
    }
    span.set_attribute(sc::OPERATION_NAME, sc::OPERATION_CHAT);
    span.set_attribute(sc::PROVIDER_NAME, planned.identity.provider.clone());
    if !policy.latest_only {
        span.set_attribute(sc::SYSTEM_DEPRECATED, planned.identity.provider.clone());
    }
    span.set_attribute(sc::REQUEST_MODEL, template.model.clone());
    span.set_attribute(sc::REQUEST_MAX_TOKENS, i64::from(template.max_tokens));
    span.set_attribute(sc::REQUEST_TEMPERATURE, template.temperature);
    span.set_attribute(sc::REQUEST_TOP_P, template.top_p);
    span.set_attribute(sc::REQUEST_STREAM, true);
    if let Some(address) = &template.server_address {
        span.set_attribute(sc::SERVER_ADDRESS, address.clone());
    }
    if let Some(port) = template.server_port {
        span.set_attribute(sc::SERVER_PORT, i64::from(port));
    }
    for (key, value) in load_labels(planned.identity.phase, planned.load.as_deref()) {
        span.set_attribute(key, value);
    }
    if policy.capture_content {
        span.set_attribute(sc::INPUT_MESSAGES, input_messages(planned));
    }
    span
}

/// The load phase a request served and its load, as span attributes and metric labels (none
/// for a request outside a load phase, so paired rounds gain nothing).
pub fn load_labels(phase: Option<u32>, load: Option<&str>) -> Vec<(&'static str, Value)> {
    let Some(phase) = phase else {
        return Vec::new();
    };
    let mut out = vec![(sc::LOAD_PHASE, Value::I64(i64::from(phase)))];
    if let Some(load) = load {
        out.push((sc::LOAD_TARGET, Value::from(load.to_string())));
    }
    out
}

/// Copies the terminal record of `execution` onto `span`: measured attributes, the first-output
/// and first-answer events at their real times, and ERROR status with `error.type` on failure.
pub fn record_execution(span: &tracing::Span, execution: &Execution, policy: SpanPolicy) {
    // A span no subscriber wants keeps nothing: the attributes would be built only to be dropped.
    if span.is_disabled() {
        return;
    }
    let record = &execution.record;
    for (key, value) in record_attributes(record) {
        span.set_attribute(key, value);
    }
    let clock_zero = parse_rfc3339(&record.started_at);
    for (name, offset_ms) in [
        (sc::EVENT_FIRST_OUTPUT, record.ttfo_ms),
        (sc::EVENT_FIRST_ANSWER, record.ttfa_ms),
    ] {
        if let (Some(zero), Some(ms)) = (clock_zero, offset_ms.filter(|ms| *ms >= 0.0)) {
            let at = zero + Duration::from_secs_f64(ms / 1000.0);
            span.add_event_with_timestamp(name, at, vec![KeyValue::new("offset_ms", ms)]);
        }
    }
    if policy.capture_content {
        span.set_attribute(sc::OUTPUT_MESSAGES, output_messages(record));
    }
    if record.outcome != Outcome::Completed {
        let error_type = record
            .error_type
            .as_ref()
            .map(snake_case)
            .unwrap_or_else(|| snake_case(&record.outcome));
        span.set_attribute(sc::ERROR_TYPE, error_type.clone());
        span.set_status(Status::error(error_type));
    }
}

/// The record's values as span attributes (absent values are left out, never zero-filled).
pub fn record_attributes(record: &TerminalRecord) -> Vec<(&'static str, Value)> {
    let mut out: Vec<(&'static str, Value)> = vec![
        (sc::OUTCOME, snake_case(&record.outcome).into()),
        (sc::TASK_FAMILY, record.task_family.clone().into()),
        (sc::ITEM_ID, record.item_id.clone().into()),
        (sc::REQUEST_ID, record.request_id.clone().into()),
        (sc::REGION, record.region.clone().into()),
        (sc::LANE, record.lane.clone().into()),
        (sc::ROUND_INDEX, saturating_i64(record.round_index).into()),
    ];
    let mut put = |key: &'static str, value: Option<Value>| {
        if let Some(value) = value {
            out.push((key, value));
        }
    };
    put(
        sc::RESPONSE_MODEL,
        record.response_model.clone().map(Value::from),
    );
    put(
        sc::RESPONSE_ID,
        record.provider_request_id.clone().map(Value::from),
    );
    put(
        sc::RESPONSE_FINISH_REASONS,
        record
            .finish_reason
            .clone()
            .map(|r| Value::Array(vec![StringValue::from(r)].into())),
    );
    put(
        sc::RESPONSE_TIME_TO_FIRST_CHUNK,
        record.ttfo_ms.map(|ms| Value::F64(ms / 1000.0)),
    );
    let usage = record.usage.as_ref();
    put(
        sc::USAGE_INPUT_TOKENS,
        usage
            .and_then(|u| u.prompt_tokens)
            .map(|t| saturating_i64(t).into()),
    );
    put(
        sc::USAGE_OUTPUT_TOKENS,
        usage
            .and_then(|u| u.completion_tokens)
            .map(|t| saturating_i64(t).into()),
    );
    put(sc::TTFO_MS, record.ttfo_ms.map(Value::F64));
    put(sc::TTFA_MS, record.ttfa_ms.map(Value::F64));
    put(sc::E2E_MS, record.e2e_ms.map(Value::F64));
    put(
        sc::OUTPUT_TOKENS_PER_SECOND,
        record.output_tokens_per_second.map(Value::F64),
    );
    put(
        sc::ANSWER_TOKENS,
        record.answer_tokens.map(|t| saturating_i64(t).into()),
    );
    put(
        sc::REASONING_TOKENS_BEFORE_ANSWER,
        record
            .reasoning_tokens_before_answer
            .map(|t| saturating_i64(t).into()),
    );
    out
}

/// A record enum as its serialized (snake_case) name, the spelling the record files use.
pub(crate) fn snake_case<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::from("unknown"),
    }
}

/// OTLP integers are signed; counts beyond `i64::MAX` cannot occur but must not wrap.
fn saturating_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The record's clock zero (`started_at`, RFC 3339) as a system time.
fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let at =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    Some(SystemTime::from(at))
}

/// The prompt in the conventions' message shape (only with content capture on).
fn input_messages(planned: &PlannedRequest) -> String {
    let messages: Vec<serde_json::Value> = planned
        .messages
        .iter()
        .map(|m| {
            serde_json::json!({
                "role": m.role,
                "parts": [{"type": "text", "content": m.content}],
            })
        })
        .collect();
    serde_json::Value::Array(messages).to_string()
}

/// The answer in the conventions' message shape (only with content capture on).
fn output_messages(record: &TerminalRecord) -> String {
    serde_json::json!([{
        "role": "assistant",
        "parts": [{"type": "text", "content": record.answer_text}],
        "finish_reason": record.finish_reason,
    }])
    .to_string()
}
