//! The response draft: which events the simulator will send and when, decided up front from the
//! profile, the forced quirks and the request's seeded draws.
//!
//! Drafting is pure and builds no JSON, so determinism and the statistical shape of a profile
//! are tested on thousands of drafts in milliseconds; [`crate::render`] turns a draft into bytes
//! and the server replays those against the clock.

use crate::answer::{self, AnswerKind};
use crate::profile::Profile;
use crate::quirk::Quirk;
use crate::request::SimRequest;
use crate::rng::Draws;
use openbench_common::workflow::CannedAnswer;

/// One logical event of a stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// Role-only chunk.
    Role,
    /// A reasoning piece.
    Reasoning(String),
    /// An answer piece.
    Answer(String),
    /// The `finish_reason` chunk (`stop` or `length`).
    Finish(&'static str),
    /// Usage-only chunk.
    Usage {
        /// Prompt tokens reported.
        prompt_tokens: u64,
        /// Completion tokens reported (reasoning and answer pieces).
        completion_tokens: u64,
        /// Cached prompt tokens, reported only on a route with the prefix cache on.
        cached_tokens: Option<u64>,
    },
    /// `data: [DONE]`.
    Done,
    /// A mid-stream fault event (`error-object`, `object-error`, `event-error`, `non-json-data`).
    Fault(Quirk),
}

/// A payload and its target time from request receipt, ms.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Target time, ms (simulated unless the draft is exact).
    pub at_ms: f64,
    /// What is sent.
    pub payload: Payload,
}

/// The response in outline.
#[derive(Debug, Clone, PartialEq)]
pub enum Outline {
    /// A non-2xx response (`http-429`, `http-500`, `http-400`).
    HttpError(Quirk),
    /// Headers never come.
    Hang,
    /// 200, then only keep-alive comments.
    Drip,
    /// A 200 event stream.
    Stream(Vec<Event>),
}

/// Everything decided about one response, before any byte is built.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// Quirks in effect: forced, drawn failure, then the profile's own.
    pub quirks: Vec<Quirk>,
    /// Where reasoning text goes.
    pub reasoning_field: Quirk,
    /// Time of the response headers, ms.
    pub headers_at_ms: f64,
    /// The response.
    pub outline: Outline,
    /// Schedule mode: times are real ms, never scaled.
    pub exact: bool,
    /// The answer kind drawn.
    pub answer_kind: AnswerKind,
    /// Hex id of the request's seed (response and request ids derive from it).
    pub id_hex: String,
    /// `created` of every chunk.
    pub created: u64,
    /// The model echoed.
    pub model: String,
    /// The dialect the response is rendered in.
    pub api: openbench_common::spec::Api,
    /// Approximate prompt tokens of the request (for dialects that always report usage).
    pub prompt_tokens: u64,
    /// The forced tool the answer is a call of (its arguments are the answer text); `None`
    /// answers in text.
    pub tool: Option<String>,
    /// What the prefix cache held of the prompt (a route with `?prefix_cache=on`), reported in
    /// the dialect's usage fields; `None` reports no cache, as always.
    pub cache: Option<crate::prefix_cache::CacheUse>,
}

impl Draft {
    /// True when a quirk is in effect.
    pub fn has(&self, quirk: Quirk) -> bool {
        self.quirks.contains(&quirk)
    }
}

/// Drafts the response to one request.
pub fn draft(
    profile: &Profile,
    request: &SimRequest,
    answers: &[CannedAnswer],
    draws: &mut Draws,
) -> Draft {
    let mut quirks: Vec<Quirk> = request.forced.clone();
    let failure_draw = draws.uniform();
    let failure_kind = draws.pick(&profile.failures);
    if request.forced.is_empty() && failure_draw < profile.spec.seed.failure_rate {
        quirks.extend(failure_kind);
    }
    quirks.extend(profile.quirks.iter().copied());
    let reasoning_field =
        reasoning_field(&request.forced).or_else(|| reasoning_field(&profile.quirks));
    let model = if quirks.contains(&Quirk::WrongModel) {
        format!("{}-fp8", request.model)
    } else {
        request.model.clone()
    };
    let mut draft = Draft {
        quirks,
        reasoning_field: reasoning_field.unwrap_or(Quirk::ReasoningInReasoningContent),
        headers_at_ms: 0.0,
        outline: Outline::Stream(Vec::new()),
        exact: false,
        answer_kind: AnswerKind::Generic,
        id_hex: draws.id_hex(),
        created: 1_767_225_600 + (draws.uniform() * 1e6) as u64,
        model,
        api: request.api,
        prompt_tokens: request.prompt_tokens,
        tool: request.tool.clone(),
        cache: request.cache,
    };
    // An agent's request is answered by its script (a call or the final answer), never drawn.
    let (answer_kind, answer_text) = match crate::agent::act(request, answers) {
        Some(crate::agent::Action::Call { name, arguments }) => {
            draft.tool = Some(name);
            (AnswerKind::Correct, arguments)
        }
        Some(crate::agent::Action::Answer(text)) => (AnswerKind::Correct, text),
        None => answer::choose(profile, answers, &request.user_prompt, draws),
    };
    draft.answer_kind = answer_kind;
    if let Some(schedule) = &request.schedule {
        draft.exact = true;
        draft.outline = Outline::Stream(scheduled(schedule));
        return draft;
    }

    let mut ttfa = draws.lognormal(profile.ttfa_mu, profile.ttfa_sigma);
    // The prefix cache's model: the uncached part of the prompt is prefilled before the answer.
    if let Some(cache) = request.cache {
        let uncached = request.prompt_tokens.saturating_sub(cache.cached_tokens);
        ttfa += profile.spec.prefix_cache.prefill_ms_per_token * uncached as f64;
    }
    let tps = draws.lognormal(profile.tps_mu, profile.tps_sigma);
    let token_ms = 1000.0 / tps;
    let jitter = profile.spec.gap_jitter;
    let gap = |draws: &mut Draws| token_ms * (1.0 + jitter * (2.0 * draws.uniform() - 1.0));
    let headers_at = profile.spec.headers_ms.min(ttfa / 2.0);
    draft.headers_at_ms = headers_at;
    let has = |q: Quirk| draft.quirks.contains(&q);
    if let Some(q) = [Quirk::Http429, Quirk::Http500, Quirk::Http400]
        .into_iter()
        .find(|q| has(*q))
    {
        draft.outline = Outline::HttpError(q);
        return draft;
    }
    if has(Quirk::NoHeaders) {
        draft.outline = Outline::Hang;
        return draft;
    }
    if has(Quirk::KeepAliveDrip) {
        draft.outline = Outline::Drip;
        return draft;
    }

    let mut events = Vec::new();
    if has(Quirk::RoleFirst) {
        events.push(Event {
            at_ms: headers_at,
            payload: Payload::Role,
        });
    }
    // Reasoning, spread evenly over the time before the first answer token.
    let reasoning = match reasoning_field {
        Some(_) if profile.spec.reasoning_tokens_p50 > 0.0 => {
            answer::reasoning_text(draws.lognormal(profile.spec.reasoning_tokens_p50.ln(), 0.5))
        }
        Some(_) => answer::reasoning_text(1.0),
        None => String::new(),
    };
    let [lo, hi] = profile.spec.chunk_chars;
    let reasoning_pieces = answer::pieces(&reasoning, lo, hi, draws);
    let r = reasoning_pieces.len();
    let start = (ttfa - r as f64 * token_ms).max(headers_at);
    for (i, piece) in reasoning_pieces.into_iter().enumerate() {
        let at_ms = start + (ttfa - start) * i as f64 / r as f64;
        events.push(Event {
            at_ms,
            payload: Payload::Reasoning(piece),
        });
    }
    // The answer, one piece per gap from the TTFA on.
    let mut text = answer_text;
    if has(Quirk::EmptyAnswer) {
        text.clear();
    }
    let tool_call = draft.tool.is_some();
    let cut_call = tool_call && has(Quirk::TruncatedToolCall);
    if has(Quirk::FinishLength) || cut_call {
        text = answer::first_half(&text);
    }
    if tool_call && has(Quirk::MalformedToolCall) {
        // Single-quoted keys, as a broken chat template's Python-repr arguments are.
        text = text.replace('"', "'");
    }
    let mut pieces = answer::pieces(&text, lo, hi, draws);
    // `ignore_eos`: the answer runs to exactly the asked length, padded with one-token words.
    let exact = request.exact_answer_tokens.map(|n| n as usize);
    if let Some(n) = exact {
        pieces.resize(n.max(1), " ok".to_string());
    }
    if has(Quirk::WhitespaceFirstDelta) {
        pieces.insert(0, "\n".to_string());
    }
    let faults = [
        Quirk::Truncated,
        Quirk::ErrorObject,
        Quirk::ObjectError,
        Quirk::EventError,
        Quirk::NonJsonData,
        Quirk::OverloadedError,
        Quirk::ResponseFailed,
    ];
    let stream_fault = faults.into_iter().find(|q| has(*q));
    if stream_fault.is_some() {
        pieces.truncate(2);
    }
    let answer_count = pieces.len();
    let mut at = ttfa;
    for (i, piece) in pieces.into_iter().enumerate() {
        if i > 0 {
            at += gap(draws);
        }
        events.push(Event {
            at_ms: at,
            payload: Payload::Answer(piece),
        });
    }
    match stream_fault {
        Some(Quirk::Truncated) => {}
        Some(fault) => events.push(Event {
            at_ms: at + gap(draws),
            payload: Payload::Fault(fault),
        }),
        None => {
            let reason = if has(Quirk::FinishLength) || cut_call || exact.is_some() {
                "length"
            } else {
                "stop"
            };
            events.push(Event {
                at_ms: at,
                payload: Payload::Finish(reason),
            });
            if (profile.spec.usage_chunk_when_requested && request.include_usage)
                || has(Quirk::UsageChunk)
            {
                let usage = Payload::Usage {
                    prompt_tokens: request.prompt_tokens,
                    completion_tokens: (r + answer_count) as u64,
                    cached_tokens: request.cache.map(|c| c.cached_tokens),
                };
                events.push(Event {
                    at_ms: at,
                    payload: usage,
                });
            }
            if !has(Quirk::NoDone) {
                events.push(Event {
                    at_ms: at,
                    payload: Payload::Done,
                });
            }
        }
    }
    draft.outline = Outline::Stream(events);
    draft
}

/// Schedule mode: gap `i` (ms) comes before event `i`; event 0 is a role-only chunk (so it is
/// never coalesced with the headers, which go at once), events 1.. are answer pieces (the answer
/// is `{"answer":"sss…"}`, padded to at least one character per piece), and the finish chunk and
/// `[DONE]` follow the last piece at once.
fn scheduled(gaps: &[f64]) -> Vec<Event> {
    let mut at = gaps.first().copied().unwrap_or(0.0);
    let mut events = vec![Event {
        at_ms: at,
        payload: Payload::Role,
    }];
    let pieces = gaps.len().saturating_sub(1).max(1);
    let filler = "s".repeat(pieces.saturating_sub(13));
    let text: Vec<char> = format!("{{\"answer\":\"{filler}\"}}").chars().collect();
    for i in 0..pieces {
        at += gaps.get(i + 1).copied().unwrap_or(0.0);
        let piece: String = text[i * text.len() / pieces..(i + 1) * text.len() / pieces]
            .iter()
            .collect();
        events.push(Event {
            at_ms: at,
            payload: Payload::Answer(piece),
        });
    }
    events.push(Event {
        at_ms: at,
        payload: Payload::Finish("stop"),
    });
    events.push(Event {
        at_ms: at,
        payload: Payload::Done,
    });
    events
}

/// The first reasoning-field quirk in a list.
fn reasoning_field(quirks: &[Quirk]) -> Option<Quirk> {
    quirks.iter().copied().find(|q| {
        matches!(
            q,
            Quirk::ReasoningInReasoningContent
                | Quirk::ReasoningInReasoning
                | Quirk::ReasoningInDetails
        )
    })
}
