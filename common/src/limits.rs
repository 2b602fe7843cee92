//! Limits on what one response may make the probe hold (METHODOLOGY §4, "Stream limits").
//!
//! A benchmark reads from services it does not control: without limits, one line that never
//! ends, `data:` lines with no blank line, a flood of keep-alive comments or one huge event grow
//! memory until the deadline (and token counting after it). Each limit ends the request as
//! `stream_limit_exceeded` with its own error type, keeping what was read up to the limit. The
//! defaults are far above anything a real provider sends for a 256-token answer (a chunk is a
//! few hundred bytes; a whole answer a few kilobytes; a long reasoning stream a few thousand
//! events), so they only ever stop hostile or broken upstreams.

use serde::{Deserialize, Serialize};

/// Bytes in one MiB.
const MIB: u64 = 1024 * 1024;

/// Per-response limits, settable in the spec under `request.limits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct StreamLimits {
    /// Longest SSE line, in bytes (error type `limit_line_bytes`).
    pub line_bytes: u64,
    /// Largest SSE event (its `data:` lines joined, plus `event:` and `id:`), in bytes
    /// (`limit_event_bytes`).
    pub event_bytes: u64,
    /// Most events in one response, keep-alive comments included (`limit_events`).
    pub events: u64,
    /// Most bytes of answer text, and separately of reasoning text, kept (`limit_answer_bytes`).
    /// Token counting only ever sees what was kept, so this also bounds its cost.
    pub answer_bytes: u64,
    /// Most bytes of a non-2xx body read for its error message (the request stays an
    /// `http_error`; the rest of the body is not read).
    pub error_body_bytes: u64,
}

impl Default for StreamLimits {
    fn default() -> StreamLimits {
        StreamLimits {
            line_bytes: MIB,
            event_bytes: MIB,
            events: 10_000,
            answer_bytes: 256 * 1024,
            error_body_bytes: 64 * 1024,
        }
    }
}

/// Largest gRPC message a coordinator accepts from a probe (one execution as JSON).
pub const GRPC_MESSAGE_LIMIT_BYTES: usize = 256 * 1024 * 1024;

/// Upper bounds a spec may set, chosen so a worst-case record stays below
/// [`GRPC_MESSAGE_LIMIT_BYTES`] (see [`StreamLimits::worst_case_record_bytes`]).
pub const MAX_LIMITS: StreamLimits = StreamLimits {
    line_bytes: 16 * MIB,
    event_bytes: 8 * MIB,
    events: 100_000,
    answer_bytes: 2 * MIB,
    error_body_bytes: MIB,
};

/// Longest `event:` name or `finish_reason` kept per event, in characters: real ones are a
/// word; the cap keeps the per-event share of a record bounded.
pub const EVENT_LABEL_CHARS: usize = 32;

/// Longest request id a plan makes, in (ASCII) characters.
pub const REQUEST_ID_CHARS: u64 = 128;

/// Serialised bytes one stream event takes besides its request id, texts and labels (field
/// names, index, offset, classification): a generous over-estimate.
const EVENT_OVERHEAD_BYTES: u64 = 256;

impl StreamLimits {
    /// Problems with these limits (each names its field), empty when usable: every limit must be
    /// at least 1 and at most [`MAX_LIMITS`].
    pub fn problems(&self) -> Vec<String> {
        let fields = [
            ("line_bytes", self.line_bytes, MAX_LIMITS.line_bytes),
            ("event_bytes", self.event_bytes, MAX_LIMITS.event_bytes),
            ("events", self.events, MAX_LIMITS.events),
            ("answer_bytes", self.answer_bytes, MAX_LIMITS.answer_bytes),
            (
                "error_body_bytes",
                self.error_body_bytes,
                MAX_LIMITS.error_body_bytes,
            ),
        ];
        fields
            .iter()
            .filter(|(_, value, max)| !(1..=*max).contains(value))
            .map(|(name, value, max)| {
                format!("request.limits.{name}: {value} is outside 1..={max}")
            })
            .collect()
    }

    /// An upper bound of the JSON size of one execution (record and events) produced under these
    /// limits: answer and reasoning are each held twice (in their events and in the record) and
    /// JSON escaping can grow a byte up to six (`\u0001`); events add their overhead, the request
    /// id and two capped labels; server timings come from one event (re-serialised, at most
    /// twice its size); the error message is a 512-character snippet; headers and the rest fit
    /// in the last 256 KiB.
    pub fn worst_case_record_bytes(&self) -> u64 {
        let texts = 2 * 2 * self.answer_bytes * 6;
        let labels = 2 * EVENT_LABEL_CHARS as u64 * 6;
        let events = self.events * (EVENT_OVERHEAD_BYTES + REQUEST_ID_CHARS + labels);
        let timings = self.event_bytes * 2;
        let error = 512 * 6;
        texts + events + timings + error + 256 * 1024
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_an_empty_block_means_defaults() {
        assert!(StreamLimits::default().problems().is_empty());
        assert!(MAX_LIMITS.problems().is_empty());
        let parsed: StreamLimits = serde_saphyr::from_str("events: 10\n").unwrap_or_default();
        assert_eq!(parsed.events, 10);
        assert_eq!(parsed.line_bytes, 1024 * 1024);
    }

    #[test]
    fn zero_and_oversized_limits_are_named() {
        let limits = StreamLimits {
            events: 0,
            answer_bytes: 17 * 1024 * 1024,
            ..StreamLimits::default()
        };
        assert_eq!(
            limits.problems(),
            [
                "request.limits.events: 0 is outside 1..=100000",
                "request.limits.answer_bytes: 17825792 is outside 1..=2097152",
            ]
        );
    }

    /// The reference spec with `block` inserted under `request:`.
    fn reference_spec_with(block: &str) -> String {
        let text = include_str!("../../workflows/micro-single-task/specs/reference.yaml");
        text.replacen(
            "  harness_grace_ms: 5000\n",
            &format!("  harness_grace_ms: 5000\n{block}"),
            1,
        )
    }

    #[test]
    fn the_spec_takes_an_optional_limits_block_and_names_a_bad_value() {
        let path = std::path::Path::new("reference.yaml");
        let spec = crate::spec::Spec::parse(path, reference_spec_with("").as_bytes()).unwrap();
        assert_eq!(spec.request.limits, StreamLimits::default());
        let text = reference_spec_with("  limits:\n    events: 1000\n    answer_bytes: 4096\n");
        let spec = crate::spec::Spec::parse(path, text.as_bytes()).unwrap();
        assert_eq!(
            (spec.request.limits.events, spec.request.limits.answer_bytes),
            (1000, 4096)
        );
        assert_eq!(spec.request.limits.line_bytes, 1024 * 1024);
        let text = reference_spec_with("  limits:\n    line_bytes: 0\n");
        let err = crate::spec::Spec::parse(path, text.as_bytes()).unwrap_err();
        assert!(
            err.to_string()
                .contains("request.limits.line_bytes: 0 is outside"),
            "{err}"
        );
        let text = reference_spec_with("  limits:\n    lines: 5\n");
        assert!(crate::spec::Spec::parse(path, text.as_bytes()).is_err());
    }

    #[test]
    fn the_largest_allowed_record_fits_the_grpc_limit_with_room() {
        let worst = MAX_LIMITS.worst_case_record_bytes();
        assert!(worst < GRPC_MESSAGE_LIMIT_BYTES as u64, "{worst}");
        // The defaults leave a wide margin.
        assert!(StreamLimits::default().worst_case_record_bytes() < 80 * MIB);
    }
}
