//! Every OpenTelemetry name the probe's request spans use, in one place: the GenAI semantic
//! conventions (Development status, now in their own repository, so names may still move — a
//! rename is a change here only) and the benchmark's own `openbench.*` attributes and events.
//!
//! Pinned to the GenAI conventions as of semantic-conventions v1.37 (`gen_ai.provider.name`,
//! `gen_ai.input.messages`/`gen_ai.output.messages`). `OTEL_SEMCONV_STABILITY_OPT_IN`: with
//! `gen_ai_latest_experimental` only these names are emitted; without it the pre-1.37 provider
//! attribute `gen_ai.system` is emitted beside `gen_ai.provider.name` for older backends.

/// `OTEL_SEMCONV_STABILITY_OPT_IN`, the variable of the opt-in.
pub const STABILITY_OPT_IN_VAR: &str = "OTEL_SEMCONV_STABILITY_OPT_IN";
/// The opt-in value that asks for the latest experimental GenAI names only.
pub const GEN_AI_LATEST_EXPERIMENTAL: &str = "gen_ai_latest_experimental";
/// Variable that turns prompt and answer capture on (`true`); off by default.
pub const CAPTURE_CONTENT_VAR: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// The operation: always `chat` (the span is named `chat {model}`).
pub const OPERATION_NAME: &str = "gen_ai.operation.name";
/// The operation name's value for chat completions.
pub const OPERATION_CHAT: &str = "chat";
/// Provider of the model (the spec's provider key).
pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
/// The pre-1.37 name of [`PROVIDER_NAME`], emitted only without the latest opt-in.
pub const SYSTEM_DEPRECATED: &str = "gen_ai.system";
/// Model id requested.
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
/// Completion ceiling requested.
pub const REQUEST_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
/// Sampling temperature requested.
pub const REQUEST_TEMPERATURE: &str = "gen_ai.request.temperature";
/// Nucleus sampling requested.
pub const REQUEST_TOP_P: &str = "gen_ai.request.top_p";
/// Whether the response was streamed (always true here).
pub const REQUEST_STREAM: &str = "gen_ai.request.stream";
/// Model id the response echoed.
pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
/// Provider's id of the response (its request-id header).
pub const RESPONSE_ID: &str = "gen_ai.response.id";
/// Final finish reasons (a one-element array).
pub const RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// Seconds from the request to the first output chunk (our TTFO).
pub const RESPONSE_TIME_TO_FIRST_CHUNK: &str = "gen_ai.response.time_to_first_chunk";
/// Provider-reported prompt tokens.
pub const USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// Provider-reported completion tokens.
pub const USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// Prompt messages (JSON), only with content capture on.
pub const INPUT_MESSAGES: &str = "gen_ai.input.messages";
/// Answer message (JSON), only with content capture on.
pub const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
/// Host of the provider endpoint.
pub const SERVER_ADDRESS: &str = "server.address";
/// Port of the provider endpoint.
pub const SERVER_PORT: &str = "server.port";
/// Failure class (the record's `error_type`, else its outcome) on failed requests.
pub const ERROR_TYPE: &str = "error.type";

/// Time to first output (reasoning or answer), ms.
pub const TTFO_MS: &str = "openbench.ttfo_ms";
/// Time to first visible answer text, ms.
pub const TTFA_MS: &str = "openbench.ttfa_ms";
/// Time to the last non-empty answer text, ms.
pub const E2E_MS: &str = "openbench.e2e_ms";
/// Visible-answer tokens per second.
pub const OUTPUT_TOKENS_PER_SECOND: &str = "openbench.output_tokens_per_second";
/// o200k_base tokens in the answer.
pub const ANSWER_TOKENS: &str = "openbench.answer_tokens";
/// o200k_base reasoning tokens before the first answer text.
pub const REASONING_TOKENS_BEFORE_ANSWER: &str = "openbench.reasoning_tokens_before_answer";
/// How the request ended (the record's `outcome`).
pub const OUTCOME: &str = "openbench.outcome";
/// Task family of the item.
pub const TASK_FAMILY: &str = "openbench.task_family";
/// Dataset item id.
pub const ITEM_ID: &str = "openbench.item_id";
/// The benchmark's request id.
pub const REQUEST_ID: &str = "openbench.request_id";
/// Region of the probe.
pub const REGION: &str = "openbench.region";
/// Lane (`provider@region`).
pub const LANE: &str = "openbench.lane";
/// Round index in the schedule.
pub const ROUND_INDEX: &str = "openbench.round_index";
/// Run id (on the run span).
pub const RUN_ID: &str = "openbench.run_id";
/// Rounds the session executes (on the run span).
pub const ROUNDS_PLANNED: &str = "openbench.rounds_planned";
/// Round id (on round spans).
pub const ROUND_ID: &str = "openbench.round_id";
/// Spread of the lanes' dispatch instants in a round, ms (on round spans).
pub const LAUNCH_SKEW_MS: &str = "openbench.launch_skew_ms";
/// Lanes of a round that ended in a harness error (on round spans).
pub const HARNESS_ERRORS: &str = "openbench.harness_errors";
/// Name of the coordinator's span of one run session, the root of its trace.
pub const SPAN_RUN: &str = "openbench.run";
/// Name of a round's span, the parent of its lanes' request spans.
pub const SPAN_ROUND: &str = "openbench.round";
/// Name of a load phase's span (one step of the load workflow), the root of its trace and the
/// parent of its requests' spans.
pub const SPAN_LOAD_PHASE: &str = "openbench.load_phase";
/// Phase index in the schedule (on load phase spans; for the load workflow, the step index).
pub const PHASE_INDEX: &str = "openbench.phase_index";
/// Phase name (on load phase spans; for the load workflow `step-N <load>`, e.g.
/// `step-2 poisson 8/s`, so the step and its load are on every trace).
pub const PHASE_NAME: &str = "openbench.phase_name";
/// How the phase paces its requests: `open_loop` or `closed_loop` (on load phase spans).
pub const PHASE_KIND: &str = "openbench.phase_kind";
/// Lanes the phase's load is spread over (on load phase spans).
pub const PHASE_LANES: &str = "openbench.phase_lanes";
/// Load phases only: the phase's index in the schedule (for the load workflow, the step index),
/// on request spans and on every probe metric point of the request.
pub const LOAD_PHASE: &str = "openbench.load.phase";
/// Load phases only: the phase's load in the workflow's words (`poisson 16/s`, `closed c=8`),
/// on request spans and metric points beside [`LOAD_PHASE`].
pub const LOAD_TARGET: &str = "openbench.load.target";
/// Event at the first output chunk (reasoning or answer), timed at TTFO.
pub const EVENT_FIRST_OUTPUT: &str = "openbench.first_output";
/// Event at the first visible answer chunk, timed at TTFA.
pub const EVENT_FIRST_ANSWER: &str = "openbench.first_answer";

/// `gen_ai.token.type` of a token-usage point: `input` or `output`.
pub const TOKEN_TYPE: &str = "gen_ai.token.type";

/// Metric: duration of the whole operation, s.
pub const METRIC_OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
/// Metric: time to the first output chunk, s.
pub const METRIC_TIME_TO_FIRST_CHUNK: &str = "gen_ai.client.operation.time_to_first_chunk";
/// Metric: time between output chunks after the first, s.
pub const METRIC_TIME_PER_OUTPUT_CHUNK: &str = "gen_ai.client.operation.time_per_output_chunk";
/// Metric: provider-reported tokens, by `gen_ai.token.type`.
pub const METRIC_TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// Metric: our TTFO, ms.
pub const METRIC_TTFO: &str = "openbench.client.ttfo";
/// Metric: our TTFA, ms.
pub const METRIC_TTFA: &str = "openbench.client.ttfa";
/// Metric: our E2E, ms.
pub const METRIC_E2E: &str = "openbench.client.e2e";
/// Metric: visible-answer tokens per second.
pub const METRIC_OUTPUT_TOKENS_PER_SECOND: &str = "openbench.client.output_tokens_per_second";
/// Metric: requests by outcome.
pub const METRIC_REQUESTS: &str = "openbench.client.requests";

/// Advisory buckets of `gen_ai.client.operation.duration` (s), from the conventions.
pub const BUCKETS_OPERATION_DURATION: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// Advisory buckets of the time to first chunk (s): the conventions' time-to-first-token ones.
pub const BUCKETS_TIME_TO_FIRST_CHUNK: [f64; 16] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// Advisory buckets of the time per output chunk (s): the conventions' time-per-output-token ones.
pub const BUCKETS_TIME_PER_OUTPUT_CHUNK: [f64; 13] = [
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
];
/// Advisory buckets of `gen_ai.client.token.usage`, from the conventions.
pub const BUCKETS_TOKEN_USAGE: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];
/// Buckets of our TTFO/TTFA/E2E histograms (ms).
pub const BUCKETS_LATENCY_MS: [f64; 16] = [
    5.0, 10.0, 25.0, 50.0, 100.0, 200.0, 300.0, 500.0, 750.0, 1000.0, 1500.0, 2500.0, 5000.0,
    10000.0, 30000.0, 60000.0,
];
/// Buckets of the visible-answer tokens/s histogram.
pub const BUCKETS_TOKENS_PER_SECOND: [f64; 13] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 150.0, 200.0, 300.0, 500.0, 1000.0,
];

/// Whether `OTEL_SEMCONV_STABILITY_OPT_IN` (comma-separated) asks for the latest GenAI names only.
pub fn latest_experimental_only(opt_in: Option<&str>) -> bool {
    opt_in.is_some_and(|v| {
        v.split(',')
            .any(|item| item.trim() == GEN_AI_LATEST_EXPERIMENTAL)
    })
}

/// Whether the capture variable's value turns content capture on (`true`, any case).
pub fn capture_content(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opt_in_is_a_comma_separated_list() {
        assert!(!latest_experimental_only(None));
        assert!(!latest_experimental_only(Some("http")));
        assert!(latest_experimental_only(Some(
            "http, gen_ai_latest_experimental"
        )));
        assert!(!latest_experimental_only(Some(
            "gen_ai_latest_experimental_x"
        )));
    }

    #[test]
    fn capture_is_off_unless_true() {
        assert!(!capture_content(None));
        assert!(!capture_content(Some("1")));
        assert!(!capture_content(Some("false")));
        assert!(capture_content(Some(" TRUE ")));
    }
}
