//! Hot paths of one streamed request, in MB/s of stream bytes: SSE framing of network reads,
//! classification of each event, and the o200k_base token count of the answer. Run with
//! `cargo bench -p openbench-probe --bench stream`; figures in `docs/performance.md`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use openbench_probe::classify::{classify_event, classify_event_value};
use openbench_probe::sse::{SseDecoder, SseFrame};
use std::hint::black_box;
use std::time::Duration;

/// Chunks per stream: the fidelity target's "≈ 30 chunks each".
const CHUNKS: usize = 30;

/// An OpenAI-style stream of `CHUNKS` content deltas, a finish chunk with usage and `[DONE]`.
fn stream_bytes() -> Vec<u8> {
    let mut out = String::new();
    for i in 0..CHUNKS {
        out.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\
             \"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"word{i} \"}},\
             \"finish_reason\":null}}]}}\n\n"
        ));
    }
    out.push_str(
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\
         \"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\
         \"usage\":{\"prompt_tokens\":120,\"completion_tokens\":30,\"total_tokens\":150}}\n\n",
    );
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

/// The stream as network reads: one per event, as a provider flushing each chunk gives.
fn reads(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(i) = bytes[start..].windows(2).position(|w| w == b"\n\n") {
        out.push(&bytes[start..start + i + 2]);
        start += i + 2;
    }
    out
}

fn framing(c: &mut Criterion) {
    let bytes = stream_bytes();
    let reads = reads(&bytes);
    let mut group = c.benchmark_group("sse");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("frame one stream (one read per event)", |b| {
        b.iter(|| {
            let mut decoder = SseDecoder::new();
            let mut frames = Vec::with_capacity(CHUNKS + 2);
            for (i, read) in reads.iter().enumerate() {
                let _ = decoder.feed(read, Duration::from_micros(i as u64), &mut frames);
            }
            black_box(frames)
        })
    });
    let mut decoder = SseDecoder::new();
    let mut frames = Vec::new();
    let _ = decoder.feed(&bytes, Duration::ZERO, &mut frames);
    let events: Vec<(Option<String>, String)> = frames
        .into_iter()
        .filter_map(|f| match f {
            SseFrame::Event(e) => Some((e.event, e.data)),
            SseFrame::Comment { .. } => None,
        })
        .collect();
    group.bench_function("classify one stream's events", |b| {
        b.iter(|| {
            for (event, data) in &events {
                let _ = black_box(classify_event(event.as_deref(), data));
            }
        })
    });
    // The same events through the `serde_json::Value` path alone: what the common-shape fast
    // path saves.
    group.bench_function("classify one stream's events, Value path only", |b| {
        b.iter(|| {
            for (event, data) in &events {
                let _ = black_box(classify_event_value(event.as_deref(), data));
            }
        })
    });
    group.finish();
}

fn token_counting(c: &mut Criterion) {
    // A contract-extraction-sized answer (~2 KB of JSON-ish prose).
    let answer = "{\"party_a\":\"Northwind Traders Ltd\",\"party_b\":\"Contoso plc\",\
                  \"payment_days\":45,\"renewal\":\"automatic, twelve months\",\
                  \"notice\":\"ninety days in writing\"} "
        .repeat(12);
    openbench_common::tokenizer::warm_up();
    let mut group = c.benchmark_group("tokens");
    group.throughput(Throughput::Bytes(answer.len() as u64));
    group.bench_function("count o200k_base tokens of a 2 KB answer", |b| {
        b.iter(|| {
            black_box(openbench_common::tokenizer::count_tokens(black_box(
                &answer,
            )))
        })
    });
    group.finish();
}

criterion_group!(benches, framing, token_counting);
criterion_main!(benches);
